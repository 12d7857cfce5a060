"""What does one item of ``POST /requests/batch`` and ``POST /requests/actions`` cost the server?
On SQLite and PostgreSQL, each in a child process with a throwaway database (bench/runtime.py's
way), through Django's whole stack (test client, no socket), so the CPU time is the process's.

- ``submit``: ``BATCHES`` batches of ``ITEMS`` submissions, as the Slurm bridge sends them (a
  service account submitting for four users, each item with its idempotency key);
- ``heartbeat`` and ``release``: one ``/requests/actions`` call each over the ``ITEMS``
  requests of a batch, allocated first by the bench.

The pass a batch asks for is not run (its loop's work, the same whatever the batch): what is
timed is what the call itself costs. Per item: the median batch's wall and CPU milliseconds
divided by its items. Merges figures into the "request_batches" section of results.json.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from bench.results import merge_section, sized
from bench.runtime import figures_on_both, print_both

BATCHES = sized(5, 1)
ITEMS = sized(200, 10)
OWNERS = ("ann", "ben", "cid", "dee")

ROWS = (  # key, label
    ("submit_item_ms", "POST /requests/batch, per item (ms)"),
    ("submit_item_cpu_ms", "  its CPU time (ms)"),
    ("heartbeat_item_ms", "POST /requests/actions heartbeat, per item (ms)"),
    ("heartbeat_item_cpu_ms", "  its CPU time (ms)"),
    ("release_item_ms", "POST /requests/actions release, per item (ms)"),
    ("release_item_cpu_ms", "  its CPU time (ms)"),
)


def main() -> None:
    figures = figures_on_both("request_batches", "measure")
    print(f"{ITEMS} items a batch, median of {BATCHES} batches")
    print_both(ROWS, figures, width=50, digits=2)
    merge_section("request_batches", figures, "measured_at")


def measure() -> dict[str, float]:
    from django.contrib.auth.models import Group, Permission, User
    from rest_framework.test import APIClient

    from bench.documents import two_teams
    from bench.runtime import setup_database
    from poolweb.models import Request as RequestRow
    from poolweb.services import requests as request_services
    from poolweb.services.config import config_provision_document

    admin = setup_database()
    config_provision_document(document=_document(two_teams()), author=admin)
    bridge = User.objects.create_user("bridge", is_staff=True)
    bridge.user_permissions.add(Permission.objects.get(codename="submit_for_others"))
    dev = Group.objects.get_or_create(name="dev")[0]
    for name in OWNERS:
        User.objects.create_user(name).groups.add(dev)
    request_services.reconcile_soon = lambda trigger: False  # the pass is the loop's, not timed here
    client = APIClient(HTTP_HOST="localhost")
    client.force_authenticate(bridge)
    timed: dict[str, list[tuple[float, float]]] = {"submit": [], "heartbeat": [], "release": []}
    for batch in range(BATCHES):
        items = [{"policy": "dev", "profile": "half", "owner": OWNERS[n % len(OWNERS)], "name": f"job-{n}",
                  "idempotency_key": f"slurm:c1:{batch * ITEMS + n}"} for n in range(ITEMS)]
        results, took = _timed(client, "/api/v1/requests/batch", {"requests": items})
        assert all(r["status"] == 201 for r in results), results[:3]
        timed["submit"].append(took)
        ids = [r["request"]["id"] for r in results]
        RequestRow.objects.filter(pk__in=ids).update(state="allocated", pool="a100", reason="Granted",
                                                     allocated_at=time_now(), lease_expires_at=time_now(3600))
        for action in ("heartbeat", "release"):
            results, took = _timed(client, "/api/v1/requests/actions",
                                   {"action": action, "requests": [{"id": i} for i in ids]})
            assert all(r["status"] == 200 for r in results), results[:3]
            timed[action].append(took)
    figures: dict[str, float] = {}
    for name, runs in timed.items():
        wall, cpu = sorted(runs)[len(runs) // 2]
        figures[f"{name}_item_ms"], figures[f"{name}_item_cpu_ms"] = wall / ITEMS, cpu / ITEMS
        figures[f"{name}_item_ms_all"] = statistics.mean(w for w, _ in runs) / ITEMS
    return figures


def time_now(seconds: float = 0):
    from datetime import timedelta

    from django.utils import timezone

    return timezone.now() + timedelta(seconds=seconds)


def _timed(client, path: str, body: dict) -> tuple[list[dict], tuple[float, float]]:
    """The call's results, and its wall and CPU milliseconds."""
    started, cpu = time.perf_counter(), time.process_time()
    response = client.post(path, body, format="json")
    took = ((time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000)
    assert response.status_code == 200, response.content[:300]
    return response.json()["results"], took


def _document(policies: list[dict]) -> dict:
    """One pool the batches' requests fit in many times over."""
    return {"pools": [{"name": "a100", "capacity": {"gpu": 4096}}],
            "profiles": [{"name": "half", "resources": {"gpu": 0.5}, "connections": [{"pool": "a100"}],
                          "policies": ["dev", "research"]}],
            "policies": policies}


if __name__ == "__main__":
    if len(sys.argv) > 1:
        import django

        django.setup()
        print(json.dumps({"measure": measure}[sys.argv[1]]()))
    else:
        main()
