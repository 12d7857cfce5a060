"""The test provider's settings: its data directory in ``OIDC_PROVIDER_DIR``."""

from __future__ import annotations

import os
from pathlib import Path

DATA = Path(os.environ["OIDC_PROVIDER_DIR"])
SECRET_KEY = "test-provider-" + "k" * 50
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions", "oauth2_provider"]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.oidc_provider.urls"
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates",
              "DIRS": [Path(__file__).parent / "templates"],
              "OPTIONS": {"context_processors": ["django.template.context_processors.request"]}}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DATA / "provider.sqlite3"}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "/login/"
USE_TZ = True
# Another cookie name than Poolweb's: both run on 127.0.0.1, and a browser keys cookies by host only.
SESSION_COOKIE_NAME = "provider_session"
CSRF_COOKIE_NAME = "provider_csrftoken"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # a test's speed, nothing to guard
KEY = DATA / "signing.pem"
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": KEY.read_text() if KEY.exists() else "",
    "PKCE_REQUIRED": True,
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.validator.GroupsValidator",
    "SCOPES": {"openid": "who you are", "profile": "your name", "email": "your email", "groups": "your groups"},
}
