"""``GET /api/v1/me``: who the caller is — the account a token or session signs in, whether it is an
admin, and its groups (the teams whose policies it may submit to). poolctl's ``login`` says so."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView


class MeView(APIView):
    @extend_schema(tags=["index"], operation_id="me", summary="Who you are signed in as",
                   responses={200: inline_serializer("Me", {
                       "username": serializers.CharField(),
                       "is_admin": serializers.BooleanField(),
                       "groups": serializers.ListField(child=serializers.CharField(), help_text="by name")})})
    def get(self, request):
        user = request.user
        return Response({"username": user.get_username(), "is_admin": user.is_staff,
                         "groups": sorted(user.groups.values_list("name", flat=True))})


urlpatterns = [path("me", MeView.as_view(), name="me")]
