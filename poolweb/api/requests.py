"""Requests API (api.md §2 "Requests"): submit, list, detail, heartbeat, release, cancel.

Views are thin: read the input, call one service or selector, return the request object. The
submission body is judged by ``services.requests.read_submission`` (paths and codes of its own);
the serializers below describe the shapes for the OpenAPI schema, and ``RequestSerializer``
writes the request object.

Choices where api.md is silent: the list is newest first; ``limit`` is 1…1000 (larger values are
cut to 1000), ``offset`` ≥ 0; ``state`` takes one state or several separated by commas; an empty
filter value means no filter; another user's request answers 404, as a missing one does; a body
above DATA_UPLOAD_MAX_MEMORY_SIZE is a 413.
"""

from __future__ import annotations

import re

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from poolweb.api.errors import DetailSchema, ErrorsSchema, bad_request
from poolweb.api.reads import CatchUpOnRead
from poolweb.api.representations import RequestSerializer, request_data
from poolweb.models import Request as RequestRow
from poolweb.selectors.requests import RequestFilters, request_get, request_list
from poolweb.services import requests as services
from reconcile import State

TAG = "requests"
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")  # policies, profiles, pools (matched whole)
USERNAME_PATTERN = re.compile(r"[\w.@+-]{1,150}")  # Django's username validator
NUMBER_PATTERN = re.compile(r"[0-9]{1,18}")


# --- the submission body, for the schema ---------------------------------------------------------

@extend_schema_field({"oneOf": [{"type": "number", "minimum": 0, "maximum": 1e12},
                                {"type": "string", "pattern": r"^[0-9]+(\.[0-9]{1,3})?$"}]})
class QuantityField(serializers.Field):
    pass


class ResourceSettingsSchema(serializers.Serializer):
    gpu_count = QuantityField(required=False, help_text="gpu; 0 removes gpu")
    cpu_count = QuantityField(required=False, help_text="mcpu = ceil(cpu_count × 1000)")
    memory = serializers.RegexField(r"^[0-9]+(KB|MB|GB|TB|PB|KiB|MiB|GiB|TiB|PiB)$", required=False,
                                    help_text="memory_mb = ceil(bytes / 10^6)")
    pool_resources = serializers.DictField(child=QuantityField(), required=False,
                                           help_text="other keys; the typed fields override the same keys")


class SubmitSchema(serializers.Serializer):
    policy = serializers.CharField(help_text="a policy listed on the profile")
    profile = serializers.CharField()
    resources = serializers.DictField(child=QuantityField(), required=False,
                                      help_text="dynamic profiles only; the allotment gives the other keys")
    resource_settings = ResourceSettingsSchema(required=False, help_text="dynamic profiles only, not with resources")
    preemptible = serializers.BooleanField(required=False, default=True)
    max_retries = serializers.IntegerField(required=False, default=0, min_value=0, max_value=services.MAX_RETRIES)
    lease_seconds = serializers.IntegerField(required=False, default=300, min_value=10, max_value=86400)
    name = serializers.CharField(required=False, allow_blank=True, max_length=services.MAX_NAME)
    labels = serializers.DictField(child=serializers.CharField(max_length=services.MAX_LABEL_VALUE, allow_blank=True),
                                   required=False, help_text="at most 50; keys 1 to 63 characters")


BAD_REQUEST = OpenApiResponse(ErrorsSchema, description="malformed input: every error with its path")
NOT_FOUND = OpenApiResponse(DetailSchema, description="no such request, or another user's")
NOT_LIVE = OpenApiResponse(DetailSchema, description="the request holds no capacity, or changed meanwhile")
ID = OpenApiParameter("id", int, OpenApiParameter.PATH)
IDEMPOTENCY_KEY = OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER,
                                   description="a retry with the same key returns the first request (200)")
FILTERS = [
    OpenApiParameter("state", str, description="one or more states, separated by commas",
                     enum=None, pattern=r"^[a-z,]*$"),
    OpenApiParameter("policy", str), OpenApiParameter("profile", str), OpenApiParameter("pool", str),
    OpenApiParameter("owner", str, description="a username"),
]


# --- reading query parameters --------------------------------------------------------------------

