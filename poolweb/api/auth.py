"""Bearer tokens in DRF: ``Authorization: Bearer <token>`` (services/tokens.py keeps them).

The scheme is case-insensitive (RFC 9110 §11.1): ``bearer`` works too. A wrong token counts
against the caller's address (services/signin.py); while the address is throttled every token
from it, right or wrong, is answered 429 with ``Retry-After`` before it is checked.
"""

from __future__ import annotations

from rest_framework import authentication, exceptions

from poolweb.addresses import request_address
from poolweb.services.signin import sign_in_failed, sign_in_wait, throttled_message
from poolweb.services.tokens import token_authenticate


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() != self.keyword.lower():
            return None
        address = request_address(request)
        wait = sign_in_wait(address=address)
        if wait is not None:
            raise exceptions.Throttled(wait, detail=throttled_message(wait))
        if len(header) != 2:
            raise self.failed(address, "Authorization: Bearer <token> takes exactly one token")
        try:
            token = header[1].decode()
        except UnicodeDecodeError:
            raise self.failed(address, "the token is not valid") from None
        found = token_authenticate(token)
        if found is None:
            raise self.failed(address, "the token is not valid")
        return found.user, found

    def authenticate_header(self, request) -> str:
        return self.keyword

    @staticmethod
    def failed(address: str, message: str) -> exceptions.AuthenticationFailed:
        sign_in_failed(address=address)
        return exceptions.AuthenticationFailed(message)
