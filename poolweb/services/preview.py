"""Previewing the draft: what provisioning it would do to the live requests, as the engine's
preview says (docs/api.md §2, R-55…R-57)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from django.utils import timezone

from poolweb.models import Request as RequestRow
from poolweb.selectors.snapshot import load_pass_input
from poolweb.selectors.versions import draft_get
from poolweb.selectors.burns import budget_burns
from poolweb.services.budgets import burn_data, engine_input
from poolweb.services.validation import refusal_errors, validate_document
from reconcile import Request
from reconcile.budgets import Burn, budgets_of
from reconcile.document import Issue
from reconcile.preview import Preview, preview


@dataclass(frozen=True)
class BudgetPreview:
    """A policy whose budget the draft changes, with the current burn under each (R-70)."""

    policy: str
    before: Burn | None
    after: Burn | None

    @property
    def effect(self) -> str:
        """What the budget would do now, in words."""
        if self.after is None:
            return "no budget: nothing refused or served last for it"
        if not self.after.spent:
            return f"{self.after.percent} % used: served as configured"
        return ("spent: new requests would be refused" if self.after.budget.when_spent == "refuse"
                else "spent: its requests would be served last, from idle capacity only")

    def data(self) -> dict:
        return {"policy": self.policy, "before": None if self.before is None else burn_data(self.before),
                "after": None if self.after is None else burn_data(self.after), "effect": self.effect}


@dataclass(frozen=True)
class DraftPreview:
    errors: list[Issue]  # why the draft cannot be provisioned: its errors, or R-57 refusals
    preview: Preview | None = None  # None when the draft does not validate
    requests: dict[int, Request] = field(default_factory=dict)  # the live requests, by id
    owners: dict[int, str] = field(default_factory=dict)  # usernames of the requests the preview moves
    budgets: list[BudgetPreview] = field(default_factory=list)  # the budgets the draft changes

    @property
    def valid(self) -> bool:
        return not self.errors


def draft_preview() -> DraftPreview:
    """What provisioning the draft would do to the live requests now; changes nothing."""
    checked = validate_document(draft_get())
    if checked.config is None:
        return DraftPreview(checked.errors)
    now = timezone.now()
    read = load_pass_input(now)
    snapshot = read.snapshot
    # R-72 on both sides, as a pass would plan them: the live burns, and the draft's budgets' burns.
    burns_now, burns_after = budget_burns(snapshot.config, now), budget_burns(checked.config, now)
    live = engine_input(snapshot, burns_now)
    proposed = engine_input(replace(snapshot, config=checked.config), burns_after).config
    result = preview(live, proposed, read.version.terms if live is snapshot else None)
    budgets = [BudgetPreview(name, burns_now.get(name), burns_after.get(name))
               for name in sorted(set(budgets_of(snapshot.config)) | set(budgets_of(checked.config)))
               if budgets_of(snapshot.config).get(name) != budgets_of(checked.config).get(name)]
    decided = result.plan
    moved = {d.request_id for group in (decided.grants, decided.preemptions, decided.rejections,
                                        decided.cancellations) for d in group}
    owners = dict(RequestRow.objects.filter(pk__in=moved).values_list("id", "owner__username")) if moved else {}
    return DraftPreview(refusal_errors(result.refusals), result, {r.id: r for r in snapshot.requests}, owners,
                        budgets)
