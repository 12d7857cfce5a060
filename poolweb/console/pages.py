"""What a few pages show, shaped for their templates: the preview of the draft and the diff
between two versions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from poolweb.console.cards import optional_text
from poolweb.services.preview import DraftPreview
from reconcile import Decision
from reconcile.diff import KINDS, Change, show_value
from reconcile.preview import Preview
from reconcile.quantity import quantity_text
from reconcile.report import UsageRow, row_order

TITLES = {"pool": "Pools", "profile": "Profiles", "policy": "Policies"}
PREVIEW_GROUPS = (("granted", "grants", "Granted", "would start running"),
                  ("preempted", "preemptions", "Preempted", "would be asked to stop for others"),
                  ("rejected", "rejections", "Rejected", "could never run under the draft"),
                  ("cancelled", "cancellations", "Cancelled", "would lose their queue"))


@dataclass(frozen=True)
class FieldRow:
    field: str
    before: str
    after: str


@dataclass(frozen=True)
class ChangeCard:
    kind: str
    name: str
    action: str
    fields: tuple[FieldRow, ...]


def diff_sections(changes: Sequence[Change]) -> list[dict]:
    """The changes grouped by kind, each field's values as text."""
    sections = []
    for kind in KINDS:
        cards = [ChangeCard(c.kind, c.name, c.action,
                            tuple(FieldRow(f.field, show_value(f.before), show_value(f.after)) for f in c.fields))
                 for c in changes if c.kind == kind]
        if cards:
            sections.append({"kind": kind, "title": TITLES[kind], "changes": cards})
    return sections


@dataclass(frozen=True)
class RequestLine:
    id: int
    policy: str | None
    profile: str | None
    owner: str | None
    pool: str | None
    why: str


@dataclass(frozen=True)
class Figures:
    usage: str
    reserved: str | None
    limit: str | None


@dataclass(frozen=True)
class UsageLine:
    policy: str
    scope: str
    key: str
    before: Figures | None  # None: no such row before
    after: Figures | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


def preview_sections(result: DraftPreview, changes: Sequence[Change] | None) -> dict:
    """What provisioning the draft would do (services.preview, as POST /config/draft/preview
    answers it): the request groups in a fixed order, usage before and after, and the draft's
    ``changes`` to the configuration as sentences (None: the draft is invalid)."""
    plan = result.preview.plan if result.preview else None
    groups = [{"key": key, "title": title, "meaning": meaning,
               "requests": [_request_line(d, result) for d in (getattr(plan, attribute) if plan else ())]}
              for key, attribute, title, meaning in PREVIEW_GROUPS]
    return {"valid": result.valid, "errors": result.errors, "groups": groups,
            "usage": _usage_lines(result.preview) if result.preview else [],
            "decided": any(group["requests"] for group in groups), "budgets": result.budgets,
            "changes": None if changes is None else [str(change) for change in changes]}


def _request_line(decision: Decision, result: DraftPreview) -> RequestLine:
    request = result.requests.get(decision.request_id)
    return RequestLine(decision.request_id, request.policy if request else None, request.profile if request else None,
                       result.owners.get(decision.request_id), decision.pool, decision.message or decision.reason.value)


def _usage_lines(preview: Preview) -> list[UsageLine]:
    sides: dict[tuple[str, str, str], dict[str, UsageRow]] = {}
    for side, report in (("before", preview.usage_before), ("after", preview.usage_after)):
        for row in report:
            sides.setdefault((row.policy, row.scope, row.key), {})[side] = row
    return [UsageLine(*at, _figures(sides[at].get("before")), _figures(sides[at].get("after")))
            for at in sorted(sides, key=row_order)]


def _figures(row: UsageRow | None) -> Figures | None:
    if row is None:
        return None
    return Figures(quantity_text(row.usage), optional_text(row.reserved), optional_text(row.limit))

