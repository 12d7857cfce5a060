"""Starting the test provider from a test: ``running_provider(directory, redirect_uri, people)``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from poolweb.ports import free_port
from tests.live_server import ROOT, launch, stop

CLIENT_ID = "poolweb"
CLIENT_SECRET = "test-client-secret-0123456789"


@dataclass
class Provider:
    directory: Path
    port: int
    process: subprocess.Popen | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/o"

    def environment(self) -> dict[str, str]:
        """The POOLWEB_OIDC_… settings that point Poolweb at this provider."""
        return {"POOLWEB_OIDC_ISSUER": self.issuer, "POOLWEB_OIDC_CLIENT_ID": CLIENT_ID,
                "POOLWEB_OIDC_CLIENT_SECRET": CLIENT_SECRET, "POOLWEB_OIDC_NAME": "Example SSO",
                "POOLWEB_OIDC_SCOPES": "openid profile email groups"}

    def run(self, *args: str) -> None:
        subprocess.run([sys.executable, "-m", "tests.oidc_provider", *args], cwd=ROOT, check=True,
                       env={**_environ(), "OIDC_PROVIDER_DIR": str(self.directory)})

    def people(self, people: dict) -> None:
        """Who the provider has now (``{"name": {"password", "groups", "active"}}``)."""
        path = self.directory / "people.json"
        path.write_text(json.dumps(people))
        self.run("people", str(path))

    def start(self) -> None:
        self.process = launch([sys.executable, "-m", "tests.oidc_provider", "serve", str(self.port)],
                              {**_environ(), "OIDC_PROVIDER_DIR": str(self.directory)}, self.directory / "provider.log")
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{self.issuer}/.well-known/openid-configuration", timeout=2).ok:
                    return
            except requests.RequestException:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the provider did not start: {(self.directory / 'provider.log').read_text()[-2000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None


def _environ() -> dict[str, str]:
    import os

    return {name: value for name, value in os.environ.items() if not name.startswith(("DJANGO_", "DATABASE_URL"))}


@contextmanager
def running_provider(directory: Path, redirect_uri: str, people: dict, port: int | None = None) -> Iterator[Provider]:
    provider = Provider(directory, port or free_port())
    path = directory / "people.json"
    path.write_text(json.dumps(people))
    provider.run("setup", redirect_uri, CLIENT_ID, CLIENT_SECRET, str(path))
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()
