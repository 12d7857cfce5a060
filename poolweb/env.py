"""Reading settings from the environment: small helpers that fail loudly on bad values."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit


class ImproperlyConfigured(Exception):
    pass


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}")


def env_int(name: str, default: int, minimum: int | None = None, maximum: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise ImproperlyConfigured(f"{name} must be within [{minimum}, {maximum}], not {number}")
    return number


def env_choice(name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices``; the first is the default."""
    value = os.environ.get(name) or choices[0]
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


TOKEN_MIN_LENGTH = 16


def env_token(name: str) -> str:
    """A shared secret, or "" when unset: at least 16 printable ASCII characters without spaces, so a
    guessable one stops the start rather than guarding an endpoint."""
    value = os.environ.get(name, "").strip()
    if value and (len(value) < TOKEN_MIN_LENGTH or not all("!" <= c <= "~" for c in value)):
        raise ImproperlyConfigured(f"{name} must be at least {TOKEN_MIN_LENGTH} printable ASCII characters "
                                   "without spaces")
    return value


def env_networks(name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Comma-separated addresses or networks (``127.0.0.1, 10.0.0.0/8, ::1``); none by default."""
    items = [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]
    try:
        return tuple(ipaddress.ip_network(item, strict=False) for item in items)
    except ValueError as error:
        raise ImproperlyConfigured(f"{name} must be comma-separated addresses or networks: {error}") from None


@dataclass(frozen=True)
class MailServer:
    host: str
    port: int
    user: str
    password: str
    starttls: bool
    tls: bool
    sender: str | None  # None: Django's DEFAULT_FROM_EMAIL, webmaster@localhost


MAIL_SCHEMES = {"smtp": (25, False, False), "smtp+tls": (587, True, False), "smtps": (465, False, True)}


def env_mail_server(name: str) -> MailServer | None:
    """``smtp://[user:password@]host[:port][?from=address]`` (``smtp+tls://`` for STARTTLS,
    ``smtps://`` for TLS from the start); None when unset."""
    value = os.environ.get(name, "")
    if not value:
        return None
    url = urlsplit(value)
    try:
        port = url.port
    except ValueError:
        port = -1
    if url.scheme not in MAIL_SCHEMES or not url.hostname or port == -1:
        raise ImproperlyConfigured(f"{name} must be smtp://, smtp+tls:// or smtps://[user:password@]host[:port]"
                                   f"[?from=address], not {url.scheme}://{url.hostname}…")
    default_port, starttls, tls = MAIL_SCHEMES[url.scheme]
    return MailServer(url.hostname, port or default_port, unquote(url.username or ""), unquote(url.password or ""),
                      starttls, tls, parse_qs(url.query).get("from", [None])[0])