def read_filters(params) -> RequestFilters:
    """The list filters; ``ValidationError`` naming the parameter for a value that cannot match."""
    errors, values = {}, {}
    for field in ("policy", "profile", "pool", "owner"):
        value = params.get(field) or None
        pattern = USERNAME_PATTERN if field == "owner" else NAME_PATTERN
        if value is not None and not pattern.fullmatch(value):
            errors[field] = [exceptions.ErrorDetail(f"{field} is not a valid name", code="invalid_name")]
        values[field] = value
    states = params.get("state") or None
    if states is not None:
        states = states.split(",")
        unknown = [s for s in states if s not in State.__members__.values()]
        if unknown:
            errors["state"] = [exceptions.ErrorDetail(
                f"{unknown[0][:40]!r} is not a state: use {', '.join(s.value for s in State)}", code="invalid_choice")]
    for field in ("limit", "offset"):
        value = params.get(field)
        if value is not None and not (NUMBER_PATTERN.fullmatch(value) and (field == "offset" or int(value) >= 1)):
            low = 1 if field == "limit" else 0
            errors[field] = [exceptions.ErrorDetail(f"{field} must be an integer ≥ {low}", code="invalid")]
    if errors:
        raise exceptions.ValidationError(errors)
    return RequestFilters(states=states, **values)


# --- views -----------------------------------------------------------------------------------------

class RequestCollectionView(CatchUpOnRead, GenericAPIView):
    serializer_class = RequestSerializer
    queryset = RequestRow.objects.none()  # for the schema; reads go through the selector

    @extend_schema(tags=[TAG], operation_id="requests_list", parameters=FILTERS,
                   responses={200: RequestSerializer(many=True), 400: BAD_REQUEST},
                   description="Your requests (admins: everyone's), newest first.")
    def get(self, request):
        filters = read_filters(request.query_params)
        page = self.paginate_queryset(request_list(user=request.user, filters=filters))
        return self.get_paginated_response([request_data(row) for row in page])

    @extend_schema(tags=[TAG], operation_id="requests_create", request=SubmitSchema,
                   parameters=[IDEMPOTENCY_KEY],
                   responses={201: RequestSerializer, 200: RequestSerializer, 400: BAD_REQUEST,
                              403: OpenApiResponse(DetailSchema, description="not in the policy's group")})
    def post(self, request):
        key = request.headers.get("Idempotency-Key")
        try:
            row, created = services.request_submit(user=request.user, data=request.data, idempotency_key=key)
        except services.RequestInputError as error:
            return bad_request(error.errors)
        headers = {"Location": f"{request.path.rstrip('/')}/{row.pk}"}
        return Response(request_data(row), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
                        headers=headers)


class RequestView(CatchUpOnRead, APIView):
    @extend_schema(tags=[TAG], operation_id="requests_retrieve", parameters=[ID],
                   responses={200: RequestSerializer, 404: NOT_FOUND})
    def get(self, request, id: int):
        row = request_get(user=request.user, request_id=id)
        if row is None:
            raise exceptions.NotFound(f"there is no request {id}")
        return Response(request_data(row))


class RequestActionView(APIView):
    """POST /requests/{id}/<action>: one service call on one request, the request object back."""

    service = staticmethod(services.request_heartbeat)

    def act(self, request, id: int) -> Response:
        try:
            row = self.service(user=request.user, request_id=id)
        except services.RequestNotFound as error:
            raise exceptions.NotFound(str(error)) from None
        except (services.RequestNotLive, services.RequestConflict) as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        return Response(request_data(row))


def _action_view(action: str, service, description: str):
    """A view class per action, so each has its own documented ``post``."""

    @extend_schema(tags=[TAG], operation_id=f"requests_{action}", parameters=[ID], request=None,
                   description=description, responses={200: RequestSerializer, 404: NOT_FOUND, 409: NOT_LIVE})
    def post(self, request, id: int) -> Response:
        return self.act(request, id)

    view = type(f"Request{action.title()}View", (RequestActionView,), {"service": staticmethod(service), "post": post})
    return view.as_view()


HEARTBEAT = "Renew the lease (R-50); 409 unless live."
RELEASE = "Done, or acknowledging preemption (R-51); idempotent."
CANCEL = "Withdraw (R-51); idempotent."

urlpatterns = [
    path("requests", RequestCollectionView.as_view(), name="request-list"),
    path("requests/<int:id>", RequestView.as_view(), name="request-detail"),
    path("requests/<int:id>/heartbeat", _action_view("heartbeat", services.request_heartbeat, HEARTBEAT),
         name="request-heartbeat"),
    path("requests/<int:id>/release", _action_view("release", services.request_release, RELEASE),
         name="request-release"),
    path("requests/<int:id>/cancel", _action_view("cancel", services.request_cancel, CANCEL), name="request-cancel"),
]
