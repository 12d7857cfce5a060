"""Requests API (docs/api.md §3): submit, list, detail, heartbeat, release, cancel.

Views are thin: read the input, call one service or selector, return the request object. The
submission body is read by ``api.submission.read_submission`` (paths and codes of its own);
the serializers below describe the shapes for the OpenAPI schema, and ``RequestSerializer``
writes the request object.

Choices where api.md is silent: the list is newest first, paged as every list is
(api/pagination.py); ``state`` takes one state or several separated by commas; an empty filter
value means no filter; another user's request answers 404, as a missing one does; a body above
DATA_UPLOAD_MAX_MEMORY_SIZE is a 413; a user with ``POOLWEB_MAX_PENDING_PER_USER`` pending
requests gets 429 for one more (a retried ``Idempotency-Key`` still returns its request:
``services.requests.submit`` says the order). A submission with ``owner`` is for that user, by an
account granted ``poolweb.submit_for_others`` (decision 131); ``api.request_batch`` takes many,
and ``api.request_actions`` heartbeats, releases or cancels many with this module's
``read_action_body`` and ``action_answer``. ``label=k=v`` filters by a label, by the
submission's label rules (decision 140).
"""

from __future__ import annotations

from dataclasses import replace

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from poolweb.api.errors import DetailSchema, ErrorsSchema, bad_request, echo
from poolweb.api.fields import QuantityInput
from poolweb.api.reads import CatchUpOnRead
from poolweb.api.representations import RequestSerializer
from poolweb.api.submission import (
    LEASE_BOUNDS, MAX_LABEL_VALUE, MAX_NAME, MAX_USERNAME, SubmissionBody, SubmissionInvalid, idempotency_key_errors,
    read_label_filter,
)
from poolweb.models import Request as RequestRow
from poolweb.selectors.requests import (
    FilterError, FiltersInvalid, RequestFilters, parse_filters, request_get, request_history, request_list,
)
from poolweb.services import requests as services
from poolweb.services.payloads import change_data, request_data
from reconcile import State
from reconcile.document import MAX_SECONDS, Issue
from reconcile.lifecycle import LEASE_SECONDS_DEFAULT
from reconcile.resource_settings import MEMORY_UNITS

TAG = "requests"
MAX_ATTEMPT = 32767  # Request.attempt is a small integer


# --- the submission body, for the schema ---------------------------------------------------------

class ResourceSettingsSchema(serializers.Serializer):
    gpu_count = QuantityInput(required=False, help_text="gpu; 0 removes gpu")
    cpu_count = QuantityInput(required=False, help_text="mcpu = ceil(cpu_count × 1000)")
    memory = serializers.RegexField(rf"^[0-9]+({'|'.join(MEMORY_UNITS)})$", required=False,
                                    help_text="memory_mb = ceil(bytes / 10^6)")
    pool_resources = serializers.DictField(child=QuantityInput(), required=False,
                                           help_text="other keys; the typed fields override the same keys")


class SubmitSchema(serializers.Serializer):
    policy = serializers.CharField(help_text="a policy listed on the profile")
    profile = serializers.CharField()
    resources = serializers.DictField(child=QuantityInput(), required=False,
                                      help_text="dynamic profiles only; the allotment gives the other keys")
    resource_settings = ResourceSettingsSchema(required=False, help_text="dynamic profiles only, not with resources")
    preemptible = serializers.BooleanField(required=False, default=True)
    max_retries = serializers.IntegerField(required=False, default=0, min_value=0, max_value=services.MAX_RETRIES)
    lease_seconds = serializers.IntegerField(required=False, default=LEASE_SECONDS_DEFAULT, min_value=LEASE_BOUNDS[0],
                                             max_value=LEASE_BOUNDS[1])
    max_runtime_seconds = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_SECONDS,
        help_text="its run limit (R-52): at the limit it ends, or is queued again where its policy says so")
    name = serializers.CharField(required=False, allow_blank=True, max_length=MAX_NAME)
    labels = serializers.DictField(child=serializers.CharField(max_length=MAX_LABEL_VALUE, allow_blank=True),
                                   required=False, help_text="at most 50; keys 1 to 63 characters")
    owner = serializers.CharField(required=False, max_length=MAX_USERNAME,
                                  help_text="a username: submit for that user; needs poolweb.submit_for_others")


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
    OpenApiParameter("label", str, many=True, description="key=value (the value may hold '='): requests with "
                     "that label; repeated, all must match"),
]


