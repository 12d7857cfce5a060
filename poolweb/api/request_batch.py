"""``POST /requests/batch`` (docs/api.md §3): up to ``MAX_ITEMS`` submissions in one call, for a
bridge that registers a burst of jobs (docs/slurm.md) without a round trip per job.

Each item is what ``POST /requests`` takes, plus its own ``idempotency_key``; each is its own
decision, and those that pass are stored in one transaction
(``services.request_batches.request_submit_batch``, decision 135), answered in item order with the
status ``POST /requests`` would have answered it. The envelope alone is
refused whole: 400 naming the field (``api.batch_envelope``, shared with ``/requests/actions``).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from poolweb.api.batch_envelope import MAX_ITEMS, envelope_errors, in_item_order
from poolweb.api.errors import IssueSchema, bad_request
from poolweb.api.representations import RequestSerializer
from poolweb.api.requests import BAD_REQUEST, TAG, SubmitSchema, refusal_response
from poolweb.api.submission import MAX_IDEMPOTENCY_KEY, SubmissionInvalid, SubmissionItem, item_key
from poolweb.services import request_batches as batches
from poolweb.services.payloads import request_data


class ItemSchema(SubmitSchema):
    idempotency_key = serializers.CharField(required=False, min_length=1, max_length=MAX_IDEMPOTENCY_KEY,
                                            help_text="as the Idempotency-Key header of POST /requests")


class BatchSchema(serializers.Serializer):
    requests = ItemSchema(many=True, help_text=f"at most {MAX_ITEMS}")


class ResultSchema(serializers.Serializer):
    status = serializers.ChoiceField(choices=[200, 201, 400, 403, 429],
                                     help_text="what POST /requests would have answered this item")
    request = RequestSerializer(required=False, help_text="201 and 200: the request")
    errors = IssueSchema(many=True, required=False, help_text="400: every error of the item, with its path")
    detail = serializers.CharField(required=False, help_text="403 and 429: why not")


class ResultsSchema(serializers.Serializer):
    results = ResultSchema(many=True, help_text="one per item, in item order")


def read_items(data: Any) -> list[Any]:
    """The envelope ``{"requests": [...]}``'s items; ``SubmissionInvalid`` naming the field."""
    if errors := envelope_errors(data, fields=("requests",), items="submissions"):
        raise SubmissionInvalid(errors)
    return data["requests"]


def result_data(outcome: batches.Outcome) -> dict:
    """An item's answer: its status and the request, or why not."""
    if isinstance(outcome, tuple):
        row, created = outcome
        return {"status": status.HTTP_201_CREATED if created else status.HTTP_200_OK, "request": request_data(row)}
    if isinstance(outcome, PermissionDenied):
        return {"status": status.HTTP_403_FORBIDDEN, "detail": str(outcome)}
    answer = refusal_response(outcome)
    return {"status": answer.status_code, **answer.data}


class RequestBatchView(APIView):
    @extend_schema(tags=[TAG], operation_id="requests_batch", request=BatchSchema,
                   responses={200: ResultsSchema, 400: BAD_REQUEST},
                   description=f"Submit up to {MAX_ITEMS} requests; each item answered as POST /requests "
                               "would answer it, in item order. One pass follows, not one per item.")
    def post(self, request):
        try:
            data = read_items(request.data)
        except SubmissionInvalid as error:
            return bad_request(error.errors)
        items: list[batches.BatchItem | SubmissionInvalid] = []
        for item in data:
            try:
                items.append(batches.BatchItem(SubmissionItem(item), item_key(item)))
            except SubmissionInvalid as error:
                items.append(error)
        outcomes = in_item_order(items, batches.BatchItem,
                                 lambda valid: batches.request_submit_batch(user=request.user, items=valid))
        return Response({"results": [result_data(outcome) for outcome in outcomes]})


urlpatterns = [
    path("requests/batch", RequestBatchView.as_view(), name="request-batch"),
]
