"""Poolweb's tables. Fields, choices, constraints and the indexes the reconciler's queries need;
no policy is decided here (that is reconcile/ and services.py).

Configuration: each provision writes an immutable, numbered ``ConfigVersion`` holding the
document and, as rows, its pools, profiles, connections (both orders), policies, quotas and
queues. ``SiteState`` points at the live version. The ``Draft`` is edited apart from it.
Requests name their policy and profile, so they outlive versions.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from reconcile import Reason, State

NAME_LENGTH = 63
KEY_LENGTH = 64


class ConfigVersion(models.Model):
    number = models.PositiveIntegerField(unique=True)
    document = models.JSONField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # Who provisioned it when that is no account: the operating-system user of a command line.
    author_name = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    comment = models.CharField(max_length=500, blank=True)
    # What it changed against the version before it (reconcile.diff.summarize), made when it is
    # provisioned: the versions page lists 50 at a time, and diffing each pair there read and
    # parsed 100 documents (0.1 s each at the size limits, decision 93).
    summary = models.TextField(blank=True)

    class Meta:
        ordering = ["-number"]

    @property
    def author_label(self) -> str | None:
        """The author as ``GET /config/versions`` shows it: the account's username, else the name."""
        if self.author is not None:
            return self.author.get_username()
        return self.author_name or None

    def __str__(self) -> str:
        return f"version {self.number}"


class Pool(models.Model):
    version = models.ForeignKey(ConfigVersion, on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=NAME_LENGTH)
    display_name = models.CharField(max_length=100, blank=True)  # "": the name
    description = models.TextField(blank=True)
    capacity = models.JSONField(default=dict)  # key → milli-units

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "name"], name="pool_name_per_version")]


class Profile(models.Model):
    version = models.ForeignKey(ConfigVersion, on_delete=models.CASCADE, related_name="profiles")
    name = models.CharField(max_length=NAME_LENGTH)
    display_name = models.CharField(max_length=100, blank=True)  # "": the name
    description = models.TextField(blank=True)
    resources = models.JSONField(default=dict)  # the allotment, key → milli-units
    dynamic = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "name"], name="profile_name_per_version")]


class Connection(models.Model):
    """A profile connected to a pool, in both orders: the profile's pool precedence and the
    pool's execution order of its profiles."""

    profile = models.ForeignKey(Profile, on_delete=models.CASCADE, related_name="connections")
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="connections")
    name = models.CharField(max_length=100)
    precedence = models.PositiveIntegerField()  # 0 = the profile's preferred pool
    execution_position = models.PositiveIntegerField()  # 0 = served first on the pool

    class Meta:
        ordering = ["profile", "precedence"]
        constraints = [models.UniqueConstraint(fields=["profile", "pool"], name="one_connection_per_pair")]


class Policy(models.Model):
    version = models.ForeignKey(ConfigVersion, on_delete=models.CASCADE, related_name="policies")
    name = models.CharField(max_length=NAME_LENGTH)
    display_name = models.CharField(max_length=100, blank=True)  # "": the name
    description = models.TextField(blank=True)
    group_name = models.CharField(max_length=150, blank=True, db_index=True)
    priority = models.IntegerField(default=0)
    min_runtime_seconds = models.PositiveIntegerField(null=True, blank=True)  # R-48; null: none
    max_runtime_seconds = models.PositiveIntegerField(null=True, blank=True)  # R-52; null: no cap
    require_max_runtime = models.BooleanField(default=False)
    on_time_limit = models.CharField(max_length=16, default="end")  # "end" or "requeue"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "name"], name="policy_name_per_version")]


class Quota(models.Model):
    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="quotas")
    scope = models.CharField(max_length=NAME_LENGTH)  # a pool name or "*"
    key = models.CharField(max_length=KEY_LENGTH)
    reserved = models.BigIntegerField(null=True, blank=True)  # milli-units
    limit = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["policy", "scope", "key"], name="one_quota_per_scope_key")]


class Queue(models.Model):
    """A (policy, profile) pair: the policy may use the profile, at ``rank`` in its policy rank."""

    profile = models.ForeignKey(Profile, on_delete=models.CASCADE, related_name="queues")
    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="queues")
    rank = models.PositiveIntegerField()

    class Meta:
        ordering = ["profile", "rank"]
        constraints = [models.UniqueConstraint(fields=["profile", "policy"], name="one_queue_per_pair")]


class Draft(models.Model):
    """The configuration being edited; at most one row (id 1)."""

    document = models.JSONField()
    based_on = models.PositiveIntegerField(null=True, blank=True)  # the version it started from
    # The live version the saver made it from (0: from nothing), when the saver says so; a draft
    # with one is refused once another version is live (services.draft_base). Null: never stale.
    base_version = models.PositiveIntegerField(null=True, blank=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    updated_at = models.DateTimeField(default=timezone.now)


class SiteState(models.Model):
    """The live configuration and the global switch; exactly one row (id 1)."""

    live_version = models.ForeignKey(ConfigVersion, null=True, blank=True, on_delete=models.PROTECT)
    management_enabled = models.BooleanField(default=True)
    # Who last flipped the switch, and when: every console page names them while it is off.
    management_changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                              on_delete=models.SET_NULL, related_name="+")
    management_changed_at = models.DateTimeField(null=True, blank=True)


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


class ApiToken(models.Model):
    """A bearer token; only its SHA-256 is stored. Revoking one deletes it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)  # what its owner calls it ("laptop", "ci")
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8)  # the first characters, to tell tokens apart
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class SignInFailure(models.Model):
    """A failed sign-in from a client address, with the username it was for (blank for a token),
    kept while it counts for the throttle (services/signin.py)."""

    address = models.CharField(max_length=64)
    username = models.CharField(max_length=150, blank=True, default="")
    at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["address", "at"], name="signin_failure_address_at"),
                   models.Index(fields=["username", "at"], name="signin_failure_username_at")]


class PasswordResetAsk(models.Model):
    """An ask to mail a password reset link, kept while it counts for the throttle
    (services/signin.py)."""

    address = models.CharField(max_length=64)
    email = models.CharField(max_length=254)
    at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["address", "at"], name="reset_ask_address_at"),
                   models.Index(fields=["email", "at"], name="reset_ask_email_at")]


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


class DecisionTotal(models.Model):
    """How many decisions of one kind (``grant``, ``preemption``, …) for one policy and reason the
    passes have committed, ever: the counters of ``/metrics`` (decision 150). Added to in the
    pass's own transaction, so a decision rolled back or dropped as a conflict is not counted, and
    nothing prunes it, so a counter never goes down (pass records and the outbox are pruned)."""

    decision = models.CharField(max_length=16)
    policy = models.CharField(max_length=NAME_LENGTH)
    reason = models.CharField(max_length=32, choices=Request.REASONS)
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["decision", "policy", "reason"], name="one_decision_total")]


class HistogramTotal(models.Model):
    """A cumulative histogram of ``/metrics`` (decision 151): ``family`` (``grant_wait`` per policy,
    ``pass_duration`` with no label) and what it has observed, ever. ``buckets`` counts the
    observations per bound of the family's bounds (``services.totals``), not cumulatively, the
    one past the last bound (+Inf) at the end; ``total`` is their sum in seconds. Written by
    passes only, under the pass lock, in their own transaction."""

    family = models.CharField(max_length=32)
    label = models.CharField(max_length=NAME_LENGTH, blank=True)
    buckets = models.JSONField(default=list)
    count = models.BigIntegerField(default=0)
    total = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["family", "label"], name="one_histogram_per_label")]
