"""The audit log (docs/api.md §5, decision 158): ``GET /audit``, admins only, newest first,
filtered by ``selectors.audit.parse_audit_filters`` (a value that cannot match is a 400 naming
its parameter) and paged as every list is."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import IsAdminUser

from poolweb.api.errors import ErrorsSchema
from poolweb.models import AuditEntry
from poolweb.selectors.audit import ACTIONS, FiltersInvalid, audit_list, parse_audit_filters
from poolweb.services.audit import entry_data

TAG = "audit"
FILTERS = [
    OpenApiParameter("actor", str, description="a username, or a command line's user@host"),
    OpenApiParameter("action", str, enum=list(ACTIONS)),
    OpenApiParameter("object", str, description="what was acted on: version:7, token:<prefix>, user:<name>, "
                     "request:<id> (batches listing it too), management, draft"),
    OpenApiParameter("request", int, description="entries about this request, batches included"),
    OpenApiParameter("since", str, description="ISO 8601, inclusive (UTC without an offset)"),
    OpenApiParameter("until", str, description="ISO 8601, exclusive"),
]


class AuditEntrySchema(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor = serializers.CharField(help_text="the username then, or a command line's user@host")
    actor_id = serializers.IntegerField(allow_null=True, help_text="the account's id; null for no account")
    origin = serializers.CharField(help_text="the client's address, or manage.py")
    action = serializers.ChoiceField(choices=list(ACTIONS))
    object = serializers.CharField()
    before = serializers.CharField()
    after = serializers.CharField()
    request_ids = serializers.ListField(child=serializers.IntegerField())
    detail = serializers.DictField()


class AuditView(GenericAPIView):
    permission_classes = [IsAdminUser]
    serializer_class = AuditEntrySchema
    queryset = AuditEntry.objects.none()  # for the schema; reads go through the selector

    @extend_schema(tags=[TAG], operation_id="audit_list", parameters=FILTERS,
                   responses={200: AuditEntrySchema(many=True),
                              400: OpenApiResponse(ErrorsSchema, description="a filter that cannot match")},
                   summary="The audit log, newest first (admins)")
    def get(self, request):
        try:
            filters = parse_audit_filters(request.query_params)
        except FiltersInvalid as invalid:
            detail: dict[str, list] = {}
            for error in invalid.errors:
                detail.setdefault(error.field, []).append(exceptions.ErrorDetail(error.message, code=error.code))
            raise exceptions.ValidationError(detail) from None
        page = self.paginate_queryset(audit_list(filters))
        return self.get_paginated_response([entry_data(row) for row in page])


urlpatterns = [path("audit", AuditView.as_view(), name="audit")]
