"""Reading request bodies, for every endpoint.

DRF imports these classes from its settings while ``rest_framework.views`` is still loading, so
this module must not import that (nor poolweb.api.errors, which does)."""

from __future__ import annotations

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser

from poolweb.json_input import read_json


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "the request body is too large"
    default_code = "too_large"


def body_limit() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2_621_440


class BoundedJSONParser(JSONParser):
    """JSON with the guards DRF lacks: a body size limit (also without a Content-Length), and the
    bounds of ``poolweb.json_input`` (nesting, integers), refused as a 400 that names the field."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = body_limit()
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise PayloadTooLarge(f"the request body is larger than {limit} bytes")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = body.decode(encoding)
        except UnicodeDecodeError as error:
            raise exceptions.ParseError(f"JSON parse error - {error}") from None
        return read_json(text)  # JSONRefused: poolweb.api.errors makes it a 400
