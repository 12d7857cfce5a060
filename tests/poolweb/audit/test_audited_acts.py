"""Each audited act writes exactly one entry, with who, from where, what and the object; acts that
are not audited (one's own request, a no-op) write none (decision 154)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from poolweb.management.users import os_author
from poolweb.models import ApiToken, AuditEntry, ConfigVersion, Request as RequestRow
from poolweb.services.tokens import token_create

from tests.poolweb.audit.conftest import ADDRESS, calling_from, entries, only_entry
from tests.poolweb.conftest import document, request_row

pytestmark = pytest.mark.django_db
API = "/api/v1"


def changed_document() -> dict:
    changed = document()
    changed["pools"][0]["capacity"] = {"gpu": 16}
    return changed


def running(owner, count: int = 1) -> list[RequestRow]:
    rows = [request_row(owner, "dev", "half", 0.5, state="allocated", pool="a100") for _ in range(count)]
    RequestRow.objects.filter(pk__in=[r.pk for r in rows]).update(lease_expires_at=timezone.now() + timedelta(seconds=20))
    return rows


# --- configuration ----------------------------------------------------------------------------------

def test_a_provision_names_the_two_versions_and_what_changed(provisioned, alice):
    admin = calling_from(alice)
    assert admin.put(f"{API}/config/draft", changed_document(), format="json").status_code == 200

    assert admin.post(f"{API}/config/draft/provision", {"comment": "more h100"}, format="json").status_code == 200

    entry = only_entry(action="config.provision", target="version:2")
    assert (entry.actor, entry.actor_id, entry.origin, entry.before, entry.after) == (
        "alice", alice.pk, ADDRESS, "1", "2")
    assert entry.detail == {"summary": ConfigVersion.objects.get(number=2).summary, "comment": "more h100"}
    assert "h100" in entry.detail["summary"]


def test_a_provision_by_the_command_is_the_operators_from_manage_py(db, tmp_path):
    file = tmp_path / "site.json"
    file.write_text(__import__("json").dumps(document()))

    call_command("config", "import", str(file), "--provision", stdout=StringIO())

    entry = only_entry(action="config.provision")
    assert (entry.actor, entry.actor_id, entry.origin, entry.target, entry.before) == (
        os_author(), None, "manage.py", "version:1", "0")


def test_a_draft_reset_is_one_entry_and_resetting_nothing_none(provisioned, alice):
    admin = calling_from(alice)
    admin.put(f"{API}/config/draft", changed_document(), format="json")

    assert admin.delete(f"{API}/config/draft").status_code == 204
    assert admin.delete(f"{API}/config/draft").status_code == 204  # nothing left to discard

    entry = only_entry(action="draft.reset")
    assert (entry.actor, entry.origin, entry.target, entry.before, entry.after) == (
        "alice", ADDRESS, "draft", "draft from version 1", "no draft")
    assert entry.detail["saved_by"] == "alice"


def test_a_restore_names_the_version_restored_and_the_live_one(provisioned, alice):
    admin = calling_from(alice)
    admin.put(f"{API}/config/draft", changed_document(), format="json")
    admin.post(f"{API}/config/draft/provision", {}, format="json")

    assert admin.post(f"{API}/config/versions/1/restore").status_code == 200

    entry = only_entry(action="version.restore")
    assert (entry.target, entry.before, entry.after, entry.detail) == (
        "version:1", "live version 2", "draft of version 1", {"restored": 1, "live": 2})


def test_the_management_switch_says_on_to_off_once(provisioned, alice):
    admin = calling_from(alice)

    for _ in range(2):
        assert admin.put(f"{API}/management", {"enabled": False}, format="json").status_code == 200

    entry = only_entry(action="management.switch")
    assert (entry.actor, entry.origin, entry.target, entry.before, entry.after) == (
        "alice", ADDRESS, "management", "on", "off")


# --- tokens and the permission -----------------------------------------------------------------------

def test_a_token_created_through_the_api_is_its_owners_act(bob):
    created = calling_from(bob).post(f"{API}/tokens", {"name": "laptop"}, format="json").json()

    entry = only_entry(action="token.create")
    prefix = ApiToken.objects.get(pk=created["id"]).prefix
    assert created["token"].startswith(prefix)
    assert (entry.actor, entry.origin, entry.target) == ("bob", ADDRESS, f"token:{prefix}")
    assert entry.detail == {"name": "laptop", "owner": "bob", "owner_id": bob.pk, "token_id": created["id"]}


def test_a_token_created_by_the_command_is_the_operators(bob):
    call_command("create_api_token", "bob", "--name", "ci", stdout=StringIO())

    entry = only_entry(action="token.create")
    assert (entry.actor, entry.actor_id, entry.origin, entry.detail["owner"], entry.detail["name"]) == (
        os_author(), None, "manage.py", "bob", "ci")


def test_an_admin_revoking_bobs_token_is_the_admins_act_naming_bob(alice, bob):
    token, _ = token_create(user=bob, name="laptop")

    assert calling_from(alice).delete(f"{API}/tokens/{token.pk}").status_code == 204

    entry = only_entry(action="token.revoke")
    assert (entry.actor, entry.origin, entry.target, entry.after) == ("alice", ADDRESS, f"token:{token.prefix}", "revoked")
    assert (entry.detail["owner"], entry.detail["name"]) == ("bob", "laptop")


def test_revoking_every_token_of_a_user_by_command_is_an_entry_per_token(bob):
    for name in ("a", "b"):
        token_create(user=bob, name=name)

    call_command("revoke_api_token", "--user", "bob", stdout=StringIO())

    revoked = entries(action="token.revoke")
    assert sorted(e.detail["name"] for e in revoked) == ["a", "b"]
    assert {(e.actor, e.origin) for e in revoked} == {(os_author(), "manage.py")}


def test_a_token_revoked_in_the_django_admin_is_audited(alice, bob):
    token, _ = token_create(user=bob, name="laptop")
    from django.test import Client
    browser = Client(REMOTE_ADDR=ADDRESS)
    browser.force_login(alice)

    response = browser.post(f"/admin/poolweb/apitoken/{token.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    assert (only_entry(action="token.revoke").actor, only_entry(action="token.revoke").origin) == ("alice", ADDRESS)


def test_granting_and_revoking_submit_for_others_are_entries_a_repeat_is_none(bob):
    for args in (["bob"], ["bob"], ["bob", "--revoke"]):
        call_command("grant_submit_for_others", *args, stdout=StringIO())

    granted, revoked = entries(action__startswith="permission.")
    assert (granted.action, granted.target, granted.before, granted.after, granted.origin) == (
        "permission.grant", "user:bob", "may not", "may", "manage.py")
    assert (revoked.action, revoked.before, revoked.after) == ("permission.revoke", "may", "may not")


# --- acts on another user's request ------------------------------------------------------------------

@pytest.mark.parametrize("action,before,after", [("cancel", "allocated", "released"),
                                                 ("release", "allocated", "released")])
def test_an_admins_cancel_or_release_of_bobs_request_is_one_entry(provisioned, alice, bob, action, before, after):
    his = running(bob)[0]

    assert calling_from(alice).post(f"{API}/requests/{his.pk}/{action}").status_code == 200

    entry = only_entry(action=f"request.{action}")
    assert (entry.actor, entry.origin, entry.target, entry.before, entry.after, entry.request_ids) == (
        "alice", ADDRESS, f"request:{his.pk}", before, after, [his.pk])
    assert entry.detail == {"owner": "bob", "owner_id": bob.pk, "attempt": 1}


def test_an_admin_cancelling_twice_is_one_entry_and_their_own_request_none(provisioned, alice, bob):
    his, hers = running(bob)[0], running(alice)[0]
    admin = calling_from(alice)

    for request_id in (his.pk, his.pk, hers.pk):
        assert admin.post(f"{API}/requests/{request_id}/cancel").status_code == 200

    assert [e.target for e in entries(action__startswith="request")] == [f"request:{his.pk}"]


def test_bobs_acts_on_his_own_requests_are_not_audited(provisioned, bob):
    rows = running(bob, 2)
    member = calling_from(bob)

    member.post(f"{API}/requests/{rows[0].pk}/heartbeat")
    member.post(f"{API}/requests/{rows[0].pk}/release")
    member.post(f"{API}/requests/actions", {"action": "release", "requests": [{"id": rows[1].pk}]}, format="json")

    assert entries(action__startswith="request") == []


def test_a_heartbeat_on_bobs_request_names_the_old_and_new_lease(provisioned, bridge, bob):
    his = running(bob)[0]
    before = RequestRow.objects.get(pk=his.pk).lease_expires_at

    answer = calling_from(bridge).post(f"{API}/requests/{his.pk}/heartbeat").json()

    entry = only_entry(action="request.heartbeat")
    assert entry.actor == "bridge" and entry.request_ids == [his.pk]
    assert entry.before == before.isoformat().replace("+00:00", "Z")
    assert entry.after == answer["lease_expires_at"]


def test_a_submission_for_bob_is_the_bridges_entry(provisioned, bridge, bob):
    answer = calling_from(bridge).post(f"{API}/requests", {"policy": "dev", "profile": "half", "owner": "bob"},
                                       format="json").json()

    entry = only_entry(action="request.submit")
    assert (entry.actor, entry.origin, entry.target, entry.request_ids) == (
        "bridge", ADDRESS, f"request:{answer['id']}", [answer["id"]])
    assert entry.detail == {"owner": "bob", "owner_id": bob.pk, "policy": "dev", "profile": "half"}


def test_a_retried_submission_is_not_a_second_entry(provisioned, bridge, bob):
    client = calling_from(bridge)
    for _ in range(2):
        client.post(f"{API}/requests", {"policy": "dev", "profile": "half", "owner": "bob"}, format="json",
                    HTTP_IDEMPOTENCY_KEY="slurm:c1:7")

    assert len(entries(action="request.submit")) == 1


# --- batches: one entry each (decision 156) ----------------------------------------------------------

def test_a_batch_of_submissions_for_others_is_one_entry_listing_ids_and_owners(provisioned, bridge, bob, carol):
    jobs = [{"policy": "dev", "profile": "half", "owner": owner} for owner in ("bob", "bob", "carol", "bridge")]

    results = calling_from(bridge).post(f"{API}/requests/batch", {"requests": jobs}, format="json").json()["results"]

    assert [r["status"] for r in results] == [201, 201, 403, 201]  # carol is in no team; the bridge's own
    ids = [r["request"]["id"] for r in results[:2]]
    entry = only_entry(action__startswith="requests.")
    assert (entry.action, entry.actor, entry.origin, entry.target, entry.request_ids) == (
        "requests.submit", "bridge", ADDRESS, "requests", ids)
    assert [(i["request"], i["owner"]) for i in entry.detail["items"]] == [(ids[0], "bob"), (ids[1], "bob")]
    assert entry.after == "2 requests of bob"


@pytest.mark.parametrize("action", ["heartbeat", "release", "cancel"])
def test_a_batch_of_actions_is_one_entry_for_the_others_requests_that_it_changed(
        provisioned, bridge, bob, carol, action):
    his, theirs, own = running(bob)[0], running(carol)[0], running(bridge)[0]
    done = running(bob)[0]
    RequestRow.objects.filter(pk=done.pk).update(state="released", finished_at=timezone.now())
    items = [{"id": i} for i in (his.pk, own.pk, 10**6, done.pk, theirs.pk)]

    calling_from(bridge).post(f"{API}/requests/actions", {"action": action, "requests": items}, format="json")

    entry = only_entry(action__startswith="requests.")
    assert (entry.action, entry.actor, entry.request_ids) == (f"requests.{action}", "bridge", [his.pk, theirs.pk])
    assert [i["owner"] for i in entry.detail["items"]] == ["bob", "carol"]
    assert entry.after == "2 requests of bob, carol"


def test_a_batch_on_no_one_elses_request_writes_nothing(provisioned, bridge):
    own = running(bridge)[0]

    calling_from(bridge).post(f"{API}/requests/actions", {"action": "heartbeat", "requests": [{"id": own.pk}]},
                              format="json")

    assert not AuditEntry.objects.filter(action__startswith="request").exists()
