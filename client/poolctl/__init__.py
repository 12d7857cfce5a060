"""poolctl: the job owner's client for Poolweb — a Python API and the ``poolctl`` command line::

    from poolctl import Client

    client = Client()  # POOLWEB_URL and POOLWEB_TOKEN, or what `poolctl login` saved
    with client.allocation(policy="dev", profile="half") as allocation:
        train(pool=allocation.pool)
"""

from __future__ import annotations

from poolctl.client import Client
from poolctl.errors import (AuthenticationFailed, Cancelled, Conflict, Expired, InvalidInput, NotFound,
                            PermissionRefused, PoolctlError, Preempted, Refused, Rejected, RequestEnded, ServerError,
                            Unreachable, UsageError, WaitTimeout)
from poolctl.models import ActionResult, BatchResult, PolicyState, Pool, Request
from poolctl.version import __version__

__all__ = [
    "ActionResult", "AuthenticationFailed", "BatchResult", "Cancelled", "Client", "Conflict", "Expired", "InvalidInput", "NotFound",
    "PermissionRefused", "PolicyState", "Pool", "PoolctlError", "Preempted", "Refused", "Rejected", "Request",
    "RequestEnded", "ServerError", "Unreachable", "UsageError", "WaitTimeout", "__version__",
]