# --- reading query parameters --------------------------------------------------------------------

def read_filters(params) -> RequestFilters:
    """The list filters (``selectors.requests.parse_filters``, and ``label`` by the submission's
    label rules, ``api.submission.read_label_filter``); ``ValidationError`` naming the parameter
    for a value that cannot match."""
    errors: list[FilterError] = []
    try:
        filters = parse_filters(params)
    except FiltersInvalid as invalid:
        filters, errors = RequestFilters(), list(invalid.errors)
    labels, label_errors = read_label_filter(params.getlist("label"))
    errors += [FilterError(issue.path, issue.message, issue.code) for issue in label_errors]
    if errors:
        detail: dict[str, list] = {}
        for error in errors:
            detail.setdefault(error.field, []).append(exceptions.ErrorDetail(error.message, code=error.code))
        raise exceptions.ValidationError(detail)
    return replace(filters, labels=labels)


def refusal_response(refusal: services.Refusal) -> Response:
    """The answer to a refused submission (``PermissionDenied`` is DRF's 403)."""
    if isinstance(refusal, SubmissionInvalid):
        return bad_request(refusal.errors)
    if isinstance(refusal, services.OwnerUnknown):
        return bad_request([Issue("owner", "unknown_user", str(refusal))])
    if isinstance(refusal, services.TooManyPending):
        return Response({"detail": str(refusal)}, status=status.HTTP_429_TOO_MANY_REQUESTS)
    raise refusal  # a new kind of refusal needs its answer here


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
                              403: OpenApiResponse(DetailSchema, description="not in the policy's group, or "
                                                   "an owner given without poolweb.submit_for_others"),
                              429: OpenApiResponse(DetailSchema, description="too many pending requests")})
    def post(self, request):
        key = request.headers.get("Idempotency-Key")
        try:
            if key is not None and (errors := idempotency_key_errors(key)):
                raise SubmissionInvalid(errors)
            row, created = services.request_submit(user=request.user, submission=SubmissionBody(request),
                                                   idempotency_key=key)
        except services.Refusal as error:
            return refusal_response(error)
        headers = {"Location": f"{request.path.rstrip('/')}/{row.pk}"}
        return Response(request_data(row), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
                        headers=headers)


class RequestView(CatchUpOnRead, APIView):
    @extend_schema(tags=[TAG], operation_id="requests_retrieve", parameters=[ID],
                   responses={200: RequestSerializer, 404: NOT_FOUND})
    def get(self, request, id: int):
        row = request_get(user=request.user, request_id=id)
        if row is None:
            raise exceptions.NotFound(f"there is no request {echo(id)}")
        return Response(request_data(row))


class ChangeSchema(serializers.Serializer):
    at = serializers.DateTimeField()
    state = serializers.ChoiceField(choices=[s.value for s in State])
    reason = serializers.CharField(help_text="the reason code of the change (docs/scheduling.md §9)")
    message = serializers.CharField()
    attempt = serializers.IntegerField()
    pool = serializers.CharField(allow_null=True, help_text="where it holds or held capacity; null while queued")


class RequestHistoryView(APIView):
    @extend_schema(tags=[TAG], operation_id="requests_history", parameters=[ID],
                   responses={200: ChangeSchema(many=True), 404: NOT_FOUND},
                   description="Every change of the request's state, oldest first.")
    def get(self, request, id: int):
        changes = request_history(user=request.user, request_id=id)
        if changes is None:
            raise exceptions.NotFound(f"there is no request {echo(id)}")
        return Response([change_data(change) for change in changes])


class AttemptBody(serializers.Serializer):
    attempt = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ATTEMPT,
                                       help_text="the attempt this call is about; another attempt is left alone")


