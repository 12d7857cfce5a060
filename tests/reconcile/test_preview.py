"""Preview (R-55…R-57): what provisioning a new configuration would do, decided by the planner."""

from __future__ import annotations

import pytest

from reconcile import State
from reconcile.preview import preview
from reconcile.quota import TermsCache
from reconcile.report import usage_report
from tests.reconcile.builders import config, policy, pool, profile, req, snapshot


def _live(id, policy_name, profile_name, pool_name, **resources):
    return req(id, policy_name, profile_name, state=State.ALLOCATED, pool=pool_name, **resources)


BASE = config(
    pool("a", gpu=4), pool("b", gpu=4),
    policy("dev", "*:gpu 2/8"), policy("ops", "a:gpu 2/4", priority=5),
    profile("one", ("a", "b"), ("dev", "ops"), gpu=1),
    profile("two", "b", "dev", gpu=2),
)


def _summary(result):
    return {
        "refusals": [r.message for r in result.refusals],
        "cancelled": [(d.request_id, d.reason.value) for d in result.plan.cancellations],
        "rejected": [(d.request_id, d.reason.value) for d in result.plan.rejections],
        "granted": [(d.request_id, d.pool) for d in result.plan.grants],
        "preempted": [(d.request_id, d.preempted_by) for d in result.plan.preemptions],
    }


def test_it_cancels_requests_whose_queue_is_removed_and_rejects_the_ineligible():
    state = snapshot(BASE, req(1, "dev", "two", gpu=2), req(2, "ops", "one", gpu=1), _live(3, "dev", "one", "a", gpu=1))
    draft = config(
        pool("a", gpu=4), pool("b", gpu=1),
        policy("dev", "*:gpu 2/8"), policy("ops", "a:gpu 2/4", priority=5),
        profile("one", ("a", "b"), ("dev",), gpu=1),  # ops no longer on "one": its queue is gone
        profile("two", "b", "dev", gpu=2),  # b shrank to 1 gpu: 2 can never fit
    )
    assert _summary(preview(state, draft)) == {
        "refusals": [], "cancelled": [(2, "QueueRemoved")], "rejected": [(1, "ExceedsPoolCapacity")],
        "granted": [], "preempted": [],
    }


def test_it_refuses_removing_a_pool_profile_or_policy_that_holds_live_requests():
    state = snapshot(BASE, _live(1, "ops", "one", "a", gpu=1), _live(2, "dev", "two", "b", gpu=2))
    draft = config(pool("b", gpu=4), policy("dev"), profile("two", "b", "dev", gpu=2))
    result = preview(state, draft)
    assert not result.provisionable
    assert [r.message for r in result.refusals] == [
        "pool a still holds live request(s) 1",
        "profile one still holds live request(s) 1",
        "policy ops still holds live request(s) 1",
    ]


def test_removing_an_idle_pool_is_allowed():
    state = snapshot(BASE, _live(2, "dev", "two", "b", gpu=2))
    draft = config(pool("b", gpu=4), policy("dev"), profile("two", "b", "dev", gpu=2))
    assert preview(state, draft).provisionable


def test_more_capacity_grants_the_waiting_and_shows_usage_after():
    state = snapshot(BASE, _live(1, "dev", "two", "b", gpu=2), _live(2, "dev", "two", "b", gpu=2), req(3, "dev", "two", gpu=2))
    draft = config(
        pool("a", gpu=4), pool("b", gpu=6),
        policy("dev", "*:gpu 2/8"), policy("ops", "a:gpu 2/4", priority=5),
        profile("one", ("a", "b"), ("dev", "ops"), gpu=1), profile("two", "b", "dev", gpu=2),
    )
    result = preview(state, draft)
    assert _summary(result)["granted"] == [(3, "b")]
    before = {(u.policy, u.scope, u.key): (u.usage, u.borrowed) for u in result.usage_before}
    after = {(u.policy, u.scope, u.key): (u.usage, u.borrowed) for u in result.usage_after}
    assert before[("dev", "*", "gpu")] == (4000, 2000)
    assert after[("dev", "*", "gpu")] == (6000, 4000)


def test_raising_a_priority_in_the_draft_shows_the_preemption_it_causes():  # R-41 via provision
    flat = config(*BASE.pools, *BASE.profiles, policy("dev"), policy("ops"))
    full = [_live(i, "dev", "one", "a", gpu=1, allocated_s=i) for i in (1, 2, 3, 4)]
    full += [_live(i, "dev", "two", "b", gpu=2, allocated_s=i) for i in (5, 6)]
    state = snapshot(flat, *full, req(7, "ops", "one", gpu=1))
    assert _summary(preview(state, flat))["preempted"] == []  # equal priority, no reservation: nobody
    raised = config(*BASE.pools, *BASE.profiles, policy("dev"), policy("ops", priority=5))
    # On a, the first pool of "one": dev's newest allocation there goes.
    assert _summary(preview(state, raised))["preempted"] == [(4, 7)]


def test_a_preview_never_changes_its_snapshot():
    state = snapshot(BASE, req(1, "dev", "two", gpu=2), _live(2, "dev", "one", "a", gpu=1))
    before = (state.requests, state.config)
    preview(state, config(pool("b", gpu=4), policy("dev"), profile("two", "b", "dev", gpu=2)))
    assert (state.requests, state.config) == before


def test_a_lowered_limit_shows_over_commitment_and_keeps_live_work():
    state = snapshot(BASE, *[_live(i, "dev", "one", "a", gpu=1) for i in (1, 2, 3)])
    draft = config(*BASE.pools, *BASE.profiles, policy("dev", "*:gpu 1/2"), policy("ops", "a:gpu 2/4", priority=5))
    result = preview(state, draft)
    assert result.provisionable and result.plan.empty
    over = [(u.policy, u.scope, u.usage, u.limit) for u in usage_report(draft, state.requests) if u.over_limit]
    assert over == [("dev", "*", 3000, 2000)]


def test_the_live_configurations_kept_terms_serve_the_usage_before():
    state = snapshot(BASE, *[_live(i, "dev", "one", "a", gpu=1) for i in (1, 2, 3)])
    draft = config(*BASE.pools, *BASE.profiles, policy("dev", "*:gpu 1/2"), policy("ops", "a:gpu 2/4", priority=5))
    kept = TermsCache(BASE)
    assert preview(state, draft, kept) == preview(state, draft)
    with pytest.raises(ValueError, match="another configuration"):
        preview(state, draft, TermsCache(draft))  # the proposed configuration's are not the live one's
