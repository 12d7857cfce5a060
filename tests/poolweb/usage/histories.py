"""A small history whose usage is computed by hand in test_usage_api.py (docs/usage.md §5).

Period 2026-11-01 00:00–10:00 UTC. Version 1 (dev and research reserve 4 gpu over all pools) is
live from the day before; version 2, provisioned at 05:00, lowers dev's reservation to 2.

- R1 bob, dev/4xgpu, 4 gpu: granted on h100 01:00, preempted 03:00 (preempting until 03:30),
  re-queued, granted on a100 04:00, released 06:00.
- R2 bob, dev/job, 2 gpu on h100: granted the day before at 23:00, released 02:00.
- R3 alice, dev/job, 2 gpu on h100: granted 02:30, still allocated.
- R4 alice, research/half, 0.5 gpu on a100: granted 08:00, released 12:00.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from poolweb.models import ConfigVersion, Request, RequestChange
from poolweb.services import config as config_services

from tests.poolweb.conftest import document

DAY = datetime(2026, 11, 1, tzinfo=timezone.utc)
SINCE, UNTIL = "2026-11-01T00:00:00Z", "2026-11-01T10:00:00Z"


def at(text: str) -> datetime:
    """``"03:30"`` on the day, ``"-23:00"`` on the day before."""
    day = DAY - timedelta(days=1) if text.startswith("-") else DAY
    hours, minutes = text.lstrip("-").split(":")
    return day.replace(hour=int(hours), minute=int(minutes))


def provision(author, dev_reserved: int, when: datetime) -> None:
    doc = document()
    doc["policies"][0]["quotas"][0]["reserved"] = dev_reserved
    version = config_services.config_provision_document(document=doc, author=author)
    ConfigVersion.objects.filter(pk=version.pk).update(created_at=when)


def request(owner, policy: str, profile: str, milli_gpu: int, changes: list[tuple[str, str, str | None]],
            state: str) -> Request:
    """A request straight in the database with its history: (time, state, pool) per change."""
    row = Request.objects.create(owner=owner, policy=policy, profile=profile, state=state,
                                 resources={"gpu": milli_gpu, "step_run": 1000}, submitted_at=at(changes[0][0]),
                                 finished_at=at(changes[-1][0]) if state == "released" else None,
                                 pool=changes[-1][2] if state == "allocated" else None)
    attempt = 1
    for when, change, pool in changes:
        if change == "pending" and RequestChange.objects.filter(request=row).exists():
            attempt += 1
        RequestChange.objects.create(request=row, at=at(when), state=change, reason="Granted", attempt=attempt,
                                     pool=pool)
    return row


def the_day(alice, bob) -> dict[str, Request]:
    provision(alice, 4, at("-00:00"))
    provision(alice, 2, at("05:00"))
    return {
        "R1": request(bob, "dev", "4xgpu", 4000, [("00:30", "pending", None), ("01:00", "allocated", "h100"),
                                                 ("03:00", "preempting", "h100"), ("03:30", "pending", None),
                                                 ("04:00", "allocated", "a100"), ("06:00", "released", None)],
                      "released"),
        "R2": request(bob, "dev", "job", 2000, [("-22:00", "pending", None), ("-23:00", "allocated", "h100"),
                                               ("02:00", "released", None)], "released"),
        "R3": request(alice, "dev", "job", 2000, [("02:00", "pending", None), ("02:30", "allocated", "h100")],
                      "allocated"),
        "R4": request(alice, "research", "half", 500, [("07:00", "pending", None), ("08:00", "allocated", "a100"),
                                                      ("12:00", "released", None)], "released"),
    }
