"""Poolweb's settings: everything a deployment changes comes from the environment (poolweb/env.py).

SQLite by default so a checkout runs with no setup; ``DATABASE_URL`` switches to PostgreSQL.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from pathlib import Path

import dj_database_url
from django.core.checks.security.base import (
    SECRET_KEY_INSECURE_PREFIX, SECRET_KEY_MIN_LENGTH, SECRET_KEY_MIN_UNIQUE_CHARACTERS,
)

from poolweb.directory_config import ldap_settings, oidc_provider
from poolweb.env import (ImproperlyConfigured, env_bool, env_choice, env_int, env_mail_server, env_networks, env_str,
                         env_token)
from poolweb.private_files import open_private, private_directory, tighten

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("POOLWEB_DATA_DIR", str(BASE_DIR / "var")))
DEBUG = env_bool("POOLWEB_DEBUG", False)


def _refuse_a_weak_key(key: str) -> None:
    """Anyone who knows or guesses the key can sign a session cookie as an admin. Django's deploy
    check only warns; outside development (POOLWEB_DEBUG) Poolweb does not start with a key set in
    POOLWEB_SECRET_KEY below that check's bar (the key it generates is well above it)."""
    if (len(key) < SECRET_KEY_MIN_LENGTH or len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS
            or key.startswith(SECRET_KEY_INSECURE_PREFIX)):
        raise ImproperlyConfigured(
            f"POOLWEB_SECRET_KEY is too weak: it needs {SECRET_KEY_MIN_LENGTH} characters or more, "
            f"{SECRET_KEY_MIN_UNIQUE_CHARACTERS} of them different, and not Django's {SECRET_KEY_INSECURE_PREFIX!r} "
            "example; unset it to use the key generated in the data directory (POOLWEB_DEBUG=on accepts any)")


def _secret_key() -> str:
    """POOLWEB_SECRET_KEY, or one generated once and kept in the data directory."""
    configured = env_str("POOLWEB_SECRET_KEY")
    if configured:
        if not DEBUG:
            _refuse_a_weak_key(configured)
        return configured
    private_directory(DATA_DIR)
    path = DATA_DIR / "secret_key"
    if not path.exists():
        with os.fdopen(open_private(path, os.O_WRONLY), "w") as file:
            file.write(secrets.token_urlsafe(50))
    tighten(path)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
