"""Rights on the event stream: whose session a handshake may use (its Origin, judged as Django's
CSRF check judges one), and rights checked again while a stream is open — deactivation, a
revoked token, an ended session, admin rights lost — each closing it with its own code."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session

from poolweb.realtime import auth
from poolweb.services.tokens import token_create, token_revoke

from .streams import quick_stream  # noqa: F401 (an autouse fixture: the streams here poll often)
from .streams import (
    _session_cookie, connect, gets_next, in_event_loop, nothing_more, payloads,
    pool, receive, refusal, request_of, write,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def check_rarely(settings):
    """No periodic check within a test: only the check before an event about a request acts."""
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "RECHECK_MS": 600_000}


@pytest.fixture
def check_often(settings):
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "RECHECK_MS": 50}


def _update_user(user: User, **fields) -> None:
    User.objects.filter(pk=user.pk).update(**fields)


update_user = database_sync_to_async(_update_user)


# -- while a stream is open ---------------------------------------------------------------------


@in_event_loop
async def test_a_deactivated_users_stream_closes_before_another_users_request_reaches_it(check_rarely, alice, bob):
    stream = await connect(alice)  # an admin: sees bob's requests
    assert await gets_next(stream, request_of(bob, 1))

    await update_user(alice, is_active=False)
    await write([request_of(bob, 2)])

    assert await refusal(stream) == ("account_disabled", 4403)
    await stream.disconnect()


@in_event_loop
async def test_a_user_who_loses_admin_rights_stops_seeing_others_requests(check_rarely, alice, bob):
    stream = await connect(alice)
    await update_user(alice, is_staff=False)

    seqs = await write([request_of(bob, 1), pool(2)])

    assert await refusal(stream) == ("permissions_changed", 4409)
    await stream.disconnect()
    again = await connect(alice)  # reconnecting and resuming gives what the new rights allow
    await again.send_json_to({"resume_from": seqs[0] - 1})
    assert payloads(await receive(again, 1)) == [{"name": "h100", "n": 2}]
    assert await nothing_more(again)
    await again.disconnect()


@in_event_loop
async def test_a_revoked_tokens_stream_is_closed_without_waiting_for_an_event(check_often, bob):
    row, token = await database_sync_to_async(token_create)(user=bob, name="laptop")
    stream = await connect(origin=None)
    await stream.send_json_to({"token": token, "resume_from": None})
    assert await nothing_more(stream)

    await database_sync_to_async(token_revoke)(user=bob, token_id=row.pk)

    assert await refusal(stream) == ("token_revoked", 4410)
    await stream.disconnect()


@in_event_loop
async def test_a_deactivated_users_quiet_stream_is_closed_within_the_interval(check_often, bob):
    stream = await connect(bob)
    assert await nothing_more(stream)

    await update_user(bob, is_active=False)

    assert await refusal(stream) == ("account_disabled", 4403)
    await stream.disconnect()


@in_event_loop
async def test_a_stream_signed_in_by_a_session_closes_when_the_session_ends(check_often, bob):
    stream = await connect(bob)
    assert await nothing_more(stream)

    await database_sync_to_async(lambda: Session.objects.all().delete())()  # signed out

    assert await refusal(stream) == ("signed_out", 4411)
    await stream.disconnect()


@in_event_loop
async def test_a_stream_whose_rights_hold_keeps_going(check_often, bob):
    stream = await connect(bob)
    assert await nothing_more(stream)  # several checks passed

    assert await gets_next(stream, request_of(bob, 1))
    await stream.disconnect()


@in_event_loop
async def test_the_streams_of_one_session_share_one_check_per_batch_and_still_close(check_rarely, alice, bob,
                                                                                    monkeypatch):
    checked = []
    real = auth.refusal
    monkeypatch.setattr(auth, "refusal", lambda credential: checked.append(credential) or real(credential))
    cookie = await database_sync_to_async(_session_cookie)(alice)  # one browser: one session, three pages
    streams = [await connect(extra=[(b"cookie", cookie)]) for _ in range(3)]
    for stream in streams:
        await stream.send_json_to({"resume_from": None})
    assert all([await nothing_more(stream) for stream in streams])

    await write([request_of(bob, 1)])
    for stream in streams:
        assert payloads(await receive(stream, 1)) == [{"id": 1, "owner": "bob"}]
    assert len(checked) == 1  # one check, begun after the event was read, for the three

    await update_user(alice, is_active=False)
    await write([request_of(bob, 2)])
    for stream in streams:
        assert await refusal(stream) == ("account_disabled", 4403)  # a new batch: a new check
        await stream.disconnect()
    assert len(checked) == 2


# -- the origin of a handshake that carries a session ---------------------------------------------


async def session_used(user, origin: bytes | None, host: bytes, extra: list[tuple[bytes, bytes]] = ()) -> bool:
    """Whether a handshake from a page of ``origin`` to ``host`` is signed in by the session."""
    stream = await connect(user, origin=origin, host=host, extra=extra)
    await stream.send_json_to({"resume_from": None})  # refused at once when anonymous
    used = await stream.receive_nothing(timeout=0.2)
    await stream.disconnect()
    return used


@pytest.mark.parametrize("origin", [b"http://127.0.0.1:1", b"https://127.0.0.1:18731", b"http://LOCALHOST:9999",
                                    b"http://127.0.0.1", b"null", b"not a url"])
@in_event_loop
async def test_a_page_of_another_scheme_host_or_port_cannot_use_the_session(alice, origin):
    assert not await session_used(alice, origin, b"127.0.0.1:18731")


@pytest.mark.parametrize("origin", [b"http://127.0.0.1:18731", None])
@in_event_loop
async def test_the_sites_own_pages_and_programs_use_the_session(alice, origin):
    assert await session_used(alice, origin, b"127.0.0.1:18731")


@in_event_loop
async def test_a_host_outside_allowed_hosts_is_not_its_own_origin(alice):
    # A DNS-rebinding page: its Origin matches the Host it sends, but that host is not ours.
    assert not await session_used(alice, b"http://evil.example:8000", b"evil.example:8000")


@pytest.mark.parametrize("origin, used", [
    (b"https://console.example.com", True), (b"https://a.b.example.com", True), (b"https://example.org", True),
    (b"http://console.example.com", False), (b"https://example.com.evil", False), (b"https://evil.org", False),
])
@in_event_loop
async def test_trusted_origins_count_with_their_scheme_and_wildcards(settings, alice, origin, used):
    settings.CSRF_TRUSTED_ORIGINS = ["https://*.example.com", "https://example.org"]

    assert await session_used(alice, origin, b"127.0.0.1:8000") is used


@pytest.mark.parametrize("origin, used", [(b"https://poolweb.example", True), (b"http://poolweb.example", False)])
@in_event_loop
async def test_behind_a_tls_proxy_the_sites_own_origin_is_https(settings, alice, origin, used):
    settings.ALLOWED_HOSTS = ["poolweb.example"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

    assert await session_used(alice, origin, b"poolweb.example", [(b"x-forwarded-proto", b"https")]) is used
