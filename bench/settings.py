"""The front-door bench's server settings: Poolweb's own, with the bench's URLconf, which adds the
bare baseline view (bench/urls.py). Nothing of it exists in a normal deployment."""

from poolweb.settings import *  # noqa: F403 — the same settings, one name changed

ROOT_URLCONF = "bench.urls"
