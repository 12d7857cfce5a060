"""The configuration's tables: each provision writes an immutable, numbered ``ConfigVersion``
holding the document and, as rows, its pools, profiles, connections (both orders), policies,
quotas and queues. ``SiteState`` points at the live version. The ``Draft`` is edited apart from it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

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
    labels = models.JSONField(default=dict)  # key → text (a Slurm partition, decision 137)

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
    max_wait_seconds = models.PositiveIntegerField(null=True, blank=True)  # R-49; null: never reserves
    budget = models.JSONField(null=True, blank=True)  # the document's budget object; null: none

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
