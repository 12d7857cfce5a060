"""Reading the outbox for the stream: "now", missed events, and the resync rule
(poolweb.realtime.outbox)."""

from __future__ import annotations

import json
from datetime import datetime, timezone as dt_timezone
from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from poolweb import sql
from poolweb.models import Event
from poolweb.realtime.outbox import Viewer, events_after, missed_events, must_resync, newest_seq
from poolweb.services.events import POOL_UPDATED, REQUEST_UPDATED, publish

pytestmark = pytest.mark.django_db


def written(count: int, owner=None) -> list[int]:
    with transaction.atomic():
        for n in range(count):
            publish(REQUEST_UPDATED if owner else POOL_UPDATED, {"n": n}, owner_id=owner.pk if owner else None)
    return list(Event.objects.order_by("-seq").values_list("seq", flat=True)[:count])[::-1]


def test_now_is_the_newest_seq_even_once_every_row_is_deleted(db):
    seqs = written(3)
    Event.objects.all().delete()

    assert newest_seq() == seqs[-1]
    assert not must_resync(seqs[-1])
    assert must_resync(seqs[-2])


def test_an_empty_outbox_needs_no_resync_from_now_only(db):
    now = newest_seq()  # 0 on a new database; PostgreSQL keeps rolled-back tests' values

    assert not must_resync(now)
    assert must_resync(now + 1)


@pytest.mark.parametrize("pruned, seen, resync", [
    (0, 0, False),  # nothing pruned
    (2, 2, False),  # only rows the client saw are gone
    (2, 3, False),
    (2, 1, True),   # the row right after the one it saw last is gone
    (3, 0, True),
    (5, 6, False),  # it saw every row
])
def test_resync_iff_a_row_after_the_resume_point_is_gone(db, pruned, seen, resync):
    """Of six rows, the oldest ``pruned`` are deleted; the client saw the oldest ``seen``."""
    seqs = written(6)
    Event.objects.filter(seq__in=seqs[:pruned]).delete()
    resume_from = seqs[seen - 1] if seen else seqs[0] - 1

    assert must_resync(resume_from) is resync


def test_resync_when_resuming_from_beyond_the_newest_seq(db):
    seqs = written(2)

    assert must_resync(seqs[-1] + 1)


def test_missed_events_are_read_in_seq_order_and_filtered_for_the_viewer(bob, carol):
    start = newest_seq()
    written(2, owner=carol)
    written(1)
    written(1, owner=bob)

    bobs = missed_events(start, 10, Viewer(user_id=bob.pk, is_admin=False))
    admins = missed_events(start, 10, Viewer(user_id=0, is_admin=True))

    assert [event.owner_id for event in bobs] == [None, bob.pk]
    assert [event.seq for event in admins] == sorted(event.seq for event in admins) and len(admins) == 4
    assert events_after(start, 2)[-1].seq == admins[1].seq


def test_a_message_carries_the_rows_json_text_as_written(db):
    # Spaced and escaped as no encoder of ours writes it: a relay that decoded and encoded the
    # data again would send it otherwise.
    written = '{"name":  "h100 \\"east\\" \\u2713",\n "used": {"gpu": 0.5}}'
    start = newest_seq()
    with transaction.atomic():
        sql.insert_events([(POOL_UPDATED, None, written)], timezone.now())
    [event] = events_after(start, 10)
    assert event.text == f'{{"seq":{event.seq},"type":"pool.updated","data":{written}}}'
    assert json.loads(event.text)["data"] == {"name": 'h100 "east" ✓', "used": {"gpu": 0.5}}


def test_an_events_data_is_encoded_as_the_api_encodes_it(db):
    at = datetime(2026, 12, 1, 21, 30, 0, 500000, tzinfo=dt_timezone.utc)
    start = newest_seq()
    with transaction.atomic():
        publish(POOL_UPDATED, {"name": "h100", "used": {"gpu": Decimal("0.5")}, "at": at})
    [event] = events_after(start, 10)
    assert json.loads(event.text)["data"] == {"name": "h100", "used": {"gpu": 0.5}, "at": "2026-12-01T21:30:00.500000Z"}
