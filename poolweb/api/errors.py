"""Every error the API returns is JSON that names the field; nothing becomes a 500.

DRF's validation errors become ``{"errors": [{"path", "code", "message"}]}`` (the shape of api.md
§1); other API exceptions keep DRF's ``{"detail": …}`` with their status.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from poolweb.api.parsers import PayloadTooLarge
from poolweb.json_input import JSONRefused
from poolweb.sql import busy_message
from reconcile.document import Issue


ECHO = 40  # characters of a caller's value a message repeats
BUSY_RETRY_SECONDS = 1  # a lock not free in time (sql.busy_message): its holder is likely done soon


def echo(value: object) -> str:
    """A caller's value (a path's name or id) as a message repeats it: cut, so a 5,000-character
    name is not sent back whole."""
    text = str(value)
    return text if len(text) <= ECHO else text[:ECHO] + "…"


def flatten(detail, path: str = "") -> list[Issue]:
    """DRF's nested error detail → a flat list of issues."""
    if isinstance(detail, dict):
        found = []
        for field, inner in detail.items():
            child = path if field == "non_field_errors" else (f"{path}.{field}" if path else str(field))
            found += flatten(inner, child)
        return found
    if isinstance(detail, list):
        if all(isinstance(item, exceptions.ErrorDetail) or isinstance(item, str) for item in detail):
            return [_issue(path, item) for item in detail]
        found = []
        for index, inner in enumerate(detail):
            found += flatten(inner, f"{path}[{index}]")
        return found
    return [_issue(path, detail)]


def _issue(path: str, item) -> Issue:
    return Issue(path, getattr(item, "code", "invalid"), str(item))


def issue_data(issue: Issue) -> dict:
    return {"path": issue.path, "code": issue.code, "message": issue.message}


def bad_request(errors: list[Issue]) -> Response:
    """400 ``{"errors": [{path, code, message}, …]}``, the shape of docs/api.md §1."""
    return Response({"errors": [issue_data(e) for e in errors]}, status=status.HTTP_400_BAD_REQUEST)


def exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge(f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")
    if isinstance(exc, JSONRefused):
        return bad_request([exc.issue])
    if isinstance(exc, exceptions.ParseError):
        return bad_request([Issue("", "malformed_json", str(exc.detail))])
    if isinstance(exc, exceptions.ValidationError):
        return bad_request(flatten(exc.detail))
    if (busy := busy_message(exc)) is not None:
        return Response({"detail": busy, "code": "busy"}, status=status.HTTP_503_SERVICE_UNAVAILABLE,
                        headers={"Retry-After": str(BUSY_RETRY_SECONDS)})
    return drf_exception_handler(exc, context)


# The shapes above, for the OpenAPI schema.


class IssueSchema(serializers.Serializer):
    path = serializers.CharField()
    code = serializers.CharField()
    message = serializers.CharField()


class ErrorsSchema(serializers.Serializer):
    errors = IssueSchema(many=True)


class VerdictSchema(serializers.Serializer):
    """Whether a draft could be provisioned, and why not."""

    valid = serializers.BooleanField()
    errors = IssueSchema(many=True)


class DetailSchema(serializers.Serializer):
    detail = serializers.CharField()
