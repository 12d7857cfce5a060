"""Requests and what passes leave behind: their history, the event outbox, pass records, the numbers
a release leaves for the next pass to announce, and the flag that coalesces the worker's passes.
Requests name their policy and profile, so they outlive versions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from poolweb.models.config import NAME_LENGTH
from reconcile import Reason, State


class Request(models.Model):
    STATES = [(s.value, s.value) for s in State]
    REASONS = [(r.value, r.value) for r in Reason]

    name = models.CharField(max_length=200, blank=True)
    policy = models.CharField(max_length=NAME_LENGTH)
    profile = models.CharField(max_length=NAME_LENGTH)
    # No index of its own: request_owner_state leads with the owner (every index is rewritten by
    # a pass's UPDATEs, decision 63).
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="requests",
                              db_index=False)
    resources = models.JSONField()  # key → milli-units, step_run included
    preemptible = models.BooleanField(default=True)
    max_retries = models.PositiveSmallIntegerField(default=0)
    attempt = models.PositiveSmallIntegerField(default=1)
    lease_seconds = models.PositiveIntegerField(default=300)
    max_runtime_seconds = models.PositiveIntegerField(null=True, blank=True)  # declared; null: none
    labels = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=16, choices=STATES, default=State.PENDING.value)
    reason = models.CharField(max_length=32, choices=REASONS, default=Reason.SUBMITTED.value)
    message = models.TextField(blank=True)
    pool = models.CharField(max_length=NAME_LENGTH, null=True, blank=True)  # while live
    queue_pool = models.CharField(max_length=NAME_LENGTH, null=True, blank=True)  # while pending
    position = models.PositiveIntegerField(null=True, blank=True)  # while pending
    # R-54, while pending: when it is estimated to start (null: unknown) and on what ends
    # (reconcile.eta.BASES; "" before its first pass); its confidence follows from the basis.
    eta = models.DateTimeField(null=True, blank=True)
    eta_basis = models.CharField(max_length=20, blank=True, default="")
    preempted_by = models.BigIntegerField(null=True, blank=True)
    held_pool = models.CharField(max_length=NAME_LENGTH, null=True, blank=True)
    submitted_at = models.DateTimeField(default=timezone.now)
    allocated_at = models.DateTimeField(null=True, blank=True)
    # its place among the grants of its pass, which share ``allocated_at``: the two together
    # are the order of the grants ("oldest first" of borrowing, "newest first" of victims).
    grant_order = models.PositiveIntegerField(default=0)
    time_limit_at = models.DateTimeField(null=True, blank=True)  # while live, when its run ends
    preempted_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    # The account that submitted it for its owner (``submit_for_others``), its username as it was
    # then; null when the owner submitted it. Text, not a key: the audit outlives the account, and
    # the request object and a pass's events need no join for it (decision 131).
    submitted_by = models.CharField(max_length=150, null=True, blank=True)

    class Meta:
        ordering = ["id"]
        permissions = [("submit_for_others", "Can submit requests owned by another user")]
        indexes = [
            models.Index(fields=["state", "pool"], name="request_state_pool"),
            models.Index(fields=["owner", "state"], name="request_owner_state"),
            models.Index(fields=["policy", "state"], name="request_policy_state"),
            # Forgetting old ones. Of finished requests only: a live or pending row has no entry to
            # rewrite when a pass moves it to another page.
            models.Index(fields=["finished_at"], name="request_finished_at", condition=Q(finished_at__isnull=False)),
        ]
        # An Idempotency-Key is the submitting account's: the owner's when it submitted, else the
        # submitter's, whoever the owner (decision 131). Partial: only rows with a key have entries.
        constraints = [
            models.UniqueConstraint(fields=["owner", "idempotency_key"],
                                    condition=Q(idempotency_key__isnull=False, submitted_by__isnull=True),
                                    name="one_request_per_idempotency_key"),
            models.UniqueConstraint(fields=["submitted_by", "idempotency_key"],
                                    condition=Q(idempotency_key__isnull=False, submitted_by__isnull=False),
                                    name="one_request_per_submitter_key"),
        ]


class RequestChange(models.Model):
    """One change of a request's state (its history, api.md ``GET /requests/{id}/history``), written
    in the transaction of the change itself."""

    request = models.ForeignKey(Request, on_delete=models.CASCADE, related_name="changes", db_constraint=False,
                                db_index=False)  # request_change_order leads with it
    at = models.DateTimeField()
    state = models.CharField(max_length=16, choices=Request.STATES)
    reason = models.CharField(max_length=32, choices=Request.REASONS)
    message = models.TextField(blank=True)
    attempt = models.PositiveSmallIntegerField()
    pool = models.CharField(max_length=NAME_LENGTH, null=True, blank=True)

    class Meta:
        ordering = ["request", "id"]
        indexes = [models.Index(fields=["request", "id"], name="request_change_order")]


class Event(models.Model):
    """The outbox of the event stream (docs/events.md): written in the transaction of the decision it
    reports, so a rolled-back decision sends nothing and a committed one is never lost.

    ``seq`` is the primary key; writers take the outbox lock first (services.events), so rows
    commit in ``seq`` order and a relay reading ``seq > last`` never skips one. ``owner`` is the
    user an event is about (a request's owner) or null for the aggregate state everyone sees.
    """

    seq = models.BigAutoField(primary_key=True)
    type = models.CharField(max_length=32)
    # Read by seq only (a reader filters seq > n, then by owner): no index on the owner, which a
    # pass would write 10^4 times after a burst; deleting a user scans the kept outbox.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="+", db_constraint=False, db_index=False)
    # The JSON text the stream sends, encoded once by its writer (sql.json_text). Text, not jsonb:
    # PostgreSQL does not parse it on insert (half of inserting a pass's 10^4 events) and a
    # reader does not decode and encode it again for each message (decision 77).
    data = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["seq"]


class PassRecord(models.Model):
    """One reconcile pass that wrote something (or failed): when, how long, what it decided."""

    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    duration_ms = models.FloatField()
    trigger = models.CharField(max_length=32, blank=True)
    pending = models.PositiveIntegerField(default=0)
    live = models.PositiveIntegerField(default=0)
    grants = models.PositiveIntegerField(default=0)
    preemptions = models.PositiveIntegerField(default=0)
    evictions = models.PositiveIntegerField(default=0)
    expiries = models.PositiveIntegerField(default=0)
    rejections = models.PositiveIntegerField(default=0)
    cancellations = models.PositiveIntegerField(default=0)
    conflicts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-started_at"]


class UnannouncedChange(models.Model):
    """A pool's and a policy's numbers changed outside a pass (a release or a cancel) and not yet
    announced: the next pass announces them (``pool.updated``, ``policy.updated``) and deletes the
    row. Written in the change's transaction, so a change rolled back leaves none; announcing at
    the change itself meant reading every live and queued request of the pool and the policy on
    every release."""

    pool = models.CharField(max_length=NAME_LENGTH, blank=True)  # "" for a request on no pool
    policy = models.CharField(max_length=NAME_LENGTH)


class PassTaskFlag(models.Model):
    """One row whose flag is raised while a pass task is queued and has not started: only the
    trigger that raises it queues a task, so a burst queues one (services.triggers; without the
    pass loop only)."""

    raised = models.BooleanField(default=False)
