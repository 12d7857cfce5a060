"""Why each pending request waits, with the numbers, and its place in the order the next pass serves (§9).

Each group is judged once per eligible pool; within a pool the condition others finishing
cannot cure is shown (own limit before capacity). Across pools the request waits for the
easiest of them, so the most curable pool reason is its code, while the message lists every
pool: "pool h100 is short of 2 gpu (6 of 8 in use); pool bare-metal is short of 4 gpu (8 of 8
in use)".

>>> config = Config((Pool("h100", Vector.of(gpu=8)),),
...                 (Profile("job", Vector.of(gpu=1), True, ("h100",), ("t",)),), (Policy("t"),))
>>> running = Request(1, "t", "job", Vector.of(gpu=6), t0, State.ALLOCATED, pool="h100", allocated_at=t0)
>>> plan(Snapshot(t0, config, (running, Request(2, "t", "job", Vector.of(gpu=4), t0)))).waiting[2]
Waiting(reason=<Reason.WAITING_FOR_CAPACITY: 'WaitingForCapacity'>, message='pool h100 is short of 2 gpu (6 of 8 in use)', position=1, pool='h100')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from itertools import repeat
from operator import attrgetter
from typing import NamedTuple

from .groups import QueueGroup
from .ledger import Ledger
from .model import WAITING_FOR_CAPACITY, Request, scope_text
from .plan import Waiting
from .quantity import Vector, quantity_text
from .quota import KeyTerms, PoolTerms
from .reasons import SEVERITY, Reason

DISABLED = "resource management is disabled: nothing is granted until it is enabled again"


class PoolReason(NamedTuple):
    """Why a group's requests wait on one of their pools."""

    pool: str
    reason: Reason
    message: str


class FirstWaiter(NamedTuple):
    """The first request in service order short of room on a pool (see _behind_higher_priority)."""

    priority: int
    request: Request
    policy: str


def explain_waiting(
    ordered: Sequence[QueueGroup], places: Mapping[int, Sequence[int]], ledger: Ledger,
    victims_of: Mapping[int, list[int]], enabled: bool, reserving: Callable[[Request], str] | None = None,
) -> dict[int, Waiting]:
    """Waiting (reason, message, position, queue pool) for every waiting request; ``places`` give
    each group's members' places in the order a pass serves them (groups.serving_places), which
    are the positions. ``reserving`` tells why a request holding a reservation (R-49) waits."""
    judged, by_pool = _judge_groups(ordered, ledger, enabled)
    waiting: dict[int, Waiting] = {}
    for group in ordered:
        members, group_places = group.waiting, places[id(group)]
        reason, message = judged[id(group)]
        queue = group.pools[0]
        reserves = members[0].id in ledger.holds  # reserving members come first in a group
        if (group.holder is not None or group.preempted or reserves) and \
                not ledger.holds.keys().isdisjoint(map(_ID, members)):
            for place, request in zip(group_places, members):
                hold = ledger.holds.get(request.id)
                if hold is None:
                    waiting[request.id] = Waiting(reason, message, place, queue)
                elif enabled and hold.reserving:  # it waits where room is held for it
                    waiting[request.id] = Waiting(Reason.RESERVING_CAPACITY, reserving(request), place, hold.pool)
                elif enabled:  # it waits where its capacity is held, and is counted there
                    waiting[request.id] = Waiting(*_preemptor_reason(request.id, group, by_pool[id(group)],
                                                                     ledger, victims_of), place, hold.pool)
                else:
                    waiting[request.id] = Waiting(reason, message, place, hold.pool)
        else:
            # One entry per pending request, 10^5 of them: built without a Python-level call each.
            waiting.update(zip(map(_ID, members), map(_WAITING, zip(
                repeat(reason), repeat(message), group_places, repeat(queue)))))
    return waiting


def _judge_groups(ordered: Sequence[QueueGroup], ledger: Ledger, enabled: bool,
                  ) -> tuple[dict[int, tuple[Reason, str]], dict[int, list[PoolReason]]]:
    """Each group's reason and sentence, and its reasons per pool, by ``id(group)``."""
    by_pool: dict[int, list[PoolReason]] = {}
    first_waiter: dict[str, FirstWaiter] = {}  # pool → the first request short of room there
    if enabled:
        rooms: dict[tuple, PoolReason] = {}  # see _pool_reasons
        for group in ordered:
            reasons = by_pool[id(group)] = _group_reasons(group, ledger, rooms)
            for head in _first_waiters(group, ledger):
                for pool in _short_of_room(group, head, reasons, ledger):
                    if pool not in first_waiter:
                        first_waiter[pool] = FirstWaiter(group.priority, head, group.policy)
    judged = {id(group): _overall(_behind_higher_priority(group, by_pool[id(group)], first_waiter))
              if enabled else (Reason.MANAGEMENT_DISABLED, DISABLED) for group in ordered}
    return judged, by_pool


