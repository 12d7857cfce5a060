"""Configuration API (docs/api.md §2, admin only): the live document, the draft and its validation,
preview and provision, versions and restore, the management switch.

Views are thin: read the body, call one service, return its result. The document is judged by
the engine (``parse_document``), not by DRF serializers, so the error paths are the engine's;
the serializers below describe the shapes for the OpenAPI schema, and validate the two small
bodies (provision's comment, the management switch).
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response

from poolweb.api.admin_only import BAD_REQUEST, NO_DRAFT, TAG, AdminView
from poolweb.api.errors import DetailSchema, IssueSchema, VerdictSchema, issue_data
from poolweb.api.fields import QuantityInput, StrictBody, StrictBooleanField, StrictCharField
from poolweb.api.preview import DraftPreviewView
from poolweb.api.versions import BASE_VERSION, STALE, base_version_param, stale_response
from poolweb.selectors import versions as selectors
from poolweb.services import config as services
from poolweb.services.draft_base import DraftStale



# Schema: the configuration document (docs/api.md §1).


def _text(**kwargs) -> serializers.CharField:
    return serializers.CharField(required=False, allow_blank=True, **kwargs)


class PoolDocument(serializers.Serializer):
    name = _text(help_text="^[a-z0-9][a-z0-9_.-]{0,62}$, unique among pools (required)")
    description = _text(max_length=1000)
    capacity = serializers.DictField(child=QuantityInput(), required=False)
    execution_order = serializers.ListField(child=serializers.CharField(), required=False,
                                            help_text="connected profiles, served first to last")
    labels = serializers.DictField(child=serializers.CharField(max_length=200, allow_blank=True), required=False,
                                   help_text="key → text, at most 20; slurm_partition: the Slurm partition it is")


class ConnectionDocument(serializers.Serializer):
    pool = _text(help_text="a pool's name (required)")
    name = _text(max_length=100, help_text="display name; defaults to the pool's name")


class ProfileDocument(serializers.Serializer):
    name = _text(help_text="unique among profiles (required)")
    description = _text(max_length=1000)
    resources = serializers.DictField(child=QuantityInput(), required=False)
    dynamic = serializers.BooleanField(required=False)
    connections = ConnectionDocument(many=True, required=False, help_text="pool precedence; at least one")
    policies = serializers.ListField(child=serializers.CharField(), required=False, help_text="policy rank")


class QuotaDocument(serializers.Serializer):
    scope = _text(help_text='"*" (default) or a pool name')
    key = _text(help_text="a resource key (required)")
    reserved = QuantityInput(required=False)
    limit = QuantityInput(required=False)


class PolicyDocument(serializers.Serializer):
    name = _text(help_text="unique among policies (required)")
    description = _text(max_length=1000)
    group = _text(max_length=150, help_text="the user group whose members may submit")
    priority = serializers.IntegerField(required=False, min_value=-1_000_000, max_value=1_000_000)
    quotas = QuotaDocument(many=True, required=False)


class DraftDocument(serializers.Serializer):
    pools = PoolDocument(many=True)
    profiles = ProfileDocument(many=True)
    policies = PolicyDocument(many=True)


class ConfigDocument(DraftDocument):
    version = serializers.IntegerField(read_only=True, help_text="0 before the first provision")


class ValidationSchema(VerdictSchema):
    warnings = IssueSchema(many=True)


class VersionSummary(serializers.Serializer):
    version = serializers.IntegerField(source="number")
    number = serializers.IntegerField(help_text="the same as version")
    author = serializers.CharField(source="author_label", allow_null=True,
                                   help_text="the account that provisioned it, or who ran the command line")
    created_at = serializers.DateTimeField()
    comment = serializers.CharField()
    summary = serializers.CharField(help_text="what it changed against the version before it, in one line")


class ProvisionResult(serializers.Serializer):
    version = serializers.IntegerField()


class ProvisionInput(StrictBody):
    comment = StrictCharField(required=False, allow_blank=True, trim_whitespace=False,
                              max_length=services.MAX_COMMENT, default="")
    confirm_stale = StrictBooleanField(required=False, default=False,
                                       help_text="provision even if the draft's base version is no longer live")


class ManagementState(StrictBody):
    enabled = StrictBooleanField()


NUMBER = OpenApiParameter("number", OpenApiTypes.INT, OpenApiParameter.PATH, description="the version number")
NO_VERSION = OpenApiResponse(DetailSchema, description="there is no such version")


# Views.


class ConfigView(AdminView):
    @extend_schema(tags=[TAG], operation_id="config_retrieve", responses={200: ConfigDocument},
                   summary="The provisioned configuration with its version (0 and empty before any)")
    def get(self, request):
        return Response(selectors.config_live_document())


class DraftView(AdminView):
    @extend_schema(tags=[TAG], operation_id="config_draft_retrieve", responses={200: DraftDocument, 404: NO_DRAFT},
                   summary="The saved draft, as it was written")
    def get(self, request):
        return Response(selectors.draft_get())

    @extend_schema(tags=[TAG], operation_id="config_draft_update", request=DraftDocument,
                   parameters=[BASE_VERSION], responses={200: DraftDocument, 400: BAD_REQUEST},
                   summary="Replace the draft; saved even when invalid, 400 only when malformed",
                   description="Malformed: not an object, wrong types, unreadable quantities, unknown fields, "
                               "over-long text. A semantically invalid draft (unknown references, a profile "
                               "without connection…) is saved; validate tells what provision would refuse.")
    def put(self, request):
        return Response(services.draft_save(document=request.data, user=request.user,
                                            base_version=base_version_param(request)))

    @extend_schema(tags=[TAG], operation_id="config_draft_destroy", responses={204: None},
                   summary="Discard the draft (idempotent)")
    def delete(self, request):
        services.draft_delete(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DraftValidateView(AdminView):
    @extend_schema(tags=[TAG], operation_id="config_draft_validate", request=None,
                   responses={200: ValidationSchema, 404: NO_DRAFT},
                   summary="Validate the draft; changes nothing",
                   description="Errors include R-57 refusals (path pools, profiles or policies, code "
                               "removal_refused); warnings include group_missing and group_empty.")
    def post(self, request):
        checked = services.draft_validate()
        return Response({"valid": checked.valid, "errors": [issue_data(e) for e in checked.errors],
                         "warnings": [issue_data(w) for w in checked.warnings]})


class DraftProvisionView(AdminView):
    @extend_schema(tags=[TAG], operation_id="config_draft_provision", request=ProvisionInput,
                   responses={200: ProvisionResult, 400: BAD_REQUEST, 404: NO_DRAFT, 409: STALE},
                   summary="Validate and publish the draft as the next version, then discard the draft")
    def post(self, request):
        body = ProvisionInput(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            version = services.draft_provision(user=request.user, comment=body.validated_data["comment"],
                                               confirm_stale=body.validated_data["confirm_stale"])
        except DraftStale as stale:
            return stale_response(stale)
        except services.DraftChanged as changed:
            return Response({"detail": str(changed), "code": "draft_changed"}, status=status.HTTP_409_CONFLICT)
        except services.DraftUnchanged as unchanged:
            return Response({"detail": str(unchanged), "code": "no_changes", "live_version": unchanged.live_version},
                            status=status.HTTP_409_CONFLICT)
        return Response({"version": version.number})


class VersionListView(generics.ListAPIView):
    permission_classes = [IsAdminUser]
    serializer_class = VersionSummary

    def get_queryset(self):
        return selectors.version_list()

    @extend_schema(tags=[TAG], operation_id="config_versions_list",
                   summary="Provisioned versions, newest first (limit/offset pagination)")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class VersionView(AdminView):
    @extend_schema(tags=[TAG], operation_id="config_versions_retrieve", parameters=[NUMBER],
                   responses={200: ConfigDocument, 404: NO_VERSION}, summary="One version's document")
    def get(self, request, number: int):
        return Response(selectors.version_document(number))


class VersionRestoreView(AdminView):
    @extend_schema(tags=[TAG], operation_id="config_versions_restore", parameters=[NUMBER], request=None,
                   responses={200: DraftDocument, 404: NO_VERSION},
                   summary="Copy the version into the draft (rollback = restore + provision)")
    def post(self, request, number: int):
        return Response(services.version_restore(number=number, user=request.user))


class ManagementView(AdminView):
    @extend_schema(tags=[TAG], operation_id="management_retrieve", responses={200: ManagementState},
                   summary="Whether the reconciler grants and preempts")
    def get(self, request):
        return Response({"enabled": selectors.management_enabled()})

    @extend_schema(tags=[TAG], operation_id="management_update", request=ManagementState,
                   responses={200: ManagementState, 400: BAD_REQUEST},
                   summary="Switch management on or off (enabled is a JSON boolean)")
    def put(self, request):
        body = ManagementState(data=request.data)
        body.is_valid(raise_exception=True)
        enabled = services.management_set(enabled=body.validated_data["enabled"], user=request.user)
        return Response({"enabled": enabled})


urlpatterns = [
    path("config", ConfigView.as_view(), name="config"),
    path("config/draft", DraftView.as_view(), name="config-draft"),
    path("config/draft/validate", DraftValidateView.as_view(), name="config-draft-validate"),
    path("config/draft/preview", DraftPreviewView.as_view(), name="config-draft-preview"),
    path("config/draft/provision", DraftProvisionView.as_view(), name="config-draft-provision"),
    path("config/versions", VersionListView.as_view(), name="config-versions"),
    path("config/versions/<int:number>", VersionView.as_view(), name="config-version"),
    path("config/versions/<int:number>/restore", VersionRestoreView.as_view(), name="config-version-restore"),
    path("management", ManagementView.as_view(), name="management"),
]
