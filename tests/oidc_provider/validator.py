"""ID tokens and userinfo with the person's name, email and groups (their Django groups here)."""

from __future__ import annotations

from oauth2_provider.oauth2_validators import OAuth2Validator


class GroupsValidator(OAuth2Validator):
    oidc_claim_scope = None  # every claim below, whatever the scopes (as a provider's mapper would)

    def get_additional_claims(self, request):
        user = request.user
        return {"preferred_username": user.username, "given_name": user.first_name, "family_name": user.last_name,
                "email": user.email, "groups": sorted(user.groups.values_list("name", flat=True))}
