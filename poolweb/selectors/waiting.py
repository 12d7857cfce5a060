"""Why a request waits (console: the queue page's "Why it waits" and the request page): what is
ahead of it in the queue of the pool where it waits and what that needs, which later requests may
still go ahead of it (R-32), who holds room there for a preemption, and
for a preempting request who preempted it. Reads only; whose requests these are decides how much
of each a reader sees (``selectors.requests.Audience``, applied by the caller as the API does).

With h100 {gpu: 8} full and requests 4, 5 and 6 queued there at positions 1, 2 and 3, each of
4 gpu: for request 6, ``ahead`` is 2, ``nearest`` [4, 5], ``demand`` {gpu: 8000, step_run: 2000}.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from poolweb.models import Request as RequestRow
from poolweb.selectors.live import LIVE_STATES, PENDING, PoolState, pending_for, pool_states
from poolweb.selectors.requests import MAX_ID
from poolweb.selectors.snapshot import SNAPSHOT_FIELDS, to_engine
from poolweb.selectors.versions import live_engine_version
from reconcile import Vector
from reconcile.ledger import Ledger
from reconcile.overtaking import ahead_of_it, overtaking_text

NEAREST_SHOWN = 10  # the requests right ahead that are listed one by one; the rest are counted


@dataclass(frozen=True)
class WhyWaits:
    request: RequestRow
    pool: PoolState | None  # the pool it queues on (pending) or runs on (live)
    ahead: int | None = None  # pending: how many its pool may serve before it; None before the first pass
    nearest: tuple[RequestRow, ...] = ()  # pending: up to NEAREST_SHOWN right ahead, in service order
    demand: dict[str, int] = field(default_factory=dict)  # what all those ahead need together (milli-units)
    holders: tuple[RequestRow, ...] = ()  # preemptors holding room on the pool for their victims
    victims: tuple[RequestRow, ...] = ()  # pending: the requests being evicted for it
    preemptor: RequestRow | None = None  # preempting: the request it makes room for
    overtaken: str = ""  # pending: which later requests may still go ahead of it, as a sentence ("" none)


def why_waits(row: RequestRow) -> WhyWaits:
    """What stands before ``row``: a pending request's queue, or a preempting one's preemptor."""
    if row.state == PENDING:
        return _pending(row)
    pool = _pool(row.pool) if row.state in LIVE_STATES else None
    preemptor = None
    if row.preempted_by is not None and row.state in LIVE_STATES:
        preemptor = RequestRow.objects.select_related("owner").filter(pk=row.preempted_by).first()
    return WhyWaits(row, pool, preemptor=preemptor)


def _pending(row: RequestRow) -> WhyWaits:
    pool_name = row.queue_pool
    victims = tuple(RequestRow.objects.select_related("owner").filter(preempted_by=row.pk, state__in=LIVE_STATES)
                    .order_by("id"))
    if pool_name is None or row.position is None:
        return WhyWaits(row, _pool(pool_name), victims=victims)
    queue = pending_for(pool_name).filter(position__lt=row.position)
    demand: dict[str, int] = {}
    ahead = 0
    for resources in queue.values_list("resources", flat=True).iterator(chunk_size=2000):
        ahead += 1
        for key, amount in resources.items():
            demand[key] = demand.get(key, 0) + amount
    nearest = queue.select_related("owner").order_by("-position", "-id")[:NEAREST_SHOWN]
    holders = (RequestRow.objects.select_related("owner").filter(state=PENDING, held_pool=pool_name)
               .exclude(pk=row.pk).order_by("id"))
    return WhyWaits(row, _pool(pool_name), ahead, tuple(reversed(nearest)), demand, tuple(holders), victims,
                    overtaken=_overtaken(row, pool_name))


def _overtaken(row: RequestRow, pool: str) -> str:
    """Which later requests may still go ahead of ``row`` where it waits (R-32), judged with the
    usage now of the policies the pool serves: staying in share or borrowing decides R-32.2."""
    config, terms = live_engine_version()
    if row.policy not in config.policy or pool not in config.pool or row.profile not in config.profile:
        return ""  # a provision since its last pass: the next pass judges it again
    teams = {team for profile in config.profiles_on[pool] for team in config.profile[profile].policies}
    live = RequestRow.objects.filter(state__in=LIVE_STATES, policy__in=teams).values_list(*SNAPSHOT_FIELDS)
    ledger = Ledger.of_live(map(to_engine, live), config)
    return overtaking_text(ahead_of_it(terms, ledger, pool, row.policy, row.profile, Vector(row.resources)))


def _pool(name: str | None) -> PoolState | None:
    if name is None:
        return None
    found = pool_states([name])
    return found[0] if found else None


def request_in_pool(pool: str, request_id: int) -> RequestRow | None:
    """A request queued for ``pool`` or running on it, else None: a queue page explains only its own
    rows, which every signed-in reader sees (in part), and nothing else."""
    if not 1 <= request_id <= MAX_ID:
        return None
    rows = RequestRow.objects.select_related("owner").filter(pk=request_id)
    return (rows & pending_for(pool) | rows.filter(state__in=LIVE_STATES, pool=pool)).first()
