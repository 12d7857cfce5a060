"""What a few pages show, shaped for their templates: the preview of the draft, the diff between
two versions, and the pages of the console's part 2 (not built yet: they say what will be there
and where the API already answers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reconcile.diff import KINDS, Change, show_value

TITLES = {"pool": "Pools", "profile": "Profiles", "policy": "Policies"}
PREVIEW_GROUPS = (("granted", "Granted", "would start running"),
                  ("preempted", "Preempted", "would be asked to stop for others"),
                  ("rejected", "Rejected", "could never run under the draft"),
                  ("cancelled", "Cancelled", "would lose their queue"))


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


def preview_sections(preview: Mapping, changes: Sequence[Change] | None) -> dict:
    """The API's preview (services.preview), with its request groups in a fixed order and each
    usage row saying whether it changes, and the draft's ``changes`` to the configuration as
    sentences (None: the draft is invalid)."""
    groups = [{"key": key, "title": title, "meaning": meaning, "requests": preview.get(key, [])}
              for key, title, meaning in PREVIEW_GROUPS]
    usage = [{**row, "changed": row.get("before") != row.get("after")} for row in preview.get("usage", [])]
    return {"valid": preview.get("valid"), "errors": preview.get("errors", []), "groups": groups,
            "usage": usage, "decided": any(group["requests"] for group in groups),
            "changes": None if changes is None else [str(change) for change in changes]}


COMING = {
    "queues": {"title": "Queues", "what": "Live queues: per pool, the running and pending requests in service order, "
               "with each pending request's position and the reason it waits, updated as they change.",
               "api": [("GET /api/v1/pools", "/api/v1/pools"), ("GET /api/v1/pools/{name}/queue", None)]},
    "policies": {"title": "Policies", "what": "Usage against the reserved share and the limit of each policy, per "
                 "key and scope, with the share it borrows and its queued and running requests.",
                 "api": [("GET /api/v1/policies", "/api/v1/policies")]},
    "requests": {"title": "Requests", "what": "Your requests (administrators: everyone's) with their state, and "
                 "each request's history: every state change with its time and reason.",
                 "api": [("GET /api/v1/requests", "/api/v1/requests")]},
    "tokens": {"title": "Tokens", "what": "Personal API tokens for scripts and the job client: create one "
               "(shown once), see when each was last used, revoke it.",
               "api": [("manage.py create_api_token USERNAME", None)]},
}