def _first_waiters(group: QueueGroup, ledger: Ledger) -> list[Request]:
    """The members whose view of the pools decides who waits first there: the head, and each
    member that chose victims in this pass — the next pass judges each of those as a group of its
    own, seeing its own hold aside (I-8)."""
    head = group.members[group.next]
    if not group.preempted or group.holder is not None:
        return [head]
    return [head, *(m for m in group.members[group.next + 1:] if m.id in ledger.holds)]


_ID = attrgetter("id")
_WAITING = partial(tuple.__new__, Waiting)  # Waiting(*fields), made in C


_ROOM = (Reason.WAITING_FOR_CAPACITY, Reason.BLOCKED_BY_HIGHER_PRIORITY)
_OWN_POLICY = (Reason.WAITING_FOR_RESERVATION, Reason.WAITING_FOR_QUOTA)


def _short_of_room(group: QueueGroup, head: Request, reasons: list[PoolReason], ledger: Ledger,
                   ) -> list[str]:
    """The pools where the group's head waits for room rather than for its own policy, as the head
    sees itself: a preemptor of this very pass is not in its own way.

    Room is a pool's reason wherever the policy's own limit and reservation do not stop it. Its own
    hold set aside, the policy uses less, so only pools where ``reasons`` (everyone else's view)
    show the policy stopping it are judged again."""
    room = [pool for pool, reason, _ in reasons if reason in _ROOM]
    if group.holder is not None or head.id not in ledger.holds or len(room) == len(reasons):
        return room
    with ledger.as_seen_by(head.id):
        return [pool for (pool, reason, _), terms in zip(reasons, group.terms)
                if reason in _ROOM or _own_policy_reason(group, pool, terms, ledger) is None]


def _preemptor_reason(request_id: int, group: QueueGroup, reasons: list[PoolReason], ledger: Ledger,
                      victims_of: Mapping[int, list[int]]) -> tuple[Reason, str]:
    """A preemptor waits for its victims, unless its own policy stops it on that pool (§9).

    ``reasons`` are the group's, with every hold of others in place; its own set aside, the policy
    uses less, so it can be stopped only where they show it stopped."""
    pool = ledger.holds[request_id].pool
    if any(where == pool and reason in _OWN_POLICY for where, reason, _ in reasons):
        with ledger.as_seen_by(request_id):
            own = _own_policy_reason(group, pool, group.terms[group.pools.index(pool)], ledger)
        if own is not None:
            return own.reason, own.message
    victims = ", ".join(map(str, victims_of.get(request_id, ())))
    if not victims:
        return Reason.WAITING_FOR_PREEMPTION, f"capacity on pool {pool} is held for it; its victims have left"
    return (Reason.WAITING_FOR_PREEMPTION,
            f"waiting for request(s) {victims} to leave pool {pool}; their capacity is held for it")


def _group_reasons(group: QueueGroup, ledger: Ledger, rooms: dict) -> list[PoolReason]:
    """The group's reason on each pool; a preemptor with victims in flight sees itself (R-45)."""
    if group.holder not in ledger.holds:
        return _pool_reasons(group, ledger, rooms=rooms)
    with ledger.as_seen_by(group.holder):  # the ledger differs from everyone else's view: no shared rooms
        return _pool_reasons(group, ledger)


def _pool_reasons(group: QueueGroup, ledger: Ledger, rooms: dict | None = None) -> list[PoolReason]:
    """Per eligible pool: the condition others finishing cannot cure, first.

    Room depends on the pool and the resources only, not on the policy: groups of one shape on a
    pool share it through ``rooms`` while the ledger shows every hold (not inside as_seen_by)."""
    found = []
    for pool, terms in zip(group.pools, group.terms):
        own = _own_policy_reason(group, pool, terms, ledger)
        if own is not None:
            found.append(own)
        elif rooms is None:
            found.append(_room(terms, group.resources, ledger))
        else:
            room = rooms.get((pool, group.resources.signature))
            if room is None:
                room = rooms[(pool, group.resources.signature)] = _room(terms, group.resources, ledger)
            found.append(room)
    return found


