"""The policies page (``/policies/``, docs/console.md): per policy, key and scope, usage against the
reserved share and the limit as a bar with the reserved mark, the borrowed share, queued and
running counts, and the policy's running requests. Every signed-in user sees every policy, as ``GET /policies`` shows it
(decision 118); of another team's running requests only what its queue shows (no name, no owner).

The numbers are ``GET /api/v1/policies``'s own: the same selector (``policy_states``) and the same
payload (``policy_state_data``), shown as that JSON writes them; only the bars' widths are
computed here. static/console/policies.js applies ``policy.updated`` (a GET /policies entry) in
place and reads a card again (``/policies/<name>/card/``) when its rows or its running requests
change.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from poolweb.console.cards import time_rule_lines
from poolweb.console.request_pages import filters_query
from poolweb.selectors.directory import managed_group_names
from poolweb.selectors.events import newest_seq
from poolweb.selectors.live import PolicyState, ScopeUsage, policy_states
from poolweb.selectors.requests import LIVE_STATES, RequestFilters, audience_of, running_of_policies
from poolweb.selectors.versions import live_config
from poolweb.selectors.burns import budget_burns
from poolweb.services.budgets import burn_data
from poolweb.services.payloads import policy_state_data
from reconcile import ALL_POOLS, Config
from reconcile.document_writer import time_rules
from reconcile.quantity import quantity_text

RUNNING_SHOWN = 10  # running requests listed per policy; the rest are counted, with a link


@dataclass(frozen=True)
class UsageBar:
    """One scope and key of a policy: the API's figures as text, and the bar's geometry: percent
    of the bar's scale, the limit or, without one, the capacity of the scope (its pool's, or all
    pools' for "*"), and never less than the largest figure."""

    scope: str
    key: str
    usage: str
    reserved: str | None
    limit: str | None
    borrowed: str
    pending: int
    running: int
    within: float  # the part of the usage inside the reservation
    beyond: float  # the borrowed part
    reserved_at: float | None  # where the reserved mark stands
    over: bool  # more in use than the limit (a provision lowered it, R-57)
    capacity: str | None  # the scale when there is no limit (policies.js reads it)

    @property
    def scope_text(self) -> str:
        return "all pools" if self.scope == ALL_POOLS else self.scope

    @property
    def filled(self) -> int:
        """The bar's fill in whole percent (its ``aria-valuenow``)."""
        return round(self.within + self.beyond)

    @property
    def meter_text(self) -> str:
        """The bar in words (its ``aria-valuetext``; policies.js writes the same)."""
        return (f"{self.usage} {self.key} in use, {self.borrowed} borrowed; reserved {self.reserved or 'none'}, "
                f"limit {self.limit or 'none'}")


def usage_bar(usage: ScopeUsage, data: dict, capacity: int | None) -> UsageBar:
    """``usage`` (milli-units, for the geometry), its entry of the API's ``scopes`` (the text) and
    the capacity of its scope and key."""
    bound = usage.limit if usage.limit is not None else (capacity or 0)
    scale = max(bound, usage.usage, usage.reserved or 0)

    def percent(milli: int) -> float:
        return round(100 * milli / scale, 2) if scale else 0.0

    return UsageBar(usage.scope, usage.key, _text(data["usage"]), _text(data["reserved"]), _text(data["limit"]),
                    _text(data["borrowed"]), usage.pending, usage.running, percent(usage.usage - usage.borrowed),
                    percent(usage.borrowed), None if usage.reserved is None else percent(usage.reserved),
                    usage.limit is not None and usage.usage > usage.limit,
                    None if usage.limit is not None or capacity is None else quantity_text(capacity))


def capacities(config: Config) -> dict[tuple[str, str], int]:
    """(scope, key) → what the pools have: each pool's capacity, and "*" the sum over the pools
    that meter the key."""
    found: defaultdict[tuple[str, str], int] = defaultdict(int)
    for pool in config.pools:
        for key, amount in pool.capacity.items():
            found[(pool.name, key)] += amount
            found[(ALL_POOLS, key)] += amount
    return dict(found)


def _text(number: int | float | None) -> str | None:
    """A JSON number of the API as JavaScript's ``String()`` writes it (2, 0.5, 256000)."""
    return None if number is None else str(number)


@dataclass(frozen=True)
class BudgetBar:
    """A policy's budget burn-down (``GET /policies``' ``budget``): its sentence, the bar's fill in
    whole percent (at most 100), and what a spent budget does now."""

    text: str
    percent: int
    spent: bool
    when_spent: str

    @property
    def filled(self) -> int:
        return min(100, self.percent)

    @property
    def spent_text(self) -> str:
        if not self.spent:
            return ""
        return ("spent: new requests are refused" if self.when_spent == "refuse"
                else "spent: served last, from idle capacity only")


def budget_bar(data: dict) -> BudgetBar:
    return BudgetBar(data["text"], data["percent"], data["spent"], data["when_spent"])


@dataclass(frozen=True)
class PolicyView:
    state: PolicyState
    bars: tuple[UsageBar, ...]
    running: tuple  # up to RUNNING_SHOWN request rows
    more_running: int  # live requests not listed
    requests_query: str  # /requests/ filtered to its running requests
    group_managed: bool = False  # the company directory says who is in its group (DirectoryGroup)
    budget: BudgetBar | None = None
    time_rules: tuple[str, ...] = ()  # cards.time_rule_lines

    @property
    def rows(self) -> str:
        """Its scopes and keys, as policies.js writes them to notice a change: "*/gpu h100/gpu "."""
        return "".join(f"{bar.scope}/{bar.key} " for bar in self.bars)


def policy_views(user, names: list[str] | None = None) -> list[PolicyView]:
    audience = audience_of(user)
    states = policy_states(names)
    running = running_of_policies([s.name for s in states], RUNNING_SHOWN)
    for shown, _ in running.values():
        for row in shown:  # decision 15: another team's request shows no name, owner or labels
            row.hidden = not audience.sees_details(row.owner_id, row.policy)
    config = live_config()
    capacity = capacities(config)
    burns = budget_burns(config, timezone.now(), None if names is None else set(names))
    managed = managed_group_names()
    views = []
    for state in states:
        data = policy_state_data(state)
        shown, total = running[state.name]
        bars = tuple(usage_bar(u, d, capacity.get((u.scope, u.key))) for u, d in zip(state.scopes, data["scopes"]))
        views.append(PolicyView(state, bars,
                                tuple(shown), total - len(shown),
                                filters_query(RequestFilters(states=LIVE_STATES, policy=state.name)),
                                state.group in managed,
                                budget_bar(burn_data(burns[state.name])) if state.name in burns else None,
                                time_rule_lines(time_rules(config.policy[state.name]))
                                if state.name in config.policy else ()))
    return views


@login_required
@require_GET
def policies_page(request: HttpRequest) -> HttpResponse:
    seq = newest_seq()  # before the numbers: the page follows the stream from here (decision 44)
    return render(request, "console/policies.html", {"policies": policy_views(request.user), "page": {"seq": seq}})


@login_required
@require_GET
def policy_card(request: HttpRequest, name: str) -> HttpResponse:
    """One policy's card as the page renders it, for the page to swap in; 404 for a policy the live
    configuration does not have."""
    found = policy_views(request.user, [name])
    if not found:
        raise Http404(f"there is no policy {name[:64]!r}")
    return render(request, "console/partials/policy_usage.html", {"policy": found[0]})