# The tests add Django's "testserver" themselves (pytest-django's test environment).
ALLOWED_HOSTS = [h.strip() for h in env_str("POOLWEB_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in env_str("POOLWEB_CSRF_TRUSTED_ORIGINS").split(",") if o.strip()]


def _proxy_tls_header() -> tuple[str, str] | None:
    """POOLWEB_PROXY_TLS_HEADER names the header a TLS proxy sets to ``https`` (``X-Forwarded-Proto``):
    Django then takes such a request as made over HTTPS. Only behind a proxy that sets or strips it
    on every request, or a client could say so itself."""
    header = env_str("POOLWEB_PROXY_TLS_HEADER").strip()
    if not header:
        return None
    if not re.fullmatch(r"[A-Za-z0-9-]+", header):
        raise ImproperlyConfigured(f"POOLWEB_PROXY_TLS_HEADER must be a header's name, not {header!r}")
    return "HTTP_" + header.upper().replace("-", "_"), "https"


# Served over HTTPS (README, "Running in production"): cookies that never travel in the clear,
# HTTP redirected to HTTPS, and browsers told to use nothing else (HSTS, up to two years).
SECURE_PROXY_SSL_HEADER = _proxy_tls_header()
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("POOLWEB_SECURE_COOKIES", False)
SECURE_SSL_REDIRECT = env_bool("POOLWEB_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("POOLWEB_HSTS_SECONDS", 0, minimum=0, maximum=2 * 365 * 86400)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("POOLWEB_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("POOLWEB_HSTS_PRELOAD", False)

INSTALLED_APPS = [
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
    "poolweb.instruments.http_metrics",  # first: it times the others too
    "django.middleware.security.SecurityMiddleware",
    "poolweb.content_policy.ContentSecurityPolicy",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "poolweb.accounts.SignInThrottleMiddleware",
    "poolweb.accounts.AuditOrigin",  # acts are audited as from the client's address
]
# Django's password check, with failed sign-ins throttled per client address (poolweb/accounts.py);
# then the company's directory when configured (docs/sign-in.md): LDAP (POOLWEB_LDAP_URL: the
# AUTH_LDAP_… settings of django-auth-ldap, built in poolweb/directory_config.py) and OpenID
# Connect (POOLWEB_OIDC_ISSUER). A directory user's session is kept by the first, which refuses
# an inactive user.
AUTHENTICATION_BACKENDS = ["poolweb.accounts.ThrottledModelBackend"]
globals().update(ldap_settings())
LDAP_ENABLED = "AUTH_LDAP_SERVER_URI" in globals()
if LDAP_ENABLED:
    AUTHENTICATION_BACKENDS.append("poolweb.directory.ldap.DirectoryLdapBackend")
OIDC = oidc_provider()
# Who may sign in with a password kept in Poolweb: "on" everyone with one; "admins" only
# administrators' local accounts (an emergency sign-in while the directory is down); "off" no one.
# Directory users have none: they sign in with the directory's password (LDAP) or its page (OIDC).
LOCAL_SIGN_IN = env_choice("POOLWEB_LOCAL_SIGN_IN", ("on", "admins", "off"))

ROOT_URLCONF = "poolweb.urls"
# A refused CSRF check is JSON under /api/ like Django's other errors there (poolweb/urls.py's handlers).
CSRF_FAILURE_VIEW = "poolweb.error_views.csrf_failure"
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


# How long any call waits for a lock (the pass lock, SQLite's write lock, a PostgreSQL row or
# advisory lock) before it fails with 503: a healthy holder keeps one for a second at most, so
# past this one is stuck, and waiting on would only hold the caller's thread (decision 79).
LOCK_WAIT_SECONDS = env_int("POOLWEB_LOCK_WAIT_SECONDS", 10, minimum=1, maximum=600)


def _database() -> dict:
    """``DATABASE_URL`` (PostgreSQL, or ``sqlite:////path``), else SQLite in the data directory."""
    url = env_str("DATABASE_URL")
    if url:
        database = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    else:
        private_directory(DATA_DIR)
        database = {"ENGINE": "poolweb.sqlite", "NAME": DATA_DIR / "poolweb.sqlite3"}
    if database["ENGINE"] == "django.db.backends.sqlite3":  # a sqlite:/// URL
        database["ENGINE"] = "poolweb.sqlite"
    if database["ENGINE"] != "poolweb.sqlite":
        options = database.setdefault("OPTIONS", {})
        options["options"] = f"{options.get('options', '')} -c lock_timeout={LOCK_WAIT_SECONDS * 1000}".strip()
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
        # (poolweb/sqlite: a waiter wakes as the holder commits), then up to the busy timeout;
        # both wait at most LOCK_WAIT_SECONDS ("timeout").
        # A page cache of up to 64 MiB (the default is 2): a pass rewriting 10^4 rows spilled dirty
        # pages to the WAL mid-transaction, 40 % of its UPDATEs' time (decision 62).
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": LOCK_WAIT_SECONDS,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                            f"PRAGMA busy_timeout={LOCK_WAIT_SECONDS * 1000}; PRAGMA cache_size=-65536;",
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

# Mail, for password resets only. Without POOLWEB_EMAIL_URL none is sent, and the pages that would
# send one do not exist (poolweb/accounts.py): the sign-in page says to ask an administrator.
MAIL_SERVER = env_mail_server("POOLWEB_EMAIL_URL")
if MAIL_SERVER is not None:
    EMAIL_HOST, EMAIL_PORT = MAIL_SERVER.host, MAIL_SERVER.port
    EMAIL_HOST_USER, EMAIL_HOST_PASSWORD = MAIL_SERVER.user, MAIL_SERVER.password
    EMAIL_USE_TLS, EMAIL_USE_SSL = MAIL_SERVER.starttls, MAIL_SERVER.tls
    if MAIL_SERVER.sender:
        DEFAULT_FROM_EMAIL = MAIL_SERVER.sender

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

# Nothing sends through a channel layer: each web process's relay reads the outbox in the
# database, and wake-ups go through a socket or NOTIFY (decision 143). A Redis layer would only
# make every event stream depend on a Redis that carries nothing (docs/deploy.md).
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

POOLWEB = {
    "EVICTION_GRACE_SECONDS": env_int("POOLWEB_EVICTION_GRACE_SECONDS", 30, minimum=0, maximum=86400),
    # "worker": passes run apart from the process that asked: in the pass loop `manage.py serve`
    # starts, woken by each change, with the django-q2 worker's minutely pass as a backstop (a
    # change queues a worker task where no loop listens; docs/scheduling.md §12). "inline": in the
    # process that asked, right away, and only then (the tests, or a deployment without either).
    "PASSES": env_choice("POOLWEB_PASSES", ("worker", "inline")),
    # Web processes `manage.py serve` runs (uvicorn's, on one socket), on either database: on
    # SQLite their writes take turns at its one write lock, each waiting at most
    # POOLWEB_LOCK_WAIT_SECONDS (decisions 69, 79).
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
    # Failed sign-ins (a wrong token or password) one client address, and one account from any
    # addresses, may make per window; then every attempt from it, or for it, gets 429 unchecked
    # until the oldest leaves the window (services/signin.py). An account's allowance is the
    # larger: anyone who knows a username can use it up (decision 85).
    "AUTH_FAILURES": env_int("POOLWEB_AUTH_FAILURES", 20, minimum=1, maximum=1_000_000),
    "AUTH_ACCOUNT_FAILURES": env_int("POOLWEB_AUTH_ACCOUNT_FAILURES", 100, minimum=1, maximum=1_000_000),
    "AUTH_FAILURE_WINDOW_SECONDS": env_int("POOLWEB_AUTH_FAILURE_WINDOW_SECONDS", 300, minimum=1, maximum=86400),
    # The proxies whose X-Forwarded-For names the client (poolweb/addresses.py); none by default.
    "TRUSTED_PROXIES": env_networks("POOLWEB_TRUSTED_PROXIES"),
    # Pending requests one user may have; a submission beyond it gets 429.
    "MAX_PENDING_PER_USER": env_int("POOLWEB_MAX_PENDING_PER_USER", 10_000, minimum=1, maximum=10_000_000),
    # API tokens one user may have; creating one more is refused until one is revoked.
    "MAX_TOKENS_PER_USER": env_int("POOLWEB_MAX_TOKENS_PER_USER", 100, minimum=1, maximum=1_000_000),
    # Who may scrape /metrics (poolweb/metrics/views.py): a bearer token, client addresses or
    # networks, or both; neither: /metrics is off (404).
    "METRICS_TOKEN": env_token("POOLWEB_METRICS_TOKEN"),
    "METRICS_ALLOW": env_networks("POOLWEB_METRICS_ALLOW"),
    # A directory user's API tokens and open streams ask the directory again after this many
    # minutes since it last answered for them (poolweb/directory/recheck.py).
    "DIRECTORY_RECHECK_MINUTES": env_int("POOLWEB_DIRECTORY_RECHECK_MINUTES", 5, minimum=1, maximum=1440),
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
    "filters": {"without_traceback": {"()": "poolweb.logs.WithoutTraceback"},
                "traceback_only_for_bugs": {"()": "poolweb.logs.TracebackOnlyForBugs"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        # A bad Host header (DisallowedHost) and the like: one line each, not a traceback.
        "security": {"class": "logging.StreamHandler", "filters": ["without_traceback"]},
    },
    "loggers": {"django.security": {"handlers": ["security"], "propagate": False},
                "django.request": {"filters": ["traceback_only_for_bugs"]},
                # django-q says "Enqueued" and "Processed" at INFO for every task, the periodic pass
                # each minute among them: the terminal of `make run` keeps what a person needs.
                "django-q": {"level": env_str("POOLWEB_TASKS_LOG_LEVEL", "WARNING")}},
    "root": {"handlers": ["console"], "level": env_str("POOLWEB_LOG_LEVEL", "INFO")},
}
