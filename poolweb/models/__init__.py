"""Poolweb's tables. Fields, choices, constraints and the indexes the reconciler's queries need;
no policy is decided here (that is reconcile/ and services/). One module per concern:
``config`` (versions and the draft), ``requests`` (requests, their history, the outbox, passes),
``accounts`` (tokens, the sign-in throttle, the directory, service accounts), ``totals`` (what /metrics and usage
reports count) and ``audit``; every model is importable from here.
"""

from __future__ import annotations

from poolweb.models.accounts import ApiToken, DirectoryAccount, DirectoryGroup, PasswordResetAsk, ServiceAccount, SignInFailure
from poolweb.models.audit import AuditEntry, AuditQuerySet, AuditRefused
from poolweb.models.config import (
    KEY_LENGTH, NAME_LENGTH, ConfigVersion, Connection, Draft, Policy, Pool, Profile, Queue, Quota, SiteState,
)
from poolweb.models.requests import Event, PassRecord, PassTaskFlag, Request, RequestChange, UnannouncedChange
from poolweb.models.totals import BudgetMark, DecisionTotal, HistogramTotal, UsageDay

__all__ = [
    "BudgetMark",
    "KEY_LENGTH",
    "NAME_LENGTH",
    "ConfigVersion",
    "Pool",
    "Profile",
    "Connection",
    "Policy",
    "Quota",
    "Queue",
    "Draft",
    "SiteState",
    "Request",
    "RequestChange",
    "Event",
    "PassRecord",
    "UnannouncedChange",
    "PassTaskFlag",
    "ApiToken",
    "SignInFailure",
    "PasswordResetAsk",
    "DirectoryGroup",
    "DirectoryAccount",
    "ServiceAccount",
    "DecisionTotal",
    "HistogramTotal",
    "UsageDay",
    "AuditRefused",
    "AuditQuerySet",
    "AuditEntry",
]
