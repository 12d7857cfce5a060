"""Poolweb's settings: everything a deployment changes comes from the environment (poolweb/env.py).

SQLite by default so a checkout runs with no setup; ``DATABASE_URL`` switches to PostgreSQL,
``REDIS_URL`` to a Redis channel layer.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

import dj_database_url

from poolweb.env import env_bool, env_choice, env_int, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("POOLWEB_DATA_DIR", str(BASE_DIR / "var")))


def _secret_key() -> str:
    """POOLWEB_SECRET_KEY, or one generated once and kept in the data directory."""
    configured = env_str("POOLWEB_SECRET_KEY")
    if configured:
        return configured
    path = DATA_DIR / "secret_key"
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("POOLWEB_DEBUG", False)
# The tests add Django's "testserver" themselves (pytest-django's test environment).
ALLOWED_HOSTS = [h.strip() for h in env_str("POOLWEB_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in env_str("POOLWEB_CSRF_TRUSTED_ORIGINS").split(",") if o.strip()]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "channels",
    "poolweb",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "poolweb.accounts.SignInThrottleMiddleware",
]
# Django's password check, with failed sign-ins throttled per client address (poolweb/accounts.py).
AUTHENTICATION_BACKENDS = ["poolweb.accounts.ThrottledModelBackend"]

ROOT_URLCONF = "poolweb.urls"
ASGI_APPLICATION = "poolweb.asgi.application"
WSGI_APPLICATION = "poolweb.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "poolweb.console.context.shell",
            ],
            "libraries": {"console": "poolweb.console.templatetags"},
        },
    },
]


def _database() -> dict:
    """``DATABASE_URL`` (PostgreSQL, or ``sqlite:////path``), else SQLite in the data directory."""
    url = env_str("DATABASE_URL")
    if url:
        database = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    else:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        database = {"ENGINE": "poolweb.sqlite", "NAME": DATA_DIR / "poolweb.sqlite3"}
    if database["ENGINE"] == "django.db.backends.sqlite3":  # a sqlite:/// URL
        database["ENGINE"] = "poolweb.sqlite"
    if database["ENGINE"] != "poolweb.sqlite":
        # One test database per test run, so runs side by side on one server never drop each other's.
        return {**database, "TEST": {"NAME": f"test_{database['NAME']}_{os.getpid()}"}}
    return {
        **database,
        # Each web thread, the pass loop and each worker keep their connection (poolweb/asgi.py
        # keeps the web threads): a new one costs a connect and the pragmas below, ~2 ms.
        "CONN_MAX_AGE": 600,
        "CONN_HEALTH_CHECKS": True,
        # WAL lets readers run beside the writer; IMMEDIATE takes the write lock at BEGIN, so two
        # writers queue instead of failing half-way through a decision: on a lock file first
        # (poolweb/sqlite: a waiter wakes as the holder commits), then up to the busy timeout.
        # A page cache of up to 64 MiB (the default is 2): a pass rewriting 10^4 rows spilled dirty
        # pages to the WAL mid-transaction, 40 % of its UPDATEs' time (decision 62).
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000; "
                            "PRAGMA cache_size=-65536;",
        },
        # The tests' database is a file, not memory, so that a test can start a server process on
        # it (tests/poolweb/test_events_live.py); one per test run, so two runs never share it.
        "TEST": {"NAME": str(Path(tempfile.gettempdir()) / f"poolweb-test-{os.getpid()}.sqlite3")},
    }


DATABASES = {"default": _database()}


DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"  # the console; Django's default, /accounts/profile/, is no page here

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "poolweb.api.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "poolweb.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "poolweb.api.errors.exception_handler",
    "DEFAULT_PARSER_CLASSES": ["poolweb.api.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Poolweb API",
    "DESCRIPTION": "Share scarce GPU capacity: configuration, requests and live state.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs page works offline: Swagger UI is served from this install, not from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

# The background worker (django-q2) uses the database as its broker: nothing else to run.
Q_CLUSTER = {
    "name": "poolweb",
    "orm": "default",
    "workers": env_int("POOLWEB_WORKERS", 1, minimum=1, maximum=16),
    "timeout": 60,
    "retry": 120,
    "max_attempts": 1,
    "catch_up": False,
    "poll": 0.2,
    "sync": env_bool("POOLWEB_SYNC_TASKS", False),
}

REDIS_URL = env_str("REDIS_URL")
CHANNEL_LAYERS = {
    "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}
    if REDIS_URL
    else {"BACKEND": "channels.layers.InMemoryChannelLayer"}
}

POOLWEB = {
    "EVICTION_GRACE_SECONDS": env_int("POOLWEB_EVICTION_GRACE_SECONDS", 30, minimum=0, maximum=86400),
    # "worker": passes run in the django-q2 worker (`manage.py serve` starts it); "inline": in the
    # process that asked, right away (the tests, or a deployment without a worker).
    "PASSES": env_choice("POOLWEB_PASSES", ("worker", "inline")),
    # Web processes `manage.py serve` runs (PostgreSQL only: SQLite has one writer at a time).
    "WEB_PROCESSES": env_int("POOLWEB_WEB_PROCESSES", 1, minimum=1, maximum=64),
    # Threads per web process that run views, each with its own database connection (poolweb/asgi.py).
    "HTTP_THREADS": env_int("POOLWEB_HTTP_THREADS", 2, minimum=1, maximum=64),
    # How long a client has to send a request's head (from the connection opening, or from the
    # head's first byte on a kept-alive connection) and then its body: a slow client is closed
    # (head; poolweb/http_protocol.py) or answered 408 (body; poolweb/asgi.py) instead of kept.
    "HTTP_HEADER_TIMEOUT_SECONDS": env_int("POOLWEB_HTTP_HEADER_TIMEOUT_SECONDS", 10, minimum=1, maximum=3600),
    "HTTP_BODY_TIMEOUT_SECONDS": env_int("POOLWEB_HTTP_BODY_TIMEOUT_SECONDS", 30, minimum=1, maximum=3600),
    # Events kept for clients that resume (at least this many, and all of the last hour).
    "EVENTS_KEPT": env_int("POOLWEB_EVENTS_KEPT", 10000, minimum=100, maximum=10_000_000),
    # Failed sign-ins (a wrong token or password) one client address may make per window before
    # its further failures get 429 (services/signin.py); a valid credential is never refused.
    "AUTH_FAILURES": env_int("POOLWEB_AUTH_FAILURES", 20, minimum=1, maximum=1_000_000),
    "AUTH_FAILURE_WINDOW_SECONDS": env_int("POOLWEB_AUTH_FAILURE_WINDOW_SECONDS", 300, minimum=1, maximum=86400),
    # Pending requests one user may have; a submission beyond it gets 429.
    "MAX_PENDING_PER_USER": env_int("POOLWEB_MAX_PENDING_PER_USER", 10_000, minimum=1, maximum=10_000_000),
    # Finished requests (released, expired, …) are forgotten after this many days.
    "REQUESTS_KEPT_DAYS": env_int("POOLWEB_REQUESTS_KEPT_DAYS", 30, minimum=1, maximum=36500),
}

# The event stream at /ws/events/ (docs/events.md, poolweb/realtime). Each web process reads new
# outbox rows every POLL_MS; a client has AUTH_TIMEOUT_MS to send its token and START_MS to send
# resume_from before it starts from now; a client more than CLIENT_BUFFER events behind
# catches up from the outbox instead. An open stream checks its user's rights every RECHECK_MS
# (and before it sends an event about a request).
EVENT_STREAM = {
    "POLL_MS": env_int("POOLWEB_EVENT_POLL_MS", 50, minimum=5, maximum=10_000),
    "AUTH_TIMEOUT_MS": env_int("POOLWEB_EVENT_AUTH_TIMEOUT_MS", 10_000, minimum=100, maximum=600_000),
    "START_MS": env_int("POOLWEB_EVENT_START_MS", 500, minimum=0, maximum=10_000),
    "CLIENT_BUFFER": env_int("POOLWEB_EVENT_CLIENT_BUFFER", 1000, minimum=1, maximum=1_000_000),
    "RECHECK_MS": env_int("POOLWEB_EVENT_RECHECK_MS", 2000, minimum=10, maximum=600_000),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"without_traceback": {"()": "poolweb.logs.WithoutTraceback"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        # A bad Host header (DisallowedHost) and the like: one line each, not a traceback.
        "security": {"class": "logging.StreamHandler", "filters": ["without_traceback"]},
    },
    "loggers": {"django.security": {"handlers": ["security"], "propagate": False}},
    "root": {"handlers": ["console"], "level": env_str("POOLWEB_LOG_LEVEL", "INFO")},
}
