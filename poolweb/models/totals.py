"""What is kept for counting: the decisions' totals and histograms of ``/metrics`` (decisions 150,
151) and the closed days of usage (decision 163)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from poolweb.models.config import NAME_LENGTH
from poolweb.models.requests import Request


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


class UsageDay(models.Model):
    """One part of one closed UTC day of usage (docs/usage.md §3), as ``selectors.usage`` computed
    it from the history: ``part`` is a grouping (``policy``, ``profile``, ``pool``, ``user``, or
    ``team``: by owner and policy), ``reservations`` (each one's idle part) or ``hours`` (GPU-seconds
    per policy and hour); ``data`` its rows. A day is kept once it ended long enough ago that no
    change of it can still commit; a month's report then reads 30 days' rows of the parts it shows
    instead of sweeping 10^6 history rows (decision 163). ``method`` is the computation's version:
    an older one's days are computed again."""

    day = models.DateField()
    part = models.CharField(max_length=16)
    method = models.PositiveSmallIntegerField()
    data = models.JSONField()
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["day", "part"], name="one_usage_day_part")]


class BudgetMark(models.Model):
    """The highest threshold (50, 80, 100 percent) of a policy's budget announced in the period
    that starts at ``period_start`` (R-73), one row per policy: a pass writes it with the event, in
    its transaction, so each crossing is announced once per period, and only when the pass
    committed; a row of an earlier period counts as none."""

    policy = models.CharField(max_length=NAME_LENGTH, unique=True)
    period_start = models.DateTimeField()
    threshold = models.PositiveSmallIntegerField()
