"""poolctl: the job owner's client for Poolweb — a Python API and the ``poolctl`` command line::

    from poolctl import Client

    client = Client()  # POOLWEB_URL and POOLWEB_TOKEN, or what `poolctl login` saved
    with client.allocation(policy="dev", profile="half") as allocation:
        train(pool=allocation.pool)
"""

from __future__ import annotations

__version__ = "0.1.0"

from poolctl.api import Client  # noqa: E402 (after __version__, which the transport reads)
from poolctl.errors import (AuthenticationFailed, Cancelled, Conflict, Expired, InvalidInput, NotFound,  # noqa: E402
                            PermissionRefused, PoolctlError, Preempted, Refused, Rejected, RequestEnded, ServerError,
                            Unreachable, UsageError, WaitTimeout)
from poolctl.models import PolicyState, Pool, QueueEntry, Request  # noqa: E402

__all__ = [
    "AuthenticationFailed", "Cancelled", "Client", "Conflict", "Expired", "InvalidInput", "NotFound",
    "PermissionRefused", "PolicyState", "Pool", "PoolctlError", "Preempted", "QueueEntry", "Refused", "Rejected",
    "Request", "RequestEnded", "ServerError", "Unreachable", "UsageError", "WaitTimeout",
]
