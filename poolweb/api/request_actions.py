"""``POST /requests/actions`` (docs/api.md §3): heartbeat, release or cancel up to ``MAX_ITEMS``
requests in one call, for a bridge that keeps many jobs' requests alive and gives them back
(docs/slurm.md) without a round trip per job (decision 141).

``{"action": "release", "requests": [{"id": 7, "attempt": 2}, {"id": 8}]}``: each item is the
single call ``POST /requests/{id}/<action>`` with the item but its ``id`` as its body, decided by
that call's rule, all in one transaction (``services.request_batches.request_act_many``, decision
136), and answered in item order with the status and body that call would have answered. The envelope alone is
refused whole: 400 naming the field, nothing done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from poolweb.api.batch_envelope import MAX_ITEMS, envelope_errors, in_item_order
from poolweb.api.errors import IssueSchema, bad_request, flatten
from poolweb.api.representations import RequestSerializer
from poolweb.api.requests import BAD_REQUEST, MAX_ATTEMPT, TAG, action_answer, read_action_body
from poolweb.services import request_batches as batches
from poolweb.services.request_acts import ACTIONS
from reconcile.document import Issue


class ActionItemSchema(serializers.Serializer):
    id = serializers.IntegerField(min_value=1, help_text="the request's id")
    attempt = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ATTEMPT,
                                       help_text="heartbeat and release only: as the body of the single call")


class ActionsSchema(serializers.Serializer):
    action = serializers.ChoiceField(choices=ACTIONS)
    requests = ActionItemSchema(many=True, help_text=f"at most {MAX_ITEMS}")


class ActionResultSchema(serializers.Serializer):
    status = serializers.ChoiceField(choices=[200, 400, 404, 409],
                                     help_text="what POST /requests/{id}/<action> would have answered this item")
    request = RequestSerializer(required=False, help_text="200: the request afterwards")
    errors = IssueSchema(many=True, required=False, help_text="400: what is wrong with the item's attempt")
    detail = serializers.CharField(required=False, help_text="404 and 409: why not")


class ActionResultsSchema(serializers.Serializer):
    results = ActionResultSchema(many=True, help_text="one per item, in item order")


def envelope_issues(data: Any) -> list[Issue]:
    """What is wrong with ``{"action", "requests": [{"id", …}, …]}`` itself, every error at once."""
    errors = envelope_errors(data, fields=("action", "requests"), items='objects {"id": …}')
    if not isinstance(data, Mapping):
        return errors
    if "action" not in data:
        errors.append(Issue("action", "required", f"action is required: one of {', '.join(ACTIONS)}"))
    elif data["action"] not in ACTIONS:
        errors.append(Issue("action", "invalid_choice", f"action is one of {', '.join(ACTIONS)}"))
    items = data.get("requests")
    for index, item in enumerate(items if isinstance(items, list) and len(items) <= MAX_ITEMS else ()):
        at = f"requests[{index}]"
        if not isinstance(item, Mapping):
            errors.append(Issue(at, "invalid_type", f'{at} is an object {{"id": …}}'))
        elif "id" not in item:
            errors.append(Issue(f"{at}.id", "required", "id is required: the request's id"))
        elif isinstance(item["id"], bool) or not isinstance(item["id"], int) or item["id"] < 1:
            errors.append(Issue(f"{at}.id", "invalid", "id is a request's id, an integer from 1"))
    return errors


def read_item(item: Mapping, action: str) -> batches.ActionItem | Response:
    """An item as the service takes it, or the 400 its single call would have answered its body."""
    try:
        body = read_action_body({key: value for key, value in item.items() if key != "id"},
                                takes_attempt=action != "cancel")
    except exceptions.ValidationError as error:
        return bad_request(flatten(error.detail))
    return batches.ActionItem(item["id"], **body)


def result_data(outcome: batches.ActionOutcome | Response, request_id: int) -> dict:
    """An item's answer: its status and the request, or why not."""
    answer = outcome if isinstance(outcome, Response) else action_answer(outcome, request_id)
    if answer.status_code == status.HTTP_200_OK:
        return {"status": answer.status_code, "request": answer.data}
    return {"status": answer.status_code, **answer.data}


class RequestActionsView(APIView):
    @extend_schema(tags=[TAG], operation_id="requests_actions", request=ActionsSchema,
                   responses={200: ActionResultsSchema, 400: BAD_REQUEST},
                   description=f"Heartbeat, release or cancel up to {MAX_ITEMS} requests; each item answered as "
                               "POST /requests/{id}/<action> would answer it, in item order. One pass follows "
                               "the releases and cancels, not one per item.")
    def post(self, request):
        if errors := envelope_issues(request.data):
            return bad_request(errors)
        action, data = request.data["action"], request.data["requests"]
        items = [read_item(item, action) for item in data]
        outcomes = in_item_order(items, batches.ActionItem, lambda valid: batches.request_act_many(
            user=request.user, action=action, items=valid))
        return Response({"results": [result_data(outcome, item["id"]) for outcome, item in zip(outcomes, data)]})


urlpatterns = [
    path("requests/actions", RequestActionsView.as_view(), name="request-actions"),
]
