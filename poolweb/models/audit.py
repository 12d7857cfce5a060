"""The audit log (decisions 154, 155)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class AuditRefused(Exception):
    """The audit log is append-only: an entry is never changed or deleted (decision 154)."""


def _refuse(*args, **kwargs):
    raise AuditRefused(AuditRefused.__doc__)


class AuditQuerySet(models.QuerySet):  # append-only, as AuditEntry
    update = delete = _refuse


class AuditEntry(models.Model):
    """Who did what, when, from where (decision 154), written by ``services.audit.record`` in the act's
    own transaction; append-only (decision 155); kept for good, as versions are. No foreign keys: it
    outlives what it names (``target``: "version:7", "token:<prefix>", "user:<name>", "request:12",
    "management", "draft"; "requests" for a batch, listed in ``request_ids``), so it names it as text."""

    at = models.DateTimeField(default=timezone.now)
    actor = models.CharField(max_length=150)  # the username then, or a command line's user@host
    actor_id = models.BigIntegerField(null=True, blank=True)  # the account's id; null for no account
    origin = models.CharField(max_length=64)  # the client's address, or "manage.py"
    action = models.CharField(max_length=32)  # selectors.audit.ACTIONS
    target = models.CharField(max_length=200)
    before = models.CharField(max_length=200, blank=True)  # the old value, as people read it
    after = models.CharField(max_length=200, blank=True)  # the new one
    request_ids = models.JSONField(default=list, blank=True)  # the requests it is about
    detail = models.JSONField(default=dict, blank=True)  # the rest: names, owners, a version's summary

    objects = AuditQuerySet.as_manager()

    class Meta:  # no ordering: readers order by id (selectors.audit)
        indexes = [models.Index(fields=[name, "id"], name=f"audit_{name}") for name in ("actor", "action", "target")]
        indexes += [models.Index(fields=["at"], name="audit_at")]

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AuditRefused(AuditRefused.__doc__)
        super().save(*args, **kwargs)

    delete = _refuse
