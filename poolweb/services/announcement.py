"""Announcing a pass on the event stream (docs/events.md): ``request.updated`` for each request it
moves or whose reason changed, ``pool.updated`` and ``policy.updated`` for the pools and policies
whose numbers it changed, and those of the unannounced changes it takes in (a release or cancel
leaves an ``UnannouncedChange`` for the next pass, decision 49).

Made before the write transaction, where it holds no lock (decisions 50, 62): the announced
request objects as the snapshot's query read them, overlaid with what the pass writes, their
events encoded, and the pools' and policies' states computed from the pass's own values.
Published inside it, after ``planned_rows.write_rows``: only what was written; a row changed under
the pass is a conflict (the states are made again without it) or a renewed lease (its event is
made again with the new one).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from poolweb.models import UnannouncedChange
from poolweb.selectors.live import PolicyState, PoolState, policy_states_of, pool_states_of
from poolweb.selectors.snapshot import NO_WAIT, PassInput, StoredWait
from poolweb.selectors.versions import EngineVersion
from poolweb.services import events
from poolweb.services.planned_rows import PlannedRows
from reconcile import ALL_POOLS, Plan, Request, Snapshot, State


class LiveStates(NamedTuple):
    pools: list[PoolState]
    policies: list[PolicyState]


@dataclass
class Announcement:
    """What a pass tells the event stream, and its events as made before the write."""

    requests: set[int] = field(default_factory=set)  # request.updated for these
    pools: set[str] = field(default_factory=set)  # pool.updated
    policies: set[str] = field(default_factory=set)  # policy.updated
    changes: list[int] = field(default_factory=list)  # the UnannouncedChange rows it takes in
    payloads: dict[int, dict] = field(default_factory=dict)  # the announced request objects
    encoded: dict[int, events.Encoded] = field(default_factory=dict)  # their events
    live_states: LiveStates = field(default_factory=lambda: LiveStates([], []))  # of those pools and policies


def unannounced_changes() -> Announcement:
    """The pools and policies of every ``UnannouncedChange``, which a pass announces and takes in.
    Read before the snapshot: a change committed after this read is left to the next pass."""
    news = Announcement()
    for change_id, pool, policy in UnannouncedChange.objects.values_list("id", "pool", "policy"):
        news.changes.append(change_id)
        news.pools.update([pool] if pool else [])
        news.policies.add(policy)
    return news


def add_plan(news: Announcement, snapshot: Snapshot, waits: dict[int, StoredWait], decided: Plan) -> None:
    """What ``decided`` makes news of: every decision's request, and its pools (where it goes,
    where it was, where it queued) and policy; a wait whose reason or sentence changed; the pools
    and policy of a wait that moved to another queue."""
    before: dict[int, Request] = {}  # the snapshot's requests by id, made when first needed
    for decision in decided.decisions():
        before = before or {r.id: r for r in snapshot.requests}
        request = before[decision.request_id]
        news.requests.add(request.id)
        news.pools.update(p for p in (decision.pool, request.pool, waits.get(request.id, NO_WAIT).queue_pool) if p)
        news.pools.update(_pools_counting(snapshot, request))
        news.policies.add(request.policy)
    for request_id, waiting in decided.waiting.items():
        stored = waits.get(request_id, NO_WAIT)
        if (stored.reason, stored.message) != (waiting.reason.value, waiting.message):
            news.requests.add(request_id)  # a new position alone is not news: every grant shifts thousands
        if stored.queue_pool != waiting.pool:
            before = before or {r.id: r for r in snapshot.requests}
            news.pools.update(p for p in (stored.queue_pool, waiting.pool) if p)
            news.pools.update(_pools_counting(snapshot, before[request_id]))
            news.policies.add(before[request_id].policy)


def _pools_counting(snapshot: Snapshot, request: Request) -> tuple[str, ...]:
    """The pools whose pending count has ``request`` while it waits: every pool of its profile
    (decision 119). A decision or a first wait changes it on each of them."""
    profile = snapshot.config.profile.get(request.profile)
    return profile.pools if profile is not None else ()


def prepare(news: Announcement, read: PassInput, decided: Plan, rows: PlannedRows) -> None:
    """Outside the write lock (on PostgreSQL, the outbox lock): the announced request objects, as
    the snapshot's query read them and overlaid with what the pass will write, their events
    encoded, and the announced pools' and policies' states: ten thousand requests after a burst."""
    news.payloads = events.request_dicts(news.requests, (read.columns, read.rows))
    for request_id, row in news.payloads.items():
        row.update(rows.columns[request_id])
    news.encoded = events.encoded_requests(news.payloads.values())
    news.live_states = live_states(read.version, decided, rows, news)


def publish(news: Announcement, version: EngineVersion, decided: Plan, rows: PlannedRows,
            leases: dict[int, datetime | None]) -> None:
    """The events of what ``write_rows`` wrote, in its transaction; ``leases``: each written row's
    lease as it locked it. The announced changes are taken in."""
    renewed = [request_id for request_id in rows.columns if _renewed_meanwhile(news, rows, request_id, leases)]
    for request_id in renewed:
        news.payloads[request_id]["lease_expires_at"] = leases[request_id]
    news.encoded.update(events.encoded_requests(news.payloads[request_id] for request_id in renewed))
    events.publish_encoded(news.encoded[request_id] for request_id in sorted(news.encoded.keys() & rows.columns))
    # Made again only when rows changed under the pass (rare): a walk over every request.
    events.publish_live(*(live_states(version, decided, rows, news) if rows.dropped else news.live_states))
    UnannouncedChange.objects.filter(pk__in=news.changes).delete()


def _renewed_meanwhile(news: Announcement, rows: PlannedRows, request_id: int,
                       leases: dict[int, datetime | None]) -> bool:
    """Whether an announced request the pass writes without touching its lease had it renewed
    since the announcement was read (a heartbeat): its event must carry the new lease."""
    return (request_id in news.payloads and "lease_expires_at" not in rows.columns[request_id]
            and leases[request_id] != news.payloads[request_id]["lease_expires_at"])


def live_states(version: EngineVersion, decided: Plan, rows: PlannedRows, news: Announcement) -> LiveStates:
    """The announced pools and policies as this pass leaves them, from its own values (no query):
    the snapshot with the plan applied, less the requests that changed under it (they left an
    ``UnannouncedChange``, so the next pass announces them again)."""
    live, holders = [], []
    pending: Counter = Counter()  # per (policy, pool) and (policy, all pools), as policies count
    pending_by_profile: Counter = Counter()  # as pools count (decision 119)
    for request in rows.requests.values():
        if request.id in rows.dropped:
            continue
        if request.state.live:
            live.append(request)
        elif request.state is State.PENDING:
            pending_by_profile[request.profile] += 1
            if request.held_pool:
                holders.append((request.id, request.held_pool, request.resources))
            waiting = decided.waiting.get(request.id)
            if waiting is not None and waiting.pool:
                pending.update([(request.policy, waiting.pool), (request.policy, ALL_POOLS)])
            else:
                pending[(request.policy, ALL_POOLS)] += 1
    pools = pool_states_of(version.config, ((r.pool, r.resources, r.preempted_by) for r in live if r.pool in news.pools),
                           holders, pending_by_profile, news.pools) if news.pools else []
    policies = policy_states_of(version, [r for r in live if r.policy in news.policies], pending,
                                news.policies) if news.policies else []
    return LiveStates(pools, policies)
