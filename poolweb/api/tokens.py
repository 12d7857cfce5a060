"""Tokens API (docs/api.md §5): the caller's API tokens — list them, create
one (its secret shown once, in the answer), revoke one (admins: anyone's).

Choices where api.md is silent: the list is paginated like every list, newest first, and has
only the caller's tokens, admins' too (all tokens are in the Django admin); a ``name`` is
required, 1 to 100 characters; another user's token answers 404 to a non-admin, as a missing one.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from poolweb.api.errors import DetailSchema, ErrorsSchema, echo
from poolweb.api.fields import StrictBody, StrictCharField
from poolweb.models import ApiToken
from poolweb.services import tokens as services
from poolweb.services.payloads import api_time
from poolweb.services.validation import storable

TAG = "tokens"


class TokenSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, row: ApiToken) -> dict:
        return token_data(row)


class CreatedTokenSchema(TokenSerializer):
    token = serializers.CharField(help_text="the secret, for `Authorization: Bearer <token>`: shown this once")


class TokenInput(StrictBody):
    name = StrictCharField(max_length=services.MAX_NAME, help_text='what you call it, e.g. "laptop" or "ci"')

    def validate_name(self, name: str) -> str:
        if not storable(name) or not name.isprintable():
            raise serializers.ValidationError("a name has no control characters", code="invalid_character")
        return name


class TokenCapReached(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "too_many_tokens"


def token_data(row: ApiToken) -> dict:
    return {"id": row.pk, "name": row.name, "created_at": api_time(row.created_at),
            "last_used_at": api_time(row.last_used_at)}


class TokenCollectionView(GenericAPIView):
    serializer_class = TokenSerializer
    queryset = ApiToken.objects.none()  # for the schema; reads go through the service

    @extend_schema(tags=[TAG], operation_id="tokens_list", responses={200: TokenSerializer(many=True)},
                   summary="Your API tokens, newest first (never their secrets)")
    def get(self, request):
        page = self.paginate_queryset(services.token_list(owner=request.user))
        return self.get_paginated_response([token_data(row) for row in page])

    @extend_schema(tags=[TAG], operation_id="tokens_create", request=TokenInput,
                   responses={201: CreatedTokenSchema, 400: OpenApiResponse(ErrorsSchema, description="a bad name"),
                              409: OpenApiResponse(DetailSchema, description="you have the most tokens one may have")},
                   summary="A new API token for you; its secret is in the answer, and only there")
    def post(self, request):
        body = TokenInput(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            row, secret = services.token_create(user=request.user, name=body.validated_data["name"])
        except services.TooManyTokens as error:
            raise TokenCapReached(str(error)) from None
        return Response({**token_data(row), "token": secret}, status=status.HTTP_201_CREATED,
                        headers={"Location": f"{request.path.rstrip('/')}/{row.pk}"})


class TokenView(APIView):
    @extend_schema(tags=[TAG], operation_id="tokens_destroy", parameters=[OpenApiParameter("id", int, "path")],
                   responses={204: None, 404: OpenApiResponse(DetailSchema, description="no such token of yours")},
                   summary="Revoke a token (admins: anyone's); it stops working at once, open streams included")
    def delete(self, request, id: int):
        try:
            services.token_revoke(user=request.user, token_id=id)
        except services.TokenNotFound:
            raise exceptions.NotFound(f"there is no token {echo(id)}") from None
        return Response(status=status.HTTP_204_NO_CONTENT)


urlpatterns = [
    path("tokens", TokenCollectionView.as_view(), name="tokens"),
    path("tokens/<int:id>", TokenView.as_view(), name="token"),
]
