"""What the cards of the resource configuration page show, whichever way the configuration
arrives: the live version as the engine reads it (selectors.configuration, with usage from
selectors.live), or a configuration document — a provisioned version's, or the draft being
edited (console.drafts).

Cards hold text ready to show: quantities as the API writes them (``0.5``, not ``0.500``), every
order in full. The same partial templates render them in every mode, so a card looks the same
however it arrived.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from poolweb.selectors.live import PoolState
from reconcile import Config, Profile
from reconcile.document_writer import time_rules
from reconcile.quantity import quantity_text

NO_CAPACITY = 0  # a key a pool over-uses without having it (a provision removed it, R-57)


@dataclass(frozen=True)
class Amount:
    key: str
    text: str  # "0.5", or what a draft holds when it is not a quantity


@dataclass(frozen=True)
class Bar:
    """In use / total of one key of a pool."""

    key: str
    used: str
    total: str
    percent: int  # 0…100, for the bar's width; the numbers beside it say the rest
    over: str | None  # the excess when more is in use than the pool has


@dataclass(frozen=True)
class Finding:
    level: str  # "error" or "warning"
    path: str
    message: str


@dataclass(frozen=True)
class Mark:
    """How a draft's card differs from the live version: ``added``, or ``changed`` in ``fields``."""

    action: str
    fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class Link:
    """A connection: the pool and the name people know it by."""

    pool: str
    name: str


@dataclass(frozen=True)
class QuotaLine:
    scope: str
    key: str
    reserved: str | None
    limit: str | None


@dataclass(frozen=True)
class PoolCard:
    index: int  # in the document: where a draft's errors point (``pools[index]``)
    name: str
    description: str
    capacity: tuple[Amount, ...]
    order: tuple[str, ...]  # the execution order, in full
    bars: tuple[Bar, ...] = ()
    running: int | None = None
    pending: int | None = None
    mark: Mark | None = None
    issues: tuple[Finding, ...] = ()
    display_name: str = ""  # "": the name
    labels: tuple[tuple[str, str], ...] = ()  # (key, value), by key

    COMPARED = (("display name", "display_name"), ("description", "description"), ("capacity", "capacity"),
                ("execution order", "order"), ("labels", "labels"))


@dataclass(frozen=True)
class ProfileCard:
    index: int
    name: str
    description: str
    resources: tuple[Amount, ...]
    dynamic: bool
    connections: tuple[Link, ...]  # pool precedence
    policies: tuple[str, ...]  # policy rank
    pending: int | None = None
    running: int | None = None
    mark: Mark | None = None
    issues: tuple[Finding, ...] = ()
    display_name: str = ""

    COMPARED = (("display name", "display_name"), ("description", "description"), ("allotment", "resources"), ("allotment", "dynamic"),
                ("connections", "connections"), ("policy rank", "policies"))


@dataclass(frozen=True)
class PolicyCard:
    index: int
    name: str
    description: str
    group: str
    priority: str
    quotas: tuple[QuotaLine, ...]
    mark: Mark | None = None
    issues: tuple[Finding, ...] = ()
    display_name: str = ""
    time_rules: tuple[str, ...] = ()  # time_rule_lines(): none when the policy has no time rule

    COMPARED = (("display name", "display_name"), ("description", "description"), ("group", "group"), ("priority", "priority"),
                ("quotas", "quotas"), ("time rules", "time_rules"))


@dataclass(frozen=True)
class Removed:
    kind: str
    name: str


@dataclass(frozen=True)
class Board:
    pools: tuple[PoolCard, ...] = ()
    profiles: tuple[ProfileCard, ...] = ()
    policies: tuple[PolicyCard, ...] = ()
    editing: bool = False
    removed: tuple[Removed, ...] = ()
    issues: tuple[Finding, ...] = ()  # those no card is concerned by

    @property
    def empty(self) -> bool:
        return not (self.pools or self.profiles or self.policies)

    @cached_property
    def profile_labels(self) -> dict[str, str]:
        """Profile name → display name, for the execution orders that list them (decision 121)."""
        return {card.name: card.display_name for card in self.profiles if card.display_name}

    @cached_property
    def policy_labels(self) -> dict[str, str]:
        """Policy name → display name, for the policy ranks that list them."""
        return {card.name: card.display_name for card in self.policies if card.display_name}

    @property
    def errors(self) -> int:
        return sum(1 for i in self.all_issues() if i.level == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for i in self.all_issues() if i.level == "warning")

    def all_issues(self) -> Iterable[Finding]:
        yield from self.issues
        for card in (*self.pools, *self.profiles, *self.policies):
            yield from card.issues


