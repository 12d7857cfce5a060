"""The base of the admin-only configuration views: the permission, and the configuration's
domain errors as HTTP (a refused document is a 400 listing every issue; no draft or no such
version, a 404)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions
from rest_framework.permissions import IsAdminUser
from rest_framework.views import APIView

from poolweb.api.errors import DetailSchema, ErrorsSchema, bad_request
from poolweb.selectors.versions import ConfigNotFound
from poolweb.services.config import ConfigInvalid

TAG = "configuration"
BAD_REQUEST = OpenApiResponse(ErrorsSchema, description="malformed input: every error with its path")
NO_DRAFT = OpenApiResponse(DetailSchema, description="there is no draft")


class AdminView(APIView):
    permission_classes = [IsAdminUser]

    def handle_exception(self, exc):
        if isinstance(exc, ConfigInvalid):
            return bad_request(exc.errors)
        if isinstance(exc, ConfigNotFound):
            exc = exceptions.NotFound(str(exc))
        return super().handle_exception(exc)
