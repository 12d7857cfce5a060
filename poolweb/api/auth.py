"""Bearer tokens in DRF: ``Authorization: Bearer <token>`` (services/tokens.py keeps them).

The scheme is case-insensitive (RFC 9110 §11.1): ``bearer`` works too. A wrong token counts
against the caller's address (services/signin.py): past the allowance it is answered 429 with
``Retry-After`` instead of 401; a valid token is never refused for it.
"""

from __future__ import annotations

from rest_framework import authentication, exceptions

from poolweb.services.signin import sign_in_failed
from poolweb.services.tokens import token_authenticate


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() != self.keyword.lower():
            return None
        if len(header) != 2:
            raise self.failed(request, "Authorization: Bearer <token> takes exactly one token")
        try:
            token = header[1].decode()
        except UnicodeDecodeError:
            raise self.failed(request, "the token is not valid") from None
        found = token_authenticate(token)
        if found is None:
            raise self.failed(request, "the token is not valid")
        return found.user, found

    def authenticate_header(self, request) -> str:
        return self.keyword

    @staticmethod
    def failed(request, message: str) -> exceptions.APIException:
        wait = sign_in_failed(address=request.META.get("REMOTE_ADDR") or "unknown")
        if wait is None:
            return exceptions.AuthenticationFailed(message)
        return exceptions.Throttled(wait, detail=f"too many failed sign-ins from your address; retry in {wait} s")
