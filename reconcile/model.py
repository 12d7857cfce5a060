"""The frozen values a pass reads: configuration, requests and the snapshot (docs/scheduling.md §1, §2).

Everything here is immutable; a pass never changes its input.

>>> config = Config(
...     pools=(Pool("h100", Vector.of(gpu=8)), Pool("a100", Vector.of(gpu=4))),
...     profiles=(Profile("train", Vector.of(gpu=4), pools=("h100", "a100"), policies=("research", "dev")),),
...     policies=(Policy("research", priority=10), Policy("dev")))
>>> config.queue_exists("dev", "train"), config.queue_exists("dev", "infer")
(True, False)
>>> config.policy_rank[("train", "dev")], config.execution_index[("a100", "train")]   # R-32.4, R-32.3
(1, 0)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property

from .quantity import Vector, unmetered_keys
from .reasons import Reason

ALL_POOLS = "*"  # the scope of a quota row that counts usage over every pool


def scope_text(scope: str) -> str:
    """A quota scope as a sentence names it: "on pool h100", or "across all pools" for ``*``."""
    return "across all pools" if scope == ALL_POOLS else f"on pool {scope}"


class State(enum.StrEnum):
    """A request's state (§2): pending, two live ones, and five terminal ones. Each value is the
    member's name in lower case (what ``enum.auto`` gives a StrEnum): "pending", "allocated", …
    as the database stores them and the API shows them."""

    PENDING = enum.auto()
    ALLOCATED = enum.auto()
    PREEMPTING = enum.auto()
    RELEASED = enum.auto()
    PREEMPTED = enum.auto()
    REJECTED = enum.auto()
    CANCELLED = enum.auto()
    EXPIRED = enum.auto()

    @property
    def live(self) -> bool:
        return self in _LIVE

    @property
    def terminal(self) -> bool:
        return self not in _UNFINISHED


# Reading a member off its enum class takes ~70 ns, more than the test it serves: loops over every
# request compare with these, read once, and modules import them from here.
PENDING, ALLOCATED, PREEMPTING = State.PENDING, State.ALLOCATED, State.PREEMPTING
WAITING_FOR_CAPACITY = Reason.WAITING_FOR_CAPACITY
# The one definition of which states are live (they hold capacity) and which are not finished:
# ``State.live`` and ``State.terminal`` read them, and so do the service's queries (members of a
# StrEnum are the stored strings).
LIVE_STATES = (ALLOCATED, PREEMPTING)
UNFINISHED_STATES = (PENDING, *LIVE_STATES)
_LIVE, _UNFINISHED = frozenset(LIVE_STATES), frozenset(UNFINISHED_STATES)


class Labelled:
    """What people read of a pool, profile or policy: its display name, else its name (decision 121)."""

    __slots__ = ()

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass(frozen=True, slots=True)
class Pool(Labelled):
    name: str
    capacity: Vector
    # Profiles served first on this pool; connected profiles not listed follow in name order.
    execution_order: tuple[str, ...] = ()
    description: str = ""
    display_name: str = ""  # what people read; "" when it is the name
    # key=value pairs for other systems and people, sorted by key (a Slurm partition, decision 137);
    # the engine reads none of them.
    labels: tuple[tuple[str, str], ...] = ()

    def label_value(self, key: str) -> str | None:
        return next((value for name, value in self.labels if name == key), None)


@dataclass(frozen=True, slots=True)
class Quota:
    """One row ``(scope, key, reserved, limit)``; either amount may be absent (milli-units)."""

    scope: str
    key: str
    reserved: int | None = None
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class Budget:
    """Key-hours a policy may use per UTC calendar period (``reconcile.budgets``): ``hours`` in
    thousandths (a quantity), ``period`` day, week (from Monday) or month, and what happens once
    they are spent: ``refuse`` new submissions, or serve them only from ``idle`` capacity."""

    hours: int
    period: str
    key: str = "gpu"
    when_spent: str = "refuse"


@dataclass(frozen=True, slots=True)
class Policy(Labelled):
    name: str
    priority: int = 0
    quotas: tuple[Quota, ...] = ()
    group: str = ""
    description: str = ""
    display_name: str = ""  # what people read; "" when it is the name
    budget: Budget | None = None  # None: no budget, nothing is counted against it
    # its running requests are no victims until they have run this long; None: from the start
    min_runtime_seconds: int | None = None
    # the longest its requests may run (a declared limit above it is refused; a request that
    # declares none runs at most this long); whether they must declare one; and what ends a run at
    # its limit does: "end" (expired, TimeLimit) or "requeue" (pending again, R-53).
    max_runtime_seconds: int | None = None
    require_max_runtime: bool = False
    on_time_limit: str = "end"
    # a request waiting longer than this reserves capacity on its first pool; None: never
    max_wait_seconds: int | None = None

    def run_limit(self, declared: int | None) -> int | None:
        """R-52: how long a request of this policy that declared ``declared`` may run; None: no limit."""
        if declared is None or self.max_runtime_seconds is None:
            return declared if self.max_runtime_seconds is None else self.max_runtime_seconds
        return min(declared, self.max_runtime_seconds)


@dataclass(frozen=True, slots=True)
class Profile(Labelled):
    name: str
    resources: Vector
    dynamic: bool = False
    pools: tuple[str, ...] = ()  # pool precedence: first = preferred
    policies: tuple[str, ...] = ()  # policy rank: first = served first
    connection_names: tuple[str, ...] = ()  # display names, parallel to ``pools``
    description: str = ""
    display_name: str = ""  # what people read; "" when it is the name


@dataclass(frozen=True)
class Config:
    pools: tuple[Pool, ...] = ()
    profiles: tuple[Profile, ...] = ()
    policies: tuple[Policy, ...] = ()

    @cached_property
    def pool(self) -> dict[str, Pool]:
        return {p.name: p for p in self.pools}

    @cached_property
    def profile(self) -> dict[str, Profile]:
        return {p.name: p for p in self.profiles}

    @cached_property
    def policy(self) -> dict[str, Policy]:
        return {p.name: p for p in self.policies}

    def queue_exists(self, policy: str, profile: str) -> bool:
        found = self.profile.get(profile)
        return found is not None and policy in self.policy and policy in found.policies

    @cached_property
    def unmetered(self) -> dict[str, frozenset[str]]:
        """Pool name → the keys it does not meter (quantity.unmetered_keys), which its usage skips."""
        return {p.name: unmetered_keys(p.capacity) for p in self.pools}

    @cached_property
    def profiles_on(self) -> dict[str, tuple[str, ...]]:
        """Pool → the profiles connected to it, in configuration order: whose requests it may serve."""
        found: dict[str, list[str]] = {p.name: [] for p in self.pools}
        for profile in self.profiles:
            for pool in profile.pools:
                found.setdefault(pool, []).append(profile.name)
        return {pool: tuple(names) for pool, names in found.items()}

    @cached_property
    def execution_index(self) -> dict[tuple[str, str], int]:
        """(pool, profile) → place in the pool's execution order (R-32.3), 0 = served first."""
        index: dict[tuple[str, str], int] = {}
        for pool_name, profiles in self.profiles_on.items():
            pool = self.pool.get(pool_name)
            listed = [p for p in (pool.execution_order if pool else ()) if p in profiles]
            rest = sorted(set(profiles) - set(listed))
            for place, profile in enumerate(listed + rest):
                index[(pool_name, profile)] = place
        return index

    @cached_property
    def policy_rank(self) -> dict[tuple[str, str], int]:
        """(profile, policy) → place in the profile's policy rank (R-32.4)."""
        return {
            (profile.name, policy): place
            for profile in self.profiles
            for place, policy in enumerate(profile.policies)
        }


