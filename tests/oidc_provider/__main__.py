"""``python -m tests.oidc_provider setup <redirect_uri> <client_id> <client_secret> <people.json>``:
a database, a signing key, the people (``{"name": {"password": …, "groups": […], "active": …}}``)
and Poolweb's client; ``… people <people.json>``: the people again (a test changing the
directory); ``… serve <port>``: the provider on 127.0.0.1:<port>. ``OIDC_PROVIDER_DIR`` names its
data directory."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def signing_key(path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


def people(path: str) -> None:
    from django.contrib.auth.models import Group, User

    for name, person in json.loads(Path(path).read_text()).items():
        user, _ = User.objects.get_or_create(username=name)
        user.set_password(person["password"])
        user.first_name, user.last_name, user.email = name.title(), "Example", f"{name}@example.org"
        user.is_active = person.get("active", True)
        user.save()
        user.groups.set([Group.objects.get_or_create(name=group)[0] for group in person["groups"]])
        if not user.is_active:  # as Keycloak ends a disabled user's sessions, and their grants with them
            from oauth2_provider.models import AccessToken, RefreshToken

            RefreshToken.objects.filter(user=user).delete()
            AccessToken.objects.filter(user=user).delete()


def main(command: str, *args: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    if command == "setup":
        signing_key(Path(os.environ["OIDC_PROVIDER_DIR"]) / "signing.pem")
    import django
    from django.core.management import call_command

    django.setup()
    if command == "setup":
        redirect_uri, client_id, client_secret, people_file = args
        call_command("migrate", verbosity=0)
        people(people_file)
        from oauth2_provider.models import Application

        Application.objects.create(name="Poolweb", client_id=client_id, client_secret=client_secret,
                                   client_type=Application.CLIENT_CONFIDENTIAL,
                                   authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
                                   redirect_uris=redirect_uri, algorithm=Application.RS256_ALGORITHM,
                                   skip_authorization=True)
    elif command == "people":
        people(args[0])
    elif command == "serve":
        call_command("runserver", f"127.0.0.1:{args[0]}", use_reloader=False, use_threading=True)
    else:
        sys.exit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(*sys.argv[1:])