def time_rule_lines(policy: Mapping[str, object]) -> tuple[str, ...]:
    """A policy's time rules (R-48, R-49, R-52, R-53) as people read them, from its document
    object (an engine's Policy: ``document_writer.time_rules``): "protected for its first 30 min",
    "reserves after waiting 2 h", "runs at most 1 d, then queued again", "must state a run limit".
    A value a draft holds that is not a number of seconds shows as written."""
    rules = []
    if (protected := policy.get("min_runtime_seconds")) is not None:
        rules.append(f"protected for its first {duration_text(protected)}")
    if (patience := policy.get("max_wait_seconds")) is not None:
        rules.append(f"reserves after waiting {duration_text(patience)}")
    requeued = policy.get("on_time_limit") == "requeue"
    if (cap := policy.get("max_runtime_seconds")) is not None:
        rules.append(f"runs at most {duration_text(cap)}" + (", then queued again" if requeued else ""))
    elif requeued:
        rules.append("queued again at its run limit")
    if policy.get("require_max_runtime") is True:
        rules.append("must state a run limit")
    return tuple(rules)


DURATION_UNITS = (("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1))


def duration_text(seconds: object) -> str:
    """90 → "1 min 30 s", 7200 → "2 h", 93_600 → "1 d 2 h": the two largest units, the rest dropped;
    anything but a whole number of seconds, as written."""
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 0:
        return f"{str(seconds)[:40]} s"
    parts = []
    for unit, size in DURATION_UNITS:
        if seconds >= size or (not parts and unit == "s"):
            parts.append(f"{seconds // size} {unit}")
            seconds %= size
        if len(parts) == 2 or (parts and not seconds):
            break
    return " ".join(parts)


def optional_text(milli: int | None) -> str | None:
    """A reserved or a limit that may be absent, as quantity_text shows it."""
    return None if milli is None else quantity_text(milli)


UNSHOWN_KEYS = frozenset({"step_run"})  # every request takes one step_run: it tells a person nothing


def resources_text(milli: Mapping[str, int] | None) -> str:
    """A request's resources as people read them, the one wording of every page and row:
    ``{"mcpu": 8000000, "gpu": 500, "step_run": 1000}`` → "0.5 gpu · 8000 mcpu" (gpu first, then
    by name; quantities as the API writes them; no step_run, no zeros)."""
    shown = [f"{quantity_text(milli[key])} {key}" for key in sorted(milli or {}, key=key_order)
             if milli[key] and key not in UNSHOWN_KEYS]
    return " · ".join(shown) or "nothing"


def key_order(key: str) -> tuple[bool, str]:
    """gpu first, then the other keys by name."""
    return key != "gpu", key


def amounts(milli: Mapping[str, int]) -> tuple[Amount, ...]:
    return tuple(Amount(key, quantity_text(milli[key])) for key in sorted(milli, key=key_order) if milli[key])


def config_board(config: Config, *, usage: Iterable[PoolState] = (), pending: Mapping[str, int] | None = None,
                 running: Mapping[str, int] | None = None) -> Board:
    """A configuration's cards; with ``usage`` each pool's bars, with ``pending`` and ``running``
    each profile's counts (the live version's page)."""
    states = {state.name: state for state in usage}
    pools = tuple(PoolCard(i, p.name, p.description, amounts(p.capacity), p.execution_order,
                           *_usage(states.get(p.name), p.capacity), display_name=p.display_name, labels=p.labels)
                  for i, p in enumerate(config.pools))
    profiles = tuple(ProfileCard(i, p.name, p.description, amounts(p.resources), p.dynamic, _links(p), p.policies,
                                 None if pending is None else pending.get(p.name, 0),
                                 None if running is None else running.get(p.name, 0), display_name=p.display_name)
                     for i, p in enumerate(config.profiles))
    policies = tuple(PolicyCard(i, p.name, p.description, p.group, str(p.priority),
                                tuple(QuotaLine(q.scope, q.key, optional_text(q.reserved), optional_text(q.limit))
                                      for q in p.quotas), display_name=p.display_name,
                                time_rules=time_rule_lines(time_rules(p)))
                     for i, p in enumerate(config.policies))
    return Board(pools, profiles, policies)


def _links(profile: Profile) -> tuple[Link, ...]:
    names = profile.connection_names
    return tuple(Link(pool, names[j] if j < len(names) and names[j] else pool) for j, pool in enumerate(profile.pools))


def _usage(state: PoolState | None, capacity: Mapping[str, int]) -> tuple[tuple[Bar, ...], int | None, int | None]:
    """The bars of a pool (every key it has or over-uses), its running and pending counts."""
    if state is None:
        return (), None, None
    keys = sorted({*capacity, *state.overcommitted}, key=key_order)
    return tuple(bar(key, state.used.get(key, 0), capacity.get(key, NO_CAPACITY), state.overcommitted.get(key))
                 for key in keys), state.running, state.pending


def bar(key: str, used: int, total: int, over: int | None) -> Bar:
    percent = min(100, round(100 * used / total)) if total else (100 if used else 0)
    return Bar(key, quantity_text(used), quantity_text(total), percent, quantity_text(over) if over else None)
