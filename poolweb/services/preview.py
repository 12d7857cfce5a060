"""Previewing the draft: what provisioning it would do to the live requests, as the engine's
preview says (docs/api.md §2, R-55…R-57)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils import timezone

from poolweb.models import Request as RequestRow
from poolweb.selectors.snapshot import load_pass_input
from poolweb.selectors.versions import draft_get
from poolweb.services.validation import refusal_errors, validate_document
from reconcile import Request
from reconcile.document import Issue
from reconcile.preview import Preview, preview


@dataclass(frozen=True)
class DraftPreview:
    errors: list[Issue]  # why the draft cannot be provisioned: its errors, or R-57 refusals
    preview: Preview | None = None  # None when the draft does not validate
    requests: dict[int, Request] = field(default_factory=dict)  # the live requests, by id
    owners: dict[int, str] = field(default_factory=dict)  # usernames of the requests the preview moves

    @property
    def valid(self) -> bool:
        return not self.errors


def draft_preview() -> DraftPreview:
    """What provisioning the draft would do to the live requests now; changes nothing."""
    checked = validate_document(draft_get())
    if checked.config is None:
        return DraftPreview(checked.errors)
    read = load_pass_input(timezone.now())
    snapshot = read.snapshot
    result = preview(snapshot, checked.config, read.version.terms)
    decided = result.plan
    moved = {d.request_id for group in (decided.grants, decided.preemptions, decided.rejections,
                                        decided.cancellations) for d in group}
    owners = dict(RequestRow.objects.filter(pk__in=moved).values_list("id", "owner__username")) if moved else {}
    return DraftPreview(refusal_errors(result.refusals), result, {r.id: r for r in snapshot.requests}, owners)
