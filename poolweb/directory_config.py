"""The directory's settings from the environment, each part off unless configured.

LDAP needs python-ldap, which compiles against libldap2-dev and libsasl2-dev: it is the optional
extra ``poolweb[ldap]`` (decision 165), imported only when ``POOLWEB_LDAP_URL`` is set.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from poolweb.env import ImproperlyConfigured, env_bool, env_choice, env_int, env_str

# POOLWEB_LDAP_GROUP_TYPE → (django-auth-ldap's group type, the default filter of groups).
GROUP_TYPES = {
    "groupOfNames": ("GroupOfNamesType", "(objectClass=groupOfNames)"),
    "nestedGroupOfNames": ("NestedGroupOfNamesType", "(objectClass=groupOfNames)"),
    "groupOfUniqueNames": ("GroupOfUniqueNamesType", "(objectClass=groupOfUniqueNames)"),
    "posixGroup": ("PosixGroupType", "(objectClass=posixGroup)"),
    "activeDirectory": ("NestedActiveDirectoryGroupType", "(objectClass=group)"),
}


def _required(name: str, because: str) -> str:
    value = env_str(name).strip()
    if not value:
        raise ImproperlyConfigured(f"{name} must be set when {because} is")
    return value


def ldap_settings() -> dict[str, object]:
    """django-auth-ldap's ``AUTH_LDAP_…`` settings, or {} when ``POOLWEB_LDAP_URL`` is unset."""
    url = env_str("POOLWEB_LDAP_URL").strip()
    if not url:
        return {}
    if urlsplit(url).scheme not in ("ldap", "ldaps") or not urlsplit(url).hostname:
        raise ImproperlyConfigured(f"POOLWEB_LDAP_URL must be ldap://host[:port] or ldaps://host[:port], not {url!r}")
    try:
        import ldap
        from django_auth_ldap import config
    except ImportError:
        raise ImproperlyConfigured("POOLWEB_LDAP_URL is set but python-ldap is not installed: "
                                   "pip install -e '.[ldap]' (it builds against libldap2-dev and libsasl2-dev)") from None
    starttls = env_bool("POOLWEB_LDAP_STARTTLS", False)
    if starttls and url.startswith("ldaps:"):
        raise ImproperlyConfigured("POOLWEB_LDAP_STARTTLS is for ldap:// URLs: ldaps:// speaks TLS from the start")
    group_type = env_choice("POOLWEB_LDAP_GROUP_TYPE", tuple(GROUP_TYPES))
    type_name, group_filter = GROUP_TYPES[group_type]
    user_base = _required("POOLWEB_LDAP_USER_BASE", "POOLWEB_LDAP_URL")
    group_base = env_str("POOLWEB_LDAP_GROUP_BASE").strip() or user_base
    return {
        "AUTH_LDAP_SERVER_URI": url,
        "AUTH_LDAP_START_TLS": starttls,
        "AUTH_LDAP_BIND_DN": env_str("POOLWEB_LDAP_BIND_DN"),
        "AUTH_LDAP_BIND_PASSWORD": env_str("POOLWEB_LDAP_BIND_PASSWORD"),
        "AUTH_LDAP_CONNECTION_OPTIONS": _connection_options(ldap),
        "AUTH_LDAP_USER_SEARCH": config.LDAPSearch(
            user_base, ldap.SCOPE_SUBTREE, env_str("POOLWEB_LDAP_USER_FILTER").strip() or "(uid=%(user)s)"),
        "AUTH_LDAP_GROUP_SEARCH": config.LDAPSearch(
            group_base, ldap.SCOPE_SUBTREE, env_str("POOLWEB_LDAP_GROUP_FILTER").strip() or group_filter),
        "AUTH_LDAP_GROUP_TYPE": getattr(config, type_name)(),
        "AUTH_LDAP_USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        # Poolweb maps groups itself (services/directory.py): not django-auth-ldap's mirroring.
        "AUTH_LDAP_MIRROR_GROUPS": False,
        "AUTH_LDAP_CACHE_TIMEOUT": 0,
    }


def _connection_options(ldap) -> dict[int, object]:
    timeout = env_int("POOLWEB_LDAP_TIMEOUT_SECONDS", 5, minimum=1, maximum=120)
    # A directory that does not answer is reported within this time, not after the OS's minutes.
    options: dict[int, object] = {ldap.OPT_NETWORK_TIMEOUT: timeout, ldap.OPT_TIMEOUT: timeout, ldap.OPT_REFERRALS: 0}
    ca_file = env_str("POOLWEB_LDAP_CA_FILE").strip()
    if ca_file:
        options[ldap.OPT_X_TLS_CACERTFILE] = ca_file
        options[ldap.OPT_X_TLS_REQUIRE_CERT] = ldap.OPT_X_TLS_DEMAND
        options[ldap.OPT_X_TLS_NEWCTX] = 0  # last: applies the TLS options above to this connection
    return options


@dataclass(frozen=True)
class OidcProvider:
    name: str  # on the sign-in page's button: "Sign in with <name>"
    issuer: str
    client_id: str
    client_secret: str
    scopes: str
    groups_claim: str
    username_claim: str

    @property
    def discovery_url(self) -> str:
        return self.issuer.rstrip("/") + "/.well-known/openid-configuration"


def oidc_provider() -> OidcProvider | None:
    """The OpenID Connect provider, or None when ``POOLWEB_OIDC_ISSUER`` is unset."""
    issuer = env_str("POOLWEB_OIDC_ISSUER").strip()
    if not issuer:
        return None
    parts = urlsplit(issuer)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
        raise ImproperlyConfigured(f"POOLWEB_OIDC_ISSUER must be the issuer's https:// URL, not {issuer!r}")
    scopes = env_str("POOLWEB_OIDC_SCOPES", "openid profile email").split()
    if "openid" not in scopes:
        raise ImproperlyConfigured("POOLWEB_OIDC_SCOPES must include openid")
    return OidcProvider(
        name=env_str("POOLWEB_OIDC_NAME").strip() or "single sign-on",
        issuer=issuer,
        client_id=_required("POOLWEB_OIDC_CLIENT_ID", "POOLWEB_OIDC_ISSUER"),
        client_secret=_required("POOLWEB_OIDC_CLIENT_SECRET", "POOLWEB_OIDC_ISSUER"),
        scopes=" ".join(scopes),
        groups_claim=env_str("POOLWEB_OIDC_GROUPS_CLAIM").strip() or "groups",
        username_claim=env_str("POOLWEB_OIDC_USERNAME_CLAIM").strip() or "preferred_username",
    )