@dataclass(frozen=True, slots=True)
class Request:
    id: int
    policy: str
    profile: str
    resources: Vector  # includes step_run: 1
    submitted_at: datetime  # first submission; kept when re-queued
    state: State = State.PENDING
    preemptible: bool = True
    max_retries: int = 0
    attempt: int = 1
    pool: str | None = None  # set while live
    allocated_at: datetime | None = None
    # its place among the grants of the pass that granted it (0 = first). The grants of a
    # pass share ``allocated_at``; (allocated_at, grant_order) is the order they were made in.
    grant_order: int = 0
    lease_seconds: int = 300
    lease_expires_at: datetime | None = None
    preempted_by: int | None = None
    preempted_at: datetime | None = None  # when it became preempting; the grace runs from here
    reason: Reason | None = None  # of the last change of state
    held_pool: str | None = None  # where capacity is held for it since it chose victims
    max_runtime_seconds: int | None = None  # the run limit it declared; None: none
    time_limit_at: datetime | None = None  # while live, when its run ends (set at the grant)

    @property
    def retries_left(self) -> bool:
        return self.attempt <= self.max_retries


@dataclass(frozen=True)
class Snapshot:
    """Everything one pass may look at. ``now`` is an input: the engine has no clock.

    ``requests`` come in ascending id order, as the service's loader reads them (``ORDER BY id``,
    ``poolweb.selectors.snapshot``). The plan is the same in any other order, but its decisions
    are listed in the order the requests come, and a queue's members are then sorted by
    submission time and id (R-32.5) instead of by submission time alone (``planner``)."""

    now: datetime
    config: Config
    requests: tuple[Request, ...] = ()
    management_enabled: bool = True
    eviction_grace: timedelta = field(default=timedelta(seconds=30))
