"""Users and groups the directory manages are marked so in the admin and the console, and the
admin edits the mapping."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from poolweb.models import DirectoryAccount, DirectoryGroup
from poolweb.services.directory import directory_user_sync

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client() -> Client:
    client = Client()
    client.force_login(User.objects.create_user("root", is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def bea() -> User:
    dev = Group.objects.create(name="dev")
    Group.objects.create(name="reviewers")
    DirectoryGroup.objects.create(name="ml-team", group=dev)
    user = User.objects.create_user("bea")
    directory_user_sync(user=user, source=DirectoryAccount.Source.LDAP, subject="uid=bea,dc=example,dc=org",
                        directory_groups={"ml-team"})
    return user


def cells(html: str, row_text: str) -> str:
    """The table row of the admin's list that names ``row_text``."""
    return next(row for row in html.split("<tr") if f">{row_text}<" in row)


def test_the_admins_user_list_says_which_users_the_directory_manages(admin_client, bea):
    page = admin_client.get("/admin/auth/user/").content.decode()

    assert ">LDAP<" in cells(page, "bea")
    assert ">LDAP<" not in cells(page, "root")


def test_the_admins_group_list_says_which_groups_the_directory_manages(admin_client, bea):
    page = admin_client.get("/admin/auth/group/").content.decode()

    assert "the directory" in cells(page, "dev")
    assert "the directory" not in cells(page, "reviewers")


def test_the_admin_adds_a_mapping(admin_client, bea):
    reviewers = Group.objects.get(name="reviewers")
    response = admin_client.post("/admin/poolweb/directorygroup/add/",
                                 {"name": "code-review", "group": reviewers.pk, "makes_admin": ""})

    assert response.status_code == 302
    assert DirectoryGroup.objects.get(name="code-review").group == reviewers


def test_a_mapping_to_nothing_is_refused_naming_it(admin_client):
    response = admin_client.post("/admin/poolweb/directorygroup/add/", {"name": "nobody", "group": "", "makes_admin": ""})

    assert response.status_code == 200 and not DirectoryGroup.objects.exists()
    assert "Name a Poolweb group, make its members administrators, or both." in response.content.decode()


@pytest.fixture
def configured(settings):
    settings.LDAP_ENABLED = True  # the console marks only while a directory signs people in


def test_the_console_marks_a_directory_user(bea, configured):
    client = Client()
    client.force_login(bea)

    assert 'class="chip fixed">directory<' in client.get("/requests/").content.decode()


def test_the_console_marks_a_policys_group_the_directory_manages(bea, configured, provisioned):
    client = Client()
    client.force_login(bea)

    page = client.get("/policies/").content.decode()
    dev = page[page.index('aria-label="Policy dev"'):]
    assert "from the directory" in dev[:dev.index("</header>")]


def test_the_console_does_not_mark_a_local_user(configured):
    client = Client()
    client.force_login(User.objects.create_user("dana"))

    assert 'class="chip fixed">directory<' not in client.get("/requests/").content.decode()
