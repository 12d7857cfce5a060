"""The tokens page (``/account/tokens/``, docs/console.md): one's own API tokens, with when each
was made and last used. Creating and revoking are the REST API's (``POST /api/v1/tokens``,
``DELETE /api/v1/tokens/{id}``), called by static/console/tokens.js; a new token's secret is
in the API's answer only, so the page shows it once and never again.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from poolweb.services.tokens import MAX_NAME, token_list


@login_required
@require_GET
def tokens_page(request: HttpRequest) -> HttpResponse:
    return render(request, "console/tokens.html", {"tokens": token_list(owner=request.user), "max_name": MAX_NAME,
                                                   "max_tokens": settings.POOLWEB["MAX_TOKENS_PER_USER"],
                                                   "origin": request.build_absolute_uri("/").rstrip("/")})
