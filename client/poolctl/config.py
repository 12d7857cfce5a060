"""Where the server's URL and the token come from: arguments, then ``POOLWEB_URL`` and
``POOLWEB_TOKEN``, then the file ``poolctl login`` writes.

The file is ``config.json`` in the platform's configuration directory — ``$XDG_CONFIG_HOME``
or ``~/.config`` on Linux and other Unixes, ``~/Library/Application Support`` on macOS,
``%APPDATA%`` on Windows — in a folder ``poolctl``. It holds a secret, so it is written with mode
0600 (its folder 0700) before any byte of the token is in it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from poolctl.errors import UsageError

FILE_NAME = "config.json"
LOGIN_HINT = "run `poolctl login`, or set POOLWEB_URL and POOLWEB_TOKEN"


@dataclass(frozen=True)
class Settings:
    url: str
    token: str


def config_dir() -> Path:
    """The platform's configuration directory for poolctl."""
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Application Support")
    else:
        base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "poolctl"


def config_path() -> Path:
    return config_dir() / FILE_NAME


def read_file(path: Path | None = None) -> dict[str, str]:
    """The saved url and token; {} when there is no file. A broken file is a usage error."""
    path = path or config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise UsageError(f"cannot read {path} ({error})", f"fix or delete it, then {LOGIN_HINT}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a JSON object", f"delete it, then {LOGIN_HINT}")
    return {key: value for key, value in data.items() if key in ("url", "token") and isinstance(value, str)}


def write_file(url: str, token: str, path: Path | None = None) -> Path:
    """Save url and token, readable by the owner only; replaces the file atomically."""
    path = path or config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            os.chmod(partial, 0o600)  # O_CREAT's mode does not apply to a leftover file of ours
            json.dump({"url": url, "token": token}, out, indent=2)
            out.write("\n")
        os.replace(partial, path)
    finally:
        if partial.exists():
            partial.unlink()
    return path


def token_source(url: str) -> str:
    """Where a person gets an API token for the server at ``url``."""
    return f"the console's Tokens page, {url}/account/tokens/ (or ask an admin: `manage.py create_api_token USERNAME`)"


def normalise_url(url: str) -> str:
    """The server's root URL without a trailing slash; a usage error naming the fix otherwise."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"{url!r} is not a server URL", "give the server's root URL, like http://127.0.0.1:8000")
    if parts.path.rstrip("/").endswith("/api/v1"):
        raise UsageError(f"{url!r} includes the API's path",
                         f"give the server's root URL, like {parts.scheme}://{parts.netloc}")
    return url


def resolve(url: str | None = None, token: str | None = None) -> Settings:
    """Each of url and token from the first place that has it: argument, environment, file."""
    saved: dict[str, str] | None = None

    def from_file(key: str) -> str | None:
        nonlocal saved
        if saved is None:
            saved = read_file()
        return saved.get(key)

    url = url or os.environ.get("POOLWEB_URL") or from_file("url")
    token = token or os.environ.get("POOLWEB_TOKEN") or from_file("token")
    if not url:
        raise UsageError("no server URL is set", LOGIN_HINT)
    if not token:
        raise UsageError("no API token is set", LOGIN_HINT)
    return Settings(url=normalise_url(url), token=token.strip())
