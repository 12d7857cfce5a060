"""Every reason code a request can carry, in one enum (docs/scheduling.md §9), and the order that picks one.

A pending request shows the reason that others finishing cannot cure; lower comes first:

>>> SEVERITY[Reason.WAITING_FOR_QUOTA] < SEVERITY[Reason.WAITING_FOR_CAPACITY]
True
"""

from __future__ import annotations

import enum


class Reason(enum.StrEnum):
    # Why a pending request waits (§9).
    MANAGEMENT_DISABLED = "ManagementDisabled"
    WAITING_FOR_QUOTA = "WaitingForQuota"
    WAITING_FOR_RESERVATION = "WaitingForReservation"
    WAITING_FOR_PREEMPTION = "WaitingForPreemption"
    WAITING_FOR_PROTECTED_VICTIMS = "WaitingForProtectedVictims"
    RESERVING_CAPACITY = "ReservingCapacity"
    BLOCKED_BY_HIGHER_PRIORITY = "BlockedByHigherPriority"
    WAITING_FOR_CAPACITY = "WaitingForCapacity"
    # Why a request can never run.
    NO_CONNECTED_POOL = "NoConnectedPool"
    EXCEEDS_POOL_CAPACITY = "ExceedsPoolCapacity"
    RESOURCE_NOT_IN_POOL = "ResourceNotInPool"
    EXCEEDS_LIMIT = "ExceedsLimit"
    EXCEEDS_RESERVED = "ExceedsReserved"
    # Refused at submission by the policy's spent budget, not by eligibility.
    BUDGET_SPENT = "BudgetSpent"
    # Why a request stopped or moved.
    PREEMPTED_BY_PRIORITY = "PreemptedByPriority"
    RECLAIMED = "Reclaimed"
    LEASE_EXPIRED = "LeaseExpired"
    TIME_LIMIT = "TimeLimit"  # its run limit came
    TIME_LIMIT_NEAR = "TimeLimitNear"  # an allocated request's run limit comes within the grace
    CANCELLED_BY_USER = "CancelledByUser"
    QUEUE_REMOVED = "QueueRemoved"
    RELEASED = "Released"
    # Added by Poolweb (docs/decisions.md): a pending request that has not been judged by a
    # pass yet, and an allocated request's reason.
    SUBMITTED = "Submitted"
    GRANTED = "Granted"


# §9: the first of these that holds is shown, because the ones before cannot be cured by
# other requests finishing. Of the policy's own two, the non-preemptible share goes first: it
# outlasts the limit (docs/decisions.md).
_SEVERITY = (
    Reason.MANAGEMENT_DISABLED,
    Reason.WAITING_FOR_RESERVATION,
    Reason.WAITING_FOR_QUOTA,
    Reason.WAITING_FOR_PREEMPTION,
    Reason.WAITING_FOR_PROTECTED_VICTIMS,
    Reason.RESERVING_CAPACITY,
    Reason.BLOCKED_BY_HIGHER_PRIORITY,
    Reason.WAITING_FOR_CAPACITY,
)
SEVERITY = {reason: place for place, reason in enumerate(_SEVERITY)}
