"""Poolweb's URLs plus ``POST /bench/baseline``: the floor a submission is compared with.

The baseline is a bare Django view under the same server and settings: it authenticates the same
bearer token (one indexed SELECT of the token and its user) and inserts one row, in autocommit,
and answers a small JSON object. No DRF, no validation, no events, no pass. The row is a request
already ``rejected``, so no pass ever reads it.
"""

from __future__ import annotations

import hashlib

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from poolweb.models import ApiToken, Request as RequestRow
from poolweb.urls import urlpatterns as poolweb_urlpatterns


@csrf_exempt
def baseline(request: HttpRequest) -> JsonResponse:
    header = request.headers.get("Authorization", "")
    digest = hashlib.sha256(header.removeprefix("Bearer ").encode()).hexdigest()
    token = ApiToken.objects.select_related("user").filter(digest=digest).first()
    if token is None or not token.user.is_active:
        return JsonResponse({"detail": "the token is not valid"}, status=401)
    row = RequestRow.objects.create(owner=token.user, policy="bench", profile="bench", resources={"step_run": 1000},
                                    state="rejected", reason="NoConnectedPool", finished_at=timezone.now())
    return JsonResponse({"id": row.pk, "state": row.state}, status=201)


urlpatterns = [*poolweb_urlpatterns, path("bench/baseline", baseline)]
