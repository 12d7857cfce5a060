"""The Python API's front: ``Client`` is the REST API (``api.Api``) plus waiting for capacity
(``watch``) and holding it (``allocation``)::

    client = Client()                               # POOLWEB_URL / POOLWEB_TOKEN, or `poolctl login`
    request = client.submit(policy="dev", profile="half")
    request = client.wait(request, timeout=600)     # allocated, or Rejected / Cancelled / Expired
    client.release(request)

or, heartbeats and release included::

    with client.allocation(policy="dev", profile="half") as allocation:
        train(allocation.pool)

The modules depend one way: ``api`` (one call, one answer) ← ``watch`` (a request over time) ←
``allocation`` (holding it) ← ``client``.
"""

from __future__ import annotations

from typing import Any

from poolctl.allocation import Allocation
from poolctl.api import Api, RequestRef
from poolctl.models import Request
from poolctl.watch import ProgressHook, wait_while_pending


class Client(Api):
    def wait(self, request: RequestRef, timeout: float | None = None, *,
             progress: ProgressHook | None = None) -> Request:
        """Until the request is no longer pending (``watch.wait_while_pending``): the request once it
        holds capacity; ``Rejected``, ``Cancelled``, ``Expired``, ``Preempted`` or ``WaitTimeout``
        otherwise. ``progress(request, watch)`` is called about every second meanwhile."""
        return wait_while_pending(self, request, timeout, progress=progress)

    def allocation(self, *, policy: str, profile: str, timeout: float | None = None, **submission: Any) -> Allocation:
        """A context manager: submit, wait, keep the lease alive, release on exit (see Allocation)."""
        return Allocation(self, dict(policy=policy, profile=profile, **submission), timeout=timeout)
