"""A small OpenID Connect provider for the OIDC sign-in tests: a Django project of its own on
django-oauth-toolkit (OIDC on, PKCE required, RS256 ID tokens with a ``groups`` claim), run as
its own process (``python -m tests.oidc_provider``, see ``__main__``) on a SQLite database in a
temporary directory. It stands for Keycloak or Okta: its people sign in on its own page.
"""
