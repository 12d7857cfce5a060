"""Bearer tokens in DRF: ``Authorization: Bearer <token>`` (services/tokens.py keeps them)."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from poolweb.services.tokens import token_authenticate


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace") != self.keyword:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Authorization: Bearer <token> takes exactly one token")
        try:
            token = header[1].decode()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("the token is not valid") from None
        found = token_authenticate(token)
        if found is None:
            raise exceptions.AuthenticationFailed("the token is not valid")
        return found.user, found

    def authenticate_header(self, request) -> str:
        return self.keyword