def read_action_body(data, *, takes_attempt: bool = True) -> dict:
    """The optional body of an action: ``{"attempt": n}`` or nothing for heartbeat and release,
    nothing for cancel (decision 9); ``ValidationError`` naming the field. ``/requests/actions``
    reads each item but its ``id`` as this body."""
    if not data:
        return {}
    if not isinstance(data, dict):
        raise exceptions.ValidationError({"": ["the body is a JSON object such as {\"attempt\": 2}, or empty"
                                               if takes_attempt else "this action takes no body"]})
    has = "the body has only attempt" if takes_attempt else "cancel takes no body and no attempt"
    unknown = [field for field in data if field != "attempt" or not takes_attempt]
    if unknown:
        raise exceptions.ValidationError({str(unknown[0])[:64]: [exceptions.ErrorDetail(
            f"is not a field: {has}", code="unknown_field")]})
    value = data.get("attempt")
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ATTEMPT:
        raise exceptions.ValidationError({"attempt": [exceptions.ErrorDetail(
            f"attempt is an integer between 1 and {MAX_ATTEMPT}", code="invalid")]})
    return {"attempt": value}


def action_answer(outcome: RequestRow | services.ActionRefused, request_id: int) -> Response:
    """What ``POST /requests/{id}/<action>`` answers for what its service did (or why not)."""
    if isinstance(outcome, services.RequestNotFound):
        return Response({"detail": f"there is no request {echo(request_id)}"}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(outcome, (services.RequestNotLive, services.RequestConflict)):
        return Response({"detail": str(outcome)}, status=status.HTTP_409_CONFLICT)
    if isinstance(outcome, services.ActionRefused):
        raise outcome  # a new kind of refusal needs its answer here
    return Response(request_data(outcome))


class RequestActionView(APIView):
    """POST /requests/{id}/<action>: one service call on one request, the request object back."""

    service = staticmethod(services.request_heartbeat)
    takes_attempt = True

    def act(self, request, id: int) -> Response:
        options = read_action_body(request.data, takes_attempt=self.takes_attempt)
        try:
            return action_answer(self.service(user=request.user, request_id=id, **options), id)
        except services.ActionRefused as refusal:
            return action_answer(refusal, id)


def _action_view(action: str, service, description: str, takes_attempt: bool = True):
    """A view class per action, so each has its own documented ``post``."""

    @extend_schema(tags=[TAG], operation_id=f"requests_{action}", parameters=[ID],
                   request=AttemptBody if takes_attempt else None, description=description,
                   responses={200: RequestSerializer, 400: BAD_REQUEST, 404: NOT_FOUND, 409: NOT_LIVE})
    def post(self, request, id: int) -> Response:
        return self.act(request, id)

    view = type(f"Request{action.title()}View", (RequestActionView,),
                {"service": staticmethod(service), "post": post, "takes_attempt": takes_attempt})
    return view.as_view()


HEARTBEAT = ("Renew the lease (R-50); 409 unless live. With a body {\"attempt\": n}, 409 also when that "
             "attempt is over (the request was evicted and queued again).")
RELEASE = ("Done, or acknowledging preemption (R-51); idempotent. A queued request is left alone, and with "
           "{\"attempt\": n} so is a request that moved on to a later attempt.")
CANCEL = "Withdraw (R-51); idempotent."

urlpatterns = [
    path("requests", RequestCollectionView.as_view(), name="request-list"),
    path("requests/<int:id>", RequestView.as_view(), name="request-detail"),
    path("requests/<int:id>/history", RequestHistoryView.as_view(), name="request-history"),
    path("requests/<int:id>/heartbeat", _action_view("heartbeat", services.request_heartbeat, HEARTBEAT),
         name="request-heartbeat"),
    path("requests/<int:id>/release", _action_view("release", services.request_release, RELEASE),
         name="request-release"),
    path("requests/<int:id>/cancel", _action_view("cancel", services.request_cancel, CANCEL, takes_attempt=False),
         name="request-cancel"),
]
