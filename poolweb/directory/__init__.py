"""Sign-in from the company's directory (docs/sign-in.md, decisions 165–169), an entry point like
accounts.py: ``ldap.py`` is the LDAP backend (django-auth-ldap: search, bind as the user, group
search), ``oidc.py`` the OpenID Connect sign-in (Authlib: authorization code with PKCE). Both hand
what the directory says to services/directory.py, where a user's groups and admin rights follow
the admin's mapping (``DirectoryGroup``) and where a directory user's tokens and streams ask the
directory again. poolweb/directory_config.py reads ``POOLWEB_LDAP_…`` and ``POOLWEB_OIDC_…``.
"""
