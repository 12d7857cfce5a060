"""Typed results: the objects of the REST API (docs/api.md §3) as frozen dataclasses.

Each ``from_json`` reads what the server sends and ignores fields it does not know (the API is
extended, never renamed); a field the server leaves out — another team's queue entry has no
``owner`` or ``message`` — is None. ``to_json`` gives the API's shape back for ``--json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any, Self

Quantities = dict[str, float]  # resource key → quantity, as the server writes it (2, 0.5, 0.143)
STEP_RUN = "step_run"  # one job slot, which the server adds to every request (docs/scheduling.md §1)

PENDING, ALLOCATED, PREEMPTING = "pending", "allocated", "preempting"
RELEASED, PREEMPTED, REJECTED, CANCELLED, EXPIRED = "released", "preempted", "rejected", "cancelled", "expired"
LIVE = frozenset({ALLOCATED, PREEMPTING})
TERMINAL = frozenset({RELEASED, PREEMPTED, REJECTED, CANCELLED, EXPIRED})


def moment(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in data.items() if key in names}


def _plain(value: Any) -> Any:
    """A dataclass's value as JSON: datetimes in ISO 8601 with ``Z``, tuples as lists."""
    if isinstance(value, datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


class Result:
    """What every typed result shares: the API's shape back for ``--json``."""

    def to_json(self) -> dict[str, Any]:
        return _plain(asdict(self))  # type: ignore[call-overload]


@dataclass(frozen=True)
class RequestWarning(Result):
    """What the server says its owner may want to change about a request (a ``code`` and a
    sentence), like ``preemptible_without_retries``: the request is accepted all the same."""

    code: str
    message: str = ""


@dataclass(frozen=True)
class Request(Result):
    """A request object (docs/api.md §3), also a queue's entry (``GET /pools/{name}/queue``): a
    request of another team has only the public fields there, the others None."""

    id: int
    state: str
    policy: str | None = None
    profile: str | None = None
    name: str | None = None
    owner: str | None = None
    resources: Quantities = field(default_factory=dict)
    preemptible: bool | None = None
    max_retries: int | None = None
    attempt: int = 1
    reason: str | None = None
    message: str | None = None
    pool: str | None = None
    position: int | None = None
    preempted_by: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    submitted_at: datetime | None = None
    allocated_at: datetime | None = None
    finished_at: datetime | None = None
    lease_expires_at: datetime | None = None
    lease_seconds: int | None = None
    queue_pool: str | None = None
    held_pool: str | None = None  # pending only: where capacity is held for it
    grace_ends_at: datetime | None = None  # preempting only: when the server evicts it
    warnings: tuple[RequestWarning, ...] = ()  # an older server sends none
    submitted_by: str | None = None  # who submitted it for its owner (decision 131); None: the owner
    max_runtime_seconds: int | None = None  # its run limit
    time_limit_at: datetime | None = None  # live only: when its run ends
    # Pending only: when it is estimated to start (R-54; None: unknown), what the estimate relied
    # on and how sure it is; all None before its first pass, and from an older server.
    eta: datetime | None = None
    eta_basis: str | None = None
    eta_confidence: str | None = None

    MOMENTS = ("submitted_at", "allocated_at", "finished_at", "lease_expires_at", "grace_ends_at", "time_limit_at",
               "eta")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Request:
        values = _known(cls, data)
        for name in cls.MOMENTS:
            values[name] = moment(values.get(name))
        values["resources"] = values.get("resources") or {}
        values["labels"] = values.get("labels") or {}
        values["warnings"] = tuple(RequestWarning(**_known(RequestWarning, w)) for w in values.get("warnings") or ())
        return cls(**values)

    @property
    def job_resources(self) -> Quantities:
        """What the job was given: its resources without the ``step_run: 1`` every request has."""
        return {key: amount for key, amount in self.resources.items() if key != STEP_RUN}

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL


@dataclass(frozen=True)
class Pool(Result):
    """A pool's live state (``GET /pools``)."""

    name: str
    description: str = ""
    capacity: Quantities = field(default_factory=dict)
    used: Quantities = field(default_factory=dict)
    free: Quantities = field(default_factory=dict)
    overcommitted: Quantities = field(default_factory=dict)
    held: Quantities = field(default_factory=dict)
    pending: int = 0
    running: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Pool:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class ScopeUsage(Result):
    """A policy's usage of one key at one scope (a pool, or ``*`` for all pools together)."""

    scope: str
    key: str
    usage: float = 0
    reserved: float | None = None
    limit: float | None = None
    borrowed: float = 0
    pending: int = 0
    running: int = 0


@dataclass(frozen=True)
class BudgetBurn(Result):
    """A policy's budget and its burn in the current period (``GET /policies``' ``budget``)."""

    key: str
    hours: float
    period: str
    when_spent: str = "refuse"
    period_start: str = ""
    resets_at: str = ""
    used: str = "0.000"  # key-hours, three decimals
    used_exact: int = 0  # milli-units × seconds
    percent: int = 0
    spent: bool = False
    text: str = ""


@dataclass(frozen=True)
class PolicyState(Result):
    """A policy's live state (``GET /policies``)."""

    name: str
    description: str = ""
    group: str = ""
    priority: int = 0
    pending: int = 0
    running: int = 0
    scopes: tuple[ScopeUsage, ...] = ()
    budget: BudgetBurn | None = None  # only a policy with a budget has one

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PolicyState:
        values = _known(cls, data)
        values["scopes"] = tuple(ScopeUsage(**_known(ScopeUsage, s)) for s in data.get("scopes", ()))
        if data.get("budget") is not None:
            values["budget"] = BudgetBurn(**_known(BudgetBurn, data["budget"]))
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        if self.budget is None:  # as the server writes it: no field
            del data["budget"]
        return data


@dataclass(frozen=True)
class Issue(Result):
    """One validation error or warning: where, which rule, and a sentence."""

    path: str
    code: str
    message: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Issue:
        return cls(path=data.get("path", ""), code=data.get("code", ""), message=data.get("message", ""))


@dataclass(frozen=True)
class ActionResult(Result):
    """One item's answer of ``POST /requests/actions``: the status ``POST /requests/{id}/<action>``
    would have answered — 200 with the request afterwards, 404 (no such request, or another
    user's) or 409 (not live, another attempt's heartbeat, changed meanwhile) with ``detail``, 400
    with ``errors`` — and the request when there is one."""

    status: int
    request: Request | None = None
    errors: tuple[Issue, ...] = ()
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.request is not None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        request = data.get("request")
        return cls(status=int(data.get("status", 0)), request=Request.from_json(request) if request else None,
                   errors=tuple(Issue.from_json(e) for e in data.get("errors", ())), detail=data.get("detail"))


@dataclass(frozen=True)
class BatchResult(ActionResult):
    """One item's answer of ``POST /requests/batch``: the status ``POST /requests`` would have
    answered — 201 a new request, 200 the one its key named already, 400 with ``errors``, 403 or
    429 with ``detail`` — and the request when there is one."""

    @property
    def created(self) -> bool:
        return self.status == 201


@dataclass(frozen=True)
class Validation(Result):
    """``POST /config/draft/validate``."""

    valid: bool
    errors: tuple[Issue, ...] = ()
    warnings: tuple[Issue, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Validation:
        return cls(valid=bool(data.get("valid")), errors=tuple(Issue.from_json(e) for e in data.get("errors", ())),
                   warnings=tuple(Issue.from_json(w) for w in data.get("warnings", ())))


@dataclass(frozen=True)
class PreviewRequest(Result):
    """A request the draft would grant, preempt, reject or cancel."""

    id: int
    reason: str = ""
    message: str = ""
    policy: str | None = None
    profile: str | None = None
    owner: str | None = None
    pool: str | None = None
    preempted_by: int | None = None


@dataclass(frozen=True)
class Preview(Result):
    """``POST /config/draft/preview``: what provisioning the draft would do to current requests.
    ``refusals`` and ``usage`` stay as the server writes them (R-57 refusals; before/after rows)."""

    valid: bool
    errors: tuple[Issue, ...] = ()
    refusals: tuple[dict[str, Any], ...] = ()
    granted: tuple[PreviewRequest, ...] = ()
    preempted: tuple[PreviewRequest, ...] = ()
    rejected: tuple[PreviewRequest, ...] = ()
    cancelled: tuple[PreviewRequest, ...] = ()
    usage: tuple[dict[str, Any], ...] = ()

    OUTCOMES = ("granted", "preempted", "rejected", "cancelled")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Preview:
        lists = {name: tuple(PreviewRequest(**_known(PreviewRequest, r)) for r in data.get(name, ()))
                 for name in cls.OUTCOMES}
        return cls(valid=bool(data.get("valid")), errors=tuple(Issue.from_json(e) for e in data.get("errors", ())),
                   refusals=tuple(data.get("refusals", ())), usage=tuple(data.get("usage", ())), **lists)


@dataclass(frozen=True)
class Account(Result):
    """Who a token signs in as (``GET /me``)."""

    username: str
    is_admin: bool = False
    groups: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Account:
        values = _known(cls, data)
        values["groups"] = tuple(values.get("groups") or ())
        return cls(**values)


@dataclass(frozen=True)
class Version(Result):
    """A provisioned configuration version (``GET /config/versions``)."""

    version: int
    author: str | None = None
    created_at: datetime | None = None
    comment: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Version:
        values = _known(cls, data)
        values["created_at"] = moment(values.get("created_at"))
        return cls(**values)


@dataclass(frozen=True)
class UsageRow(Result):
    """One group's key-hours of one key (``GET /usage``): hours as the server writes them (three
    decimals), ``exact`` in milli-units × seconds. ``group`` is None for users the reader may not
    see by name."""

    group: str | None
    key: str
    used: str
    in_share: str
    borrowed: str
    exact: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ReservedIdle(Result):
    """A policy's reservation row over the period: reserved and idle key-hours."""

    policy: str
    scope: str
    key: str
    reserved: str
    idle: str
    exact: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class UsageReport(Result):
    """``GET /usage``: the rows by ``by`` and each reservation's idle part; ``raw`` is the whole
    answer, which ``--json`` prints as the server sent it."""

    by: str
    since: datetime | None
    until: datetime | None
    counted_until: datetime | None
    rows: tuple[UsageRow, ...] = ()
    reservations: tuple[ReservedIdle, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> UsageReport:
        by = data.get("by", "policy")
        return cls(by=by, since=moment(data.get("since")), until=moment(data.get("until")),
                   counted_until=moment(data.get("counted_until")),
                   rows=tuple(UsageRow(group=row.get(by), **_known(UsageRow, {k: v for k, v in row.items()
                                                                              if k != "group"}))
                              for row in data.get("rows", ())),
                   reservations=tuple(ReservedIdle(**_known(ReservedIdle, r)) for r in data.get("reservations", ())),
                   raw=data)

    def to_json(self) -> dict[str, Any]:
        return self.raw