def _own_policy_reason(group: QueueGroup, pool: str, terms: PoolTerms, ledger: Ledger,
                       ) -> PoolReason | None:
    """The group's own policy stopping it on ``pool``, which others finishing cannot cure, or None.

    The reservation goes before the limit because it outlasts it: preemptible work finishing
    cures the limit, not the non-preemptible share."""
    reserved = ledger.over_reserved(terms, group.resources, group.preemptible)
    if reserved is not None:
        return PoolReason(
            pool, Reason.WAITING_FOR_RESERVATION,
            f"non-preemptible requests of policy {group.policy} use {quantity_text(reserved.usage)} of its "
            f"reservation of {quantity_text(reserved.bound)} {reserved.key} {scope_text(reserved.scope)}")
    limit = ledger.over_limit(terms, group.resources)
    if limit is not None:
        return PoolReason(
            pool, Reason.WAITING_FOR_QUOTA,
            f"policy {group.policy} has {quantity_text(limit.usage)} of its limit of "
            f"{quantity_text(limit.bound)} {limit.key} in use {scope_text(limit.scope)}")
    return None


def _room(terms: PoolTerms, resources: Vector, ledger: Ledger) -> PoolReason:
    short = ledger.room_short(terms, resources)
    if short:
        return _room_reason(terms.pool, terms.keys, ledger, short)
    # It fits: only a pass that has not run yet leaves such a request pending.
    return PoolReason(terms.pool, Reason.WAITING_FOR_CAPACITY, f"pool {terms.pool} has room; the next pass grants it")


def _room_reason(pool: str, keys: Mapping[str, KeyTerms], ledger: Ledger, short: dict[str, int]) -> PoolReason:
    used, held_here, reserved_here = ledger.pool_used[pool], ledger.held.get(pool, {}), ledger.reserved.get(pool, {})
    parts, held_only = [], True
    for key, lack in sorted(short.items()):
        held, reserved = held_here.get(key, 0), reserved_here.get(key, 0)
        in_use = used.get(key, 0)
        held_note = f", {quantity_text(held - reserved)} held for preemptors" if held > reserved else ""
        if reserved:
            held_note += f", {quantity_text(reserved)} held for requests past their policy's max wait"
        parts.append(f"{quantity_text(lack)} {key} ({quantity_text(in_use)} of {quantity_text(keys[key].capacity)} "
                     f"in use{held_note})")
        held_only = held_only and lack <= held
    if held_only:
        holders = sorted(holder for holder, hold in ledger.holds.items() if hold.pool == pool)
        return PoolReason(pool, Reason.BLOCKED_BY_HIGHER_PRIORITY,
                          f"pool {pool} is short of {', '.join(parts)}: the capacity is held for request(s) "
                          f"{', '.join(map(str, holders))}, served first")
    return PoolReason(pool, Reason.WAITING_FOR_CAPACITY, f"pool {pool} is short of {', '.join(parts)}")


def _behind_higher_priority(group: QueueGroup, reasons: list[PoolReason],
                            first_waiter: Mapping[str, FirstWaiter]) -> list[PoolReason]:
    """A request short of room where a request of higher priority waits first is blocked by it."""
    out = []
    for found in reasons:
        ahead = first_waiter.get(found.pool)
        if found.reason is WAITING_FOR_CAPACITY and ahead is not None and ahead.priority > group.priority:
            found = PoolReason(found.pool, Reason.BLOCKED_BY_HIGHER_PRIORITY,
                               f"{found.message}; request {ahead.request.id} of policy {ahead.policy} "
                               f"(priority {ahead.priority}) is served first")
        out.append(found)
    return out


def _overall(reasons: list[PoolReason]) -> tuple[Reason, str]:
    """The most curable pool's code; every pool's sentence, in precedence order."""
    if len(reasons) == 1:
        return reasons[0].reason, reasons[0].message
    code = max([reason for _, reason, _ in reasons], key=SEVERITY.__getitem__)
    # A "*" quota says the same on every pool: each sentence once.
    return code, "; ".join(dict.fromkeys(message for _, _, message in reasons))
