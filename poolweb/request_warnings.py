"""What a submitter should know about a request that was accepted: warnings, not refusals (issue
20.3). One function for every place that says them — the API's request object, the console's
request page, and through the API ``poolctl submit`` — so they read the same everywhere."""

from __future__ import annotations

from typing import Any

NO_RETRIES = ("preemptible with no retries: if it is preempted (another team reclaiming its share, a "
              "higher priority needing the room) it ends as preempted and is not queued again; give it "
              "max_retries to have it queued again")


def request_warnings(request: Any) -> list[dict]:
    """``[{"code", "message"}]`` for a request (anything with ``preemptible`` and ``max_retries``:
    a model row, a submission's fields); empty when there is nothing to warn about."""
    if request.preemptible and not request.max_retries:
        return [{"code": "no_retries", "message": NO_RETRIES}]
    return []
