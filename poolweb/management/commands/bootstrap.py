"""``manage.py bootstrap``: what a fresh install needs before it serves, safe to run every start.

1. The first admin account (staff and superuser, username ``admin`` or ``POOLWEB_ADMIN_USERNAME``)
   with a generated password, printed once: only when no superuser exists yet.
2. The demo configuration as version 1 and the Django groups its policies name (``research``,
   ``dev``), only while no configuration version exists.
"""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from poolweb.services.demo import DEMO_GROUPS, demo_provision
from poolweb.env import env_str
from poolweb.services.config import ConfigInvalid

DEFAULT_ADMIN = "admin"


@transaction.atomic
def admin_create_first(*, username: str) -> tuple[User, str | None]:
    """The first superuser and its generated password; (the oldest superuser, None) when one exists."""
    existing = User.objects.filter(is_superuser=True).order_by("pk").first()
    if existing is not None:
        return existing, None
    User.username_validator(username)
    if User.objects.filter(username=username).exists():
        # Never promote an account someone else may know the password of.
        raise CommandError(f"user {username!r} exists but is not a superuser: choose another "
                           "POOLWEB_ADMIN_USERNAME, or run manage.py createsuperuser")
    password = secrets.token_urlsafe(18)
    user = User.objects.create_user(username, password=password, is_staff=True, is_superuser=True)
    return user, password


class Command(BaseCommand):
    help = "Create the first admin (password printed once) and provision the demo configuration on an empty database."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--no-demo", action="store_true", help="do not provision the demo configuration")

    def handle(self, *args, **options) -> None:
        username = env_str("POOLWEB_ADMIN_USERNAME", DEFAULT_ADMIN).strip() or DEFAULT_ADMIN
        try:
            admin, password = admin_create_first(username=username)
        except ValidationError as error:
            raise CommandError(f"POOLWEB_ADMIN_USERNAME {username!r} is not a valid username: "
                               f"{' '.join(error.messages)}") from None
        if password is None:
            self.stdout.write(f"Admin account: {admin.username} already exists (no password shown).")
        else:
            self.stdout.write(self.style.SUCCESS(
                f"Created the admin account {admin.username!r} with the password:\n\n    {password}\n\n"
                "It is shown only this once: keep it, or change it at /admin/password_change/."))
        if options["no_demo"]:
            return
        try:
            version = demo_provision(author=admin)
        except ConfigInvalid as invalid:
            raise CommandError("the demo configuration does not validate: " + "; ".join(
                f"{e.path}: {e.code}" for e in invalid.errors)) from None
        if version is None:
            self.stdout.write("Configuration: a version exists already; the demo was not loaded.")
        else:
            self.stdout.write(self.style.SUCCESS(
                f"Provisioned the demo configuration as version {version.number}; add users to the "
                f"groups {' and '.join(DEMO_GROUPS)} (at /admin/auth/user/) to let them submit."))
