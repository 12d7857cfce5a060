"""Asking for a reconcile pass after something changed (submit, release, cancel, provision,
management switch). Services call ``reconcile_soon()`` once their own transaction is done.

Until the background worker takes passes over, a pass runs inline, right away."""

from __future__ import annotations

from poolweb.services.reconciler import reconcile_pass


def reconcile_soon() -> None:
    reconcile_pass()
