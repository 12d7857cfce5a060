"""The configuration: draft, validation, provision, versions and the management switch (the
preview is services/preview.py; api.md §1–2, spec R-55…R-57).

A provision is one transaction: lock the SiteState row (so two provisions take numbers one
after the other), refuse R-57 removals against the live requests as they are at that moment,
write the numbered version with its document and relational rows, point SiteState at it. A
reconcile pass is asked for once the transaction is done. Validation happens before anything
is written, so a refused provision leaves no trace.

The draft is one row kept apart from the live version. It is saved even when it is
semantically invalid (S-12 step 1: an admin saves work in progress), but never when it is
*malformed* — wrong types, unreadable quantities, unknown fields, oversized or non-JSON values —
since such a body is not a configuration document at all and would be stored garbage.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Count, Max, QuerySet
from django.utils import timezone

from poolweb.models import (
    ConfigVersion, Connection, Draft, Policy as PolicyRow, Pool as PoolRow, Profile as ProfileRow, Queue,
    Quota as QuotaRow, Request as RequestRow,
)
from poolweb.services.draft_base import base_version_errors, live_number, refuse_stale
from poolweb.services.state import SNAPSHOT_FIELDS, live_version, site_state, to_engine
from poolweb.services import events
from poolweb.services.triggers import reconcile_soon
from reconcile import Config, State
from reconcile.document import Issue, parse_document, to_document
from reconcile.document_checks import json_type
from reconcile.preview import Refusal, refused_removals

logger = logging.getLogger(__name__)

MAX_COMMENT = 500  # ConfigVersion.comment
MAX_DEPTH = 32  # the document itself nests 5 deep; anything far deeper is garbage
MAX_NODES = 2_000_000  # bounds the walk of a YAML alias bomb; a full-size valid document stays below
MAX_TEXT = 1000  # the longest text §1 allows (a description): anything longer is garbage, even in a name
EMPTY_DOCUMENT = {"pools": [], "profiles": [], "policies": []}
TOP_LEVEL = frozenset(EMPTY_DOCUMENT)
# Errors that make a body "malformed" (refused even as a draft): the value is not of the shape
# §1 describes. Everything else (names, references, semantics) is saved in a draft.
MALFORMED = frozenset({"invalid_type", "invalid_quantity", "invalid_key", "too_long", "too_many", "unknown_field",
                       "out_of_range", "too_many_errors", "invalid_character", "invalid_number", "too_deep",
                       "too_large"})
REFUSAL_PATHS = {"pool": "pools", "profile": "profiles", "policy": "policies"}  # R-57 errors point at the list
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")


class ConfigInvalid(Exception):
    """A document or provision refused; ``errors`` are ``{path, code, message}`` (api.md §1)."""

    def __init__(self, errors: list[dict]) -> None:
        super().__init__(f"{len(errors)} error(s): " + "; ".join(f"{e['path']}: {e['code']}" for e in errors[:5]))
        self.errors = errors


class ConfigNotFound(LookupError):
    """No draft, or no version with that number."""


# Reads.


def config_live_document() -> dict:
    """The provisioned document with its ``version``; version 0 and empty lists before any."""
    version = live_version()
    if version is None:
        return {"version": 0, **EMPTY_DOCUMENT}
    return {"version": version.number, **version.document}


def version_list() -> QuerySet[ConfigVersion]:
    return ConfigVersion.objects.select_related("author").order_by("-number")


def version_document(*, number: int) -> dict:
    version = _version(number)
    return {"version": version.number, **version.document}


def draft_get() -> dict:
    draft = Draft.objects.filter(pk=1).first()
    if draft is None:
        raise ConfigNotFound("there is no draft")
    return draft.document


def management_get() -> dict:
    return {"enabled": site_state().management_enabled}


def _version(number: int) -> ConfigVersion:
    # Out-of-range numbers would overflow the database integer instead of simply not matching.
    version = ConfigVersion.objects.filter(number=number).first() if 0 < number < 2**31 else None
    if version is None:
        raise ConfigNotFound(f"there is no configuration version {number}")
    return version


# Validation.


@dataclass
class Validation:
    config: Config | None  # None when there are errors
    errors: list[dict] = field(default_factory=list)
    warnings: list[dict] = field(default_factory=list)


def validate_document(document: Any) -> Validation:
    """Every error of ``document`` (engine and structure); warnings only when there is none."""
    parsed = parse_document(document)
    errors = _with_structure([_issue(i) for i in parsed.errors], document)
    if errors or parsed.config is None:
        return Validation(None, errors)
    warnings = [_issue(i) for i in parsed.warnings] + _group_warnings(parsed.config)
    return Validation(parsed.config, [], warnings)


def malformed_errors(document: Any) -> list[dict]:
    """The errors that refuse ``document`` even as a draft (see the module docstring)."""
    errors = [_issue(i) for i in parse_document(document).errors
              if i.code in MALFORMED or (i.code == "required" and i.path in TOP_LEVEL)]
    return _with_structure(errors, document)  # every structure error is malformed


def removal_refusals(config: Config) -> tuple[Refusal, ...]:
    """R-57 against the requests live right now."""
    rows = RequestRow.objects.filter(state__in=(State.ALLOCATED.value, State.PREEMPTING.value))
    return refused_removals((to_engine(row) for row in rows.values_list(*SNAPSHOT_FIELDS)), config)


def refusal_errors(refusals: Iterable[Refusal]) -> list[dict]:
    return [{"path": REFUSAL_PATHS[r.kind], "code": "removal_refused",
             "message": f"{r.message}: release or cancel them before removing it (R-57)"} for r in refusals]


def draft_validate() -> dict:
    checked = validate_document(draft_get())
    errors = checked.errors + (refusal_errors(removal_refusals(checked.config)) if checked.config else [])
    return {"valid": not errors, "errors": errors, "warnings": checked.warnings}


def _issue(issue: Issue) -> dict:
    return {"path": issue.path, "code": issue.code, "message": issue.message}


def _with_structure(errors: list[dict], document: Any) -> list[dict]:
    """``errors`` plus what the engine does not look at: values JSON or the database cannot hold."""
    seen = {e["path"] for e in errors}
    return errors + [e for e in structure_errors(document) if e["path"] not in seen]


def structure_errors(document: Any) -> list[dict]:
    """NUL characters and lone surrogates (PostgreSQL refuses them), text over ``MAX_TEXT``,
    non-finite numbers, non-JSON values (YAML dates, sets), non-string keys, nesting deeper than
    ``MAX_DEPTH``; the walk stops after ``MAX_NODES`` values or 100 findings."""
    found: list[dict] = []
    stack: list[tuple[Any, str, int]] = [(document, "", 0)]
    visited = 0
    while stack and len(found) < 100:
        value, path, depth = stack.pop()
        visited += 1
        if visited > MAX_NODES:
            found.append({"path": "", "code": "too_large", "message": f"the document has more than {MAX_NODES:,} values"})
            break
        if depth > MAX_DEPTH:
            found.append({"path": path, "code": "too_deep", "message": f"values nest at most {MAX_DEPTH} deep"})
        elif isinstance(value, str):
            if len(value) > MAX_TEXT:
                found.append({"path": path, "code": "too_long", "message": f"text is at most {MAX_TEXT} characters"})
            elif not _storable(value):
                found.append({"path": path, "code": "invalid_character",
                              "message": "text must not contain NUL characters or unpaired surrogates"})
        elif isinstance(value, dict):
            for key, inner in reversed(value.items()):
                if not isinstance(key, str) or len(key) > MAX_TEXT or not _storable(key):
                    found.append({"path": path, "code": "invalid_key", "message": "object keys are plain strings"})
                else:
                    stack.append((inner, _child(path, key), depth + 1))
        elif isinstance(value, list):
            stack.extend((inner, f"{path}[{i}]", depth + 1) for i, inner in reversed(list(enumerate(value))))
        elif isinstance(value, float) and not math.isfinite(value):
            found.append({"path": path, "code": "invalid_number", "message": "numbers must be finite"})
        elif not (value is None or isinstance(value, (bool, int, float))):
            found.append({"path": path, "code": "invalid_type", "message": f"{json_type(value)} is not a JSON value"})
    return found


def _storable(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _child(path: str, key: str) -> str:
    if not _PLAIN_KEY.fullmatch(key):
        return path  # an odd key is not echoed into a path
    return f"{path}.{key}" if path else key


def _group_warnings(config: Config) -> list[dict]:
    """api.md §1: a policy whose group does not exist or has no members (allowed: members can be
    added later, and admins may always submit)."""
    names = {p.group for p in config.policies if p.group}
    members = dict(Group.objects.filter(name__in=names).annotate(n=Count("user")).values_list("name", "n"))
    warnings = []
    for i, policy in enumerate(config.policies):
        path = f"policies[{i}].group"
        if not policy.group:
            warnings.append({"path": path, "code": "group_missing",
                             "message": f"policy {policy.name} names no group: only admins may submit to its queues"})
        elif policy.group not in members:
            warnings.append({"path": path, "code": "group_missing",
                             "message": f"group {policy.group!r} of policy {policy.name} does not exist: only admins "
                                        "may submit to its queues until it is created"})
        elif members[policy.group] == 0:
            warnings.append({"path": path, "code": "group_empty",
                             "message": f"group {policy.group!r} of policy {policy.name} has no members yet"})
    return warnings


# Writes.


def config_provision_document(*, document: Any, author=None, comment: str = "") -> ConfigVersion:
    """Validate and publish ``document`` as the next version (R-55); ``ConfigInvalid`` otherwise."""
    version = _provision(document=document, author=author, comment=comment)
    _reconcile_after_change()
    return version


def draft_provision(*, user, comment: str = "", confirm_stale: bool = False) -> ConfigVersion:
    """Provision the draft and discard it, in one transaction (S-12 step 3 and 4); ``DraftStale``
    when it was made from a version no longer live and ``confirm_stale`` is false."""
    with transaction.atomic():
        draft = Draft.objects.select_for_update().filter(pk=1).first()
        if draft is None:
            raise ConfigNotFound("there is no draft")
        site_state(for_update=True)  # the live version stays put from the check to the publish
        refuse_stale(draft, confirmed=confirm_stale)
        version = _provision(document=draft.document, author=user, comment=comment)
        draft.delete()
    _reconcile_after_change()
    return version


@transaction.atomic
def draft_save(*, document: Any, user, base_version: int | None = None) -> dict:
    """Replace the draft; ``ConfigInvalid`` only when ``document`` is malformed or
    ``base_version`` (the live version it was made from, services.draft_base) is unknown. A
    ``version`` field is dropped: it is read-only and a draft has none."""
    document = _without_version(document)
    errors = malformed_errors(document) + base_version_errors(base_version)
    if errors:
        raise ConfigInvalid(errors)
    existing = Draft.objects.select_for_update().filter(pk=1).first()
    live = live_version()
    based_on = existing.based_on if existing else (live.number if live else None)
    Draft.objects.update_or_create(pk=1, defaults={"document": document, "based_on": based_on,
                                                   "base_version": base_version,
                                                   "updated_by": user, "updated_at": timezone.now()})
    return document


def draft_delete() -> None:
    """Discard the draft; nothing happens when there is none (DELETE is idempotent)."""
    Draft.objects.filter(pk=1).delete()


@transaction.atomic
def version_restore(*, number: int, user) -> dict:
    """Copy version ``number`` into the draft (rollback = restore + provision), made from the
    version live now."""
    version = _version(number)
    Draft.objects.update_or_create(pk=1, defaults={"document": version.document, "based_on": version.number,
                                                   "base_version": live_number(),
                                                   "updated_by": user, "updated_at": timezone.now()})
    return version.document


def management_set(*, enabled: bool, user) -> dict:
    with transaction.atomic():
        state = site_state(for_update=True)
        changed = state.management_enabled != enabled
        state.management_enabled = enabled
        state.save(update_fields=["management_enabled"])
        if changed:
            events.publish(events.MANAGEMENT_CHANGED, {"enabled": enabled, "by": getattr(user, "username", None)})
    logger.info("management %s by %s", "enabled" if enabled else "disabled", getattr(user, "username", None))
    _reconcile_after_change()
    return {"enabled": enabled}


def _provision(*, document: Any, author, comment: str) -> ConfigVersion:
    # The document is judged before the transaction: on SQLite a transaction holds the write lock.
    checked = validate_document(_without_version(document))
    errors = checked.errors + _comment_errors(comment)
    if errors or checked.config is None:
        raise ConfigInvalid(errors)
    with transaction.atomic():
        state = site_state(for_update=True)
        # R-57 is checked under the lock, against the requests live at this moment.
        refusals = removal_refusals(checked.config)
        if refusals:
            raise ConfigInvalid(refusal_errors(refusals))
        number = (ConfigVersion.objects.aggregate(top=Max("number"))["top"] or 0) + 1
        version = ConfigVersion.objects.create(number=number, document=json_ready(to_document(checked.config)),
                                               author=author, comment=comment)
        _write_rows(version, checked.config)
        state.live_version = version
        state.save(update_fields=["live_version"])
        events.publish(events.CONFIG_PROVISIONED, {
            "version": number, "author": getattr(author, "username", None), "comment": comment,
            "created_at": version.created_at.isoformat()})
    return version


def _comment_errors(comment: Any) -> list[dict]:
    if not isinstance(comment, str):
        return [{"path": "comment", "code": "invalid_type", "message": f"comment is a string, not {json_type(comment)}"}]
    if len(comment) > MAX_COMMENT:
        return [{"path": "comment", "code": "too_long",
                 "message": f"comment has {len(comment)} characters, at most {MAX_COMMENT} are allowed"}]
    if not _storable(comment):
        return [{"path": "comment", "code": "invalid_character",
                 "message": "text must not contain NUL characters or unpaired surrogates"}]
    return []


def _write_rows(version: ConfigVersion, config: Config) -> None:
    """The version as rows, quantities in milli-units, both orders of every connection."""
    pools = {row.name: row for row in PoolRow.objects.bulk_create(
        [PoolRow(version=version, name=p.name, description=p.description, capacity=dict(p.capacity))
         for p in config.pools])}
    profiles = {row.name: row for row in ProfileRow.objects.bulk_create(
        [ProfileRow(version=version, name=p.name, description=p.description, resources=dict(p.resources),
                    dynamic=p.dynamic) for p in config.profiles])}
    policies = {row.name: row for row in PolicyRow.objects.bulk_create(
        [PolicyRow(version=version, name=p.name, description=p.description, group_name=p.group,
                   priority=p.priority) for p in config.policies])}
    Connection.objects.bulk_create([
        Connection(profile=profiles[p.name], pool=pools[pool], name=_connection_name(p.connection_names, j, pool),
                   precedence=j, execution_position=config.execution_index[(pool, p.name)])
        for p in config.profiles for j, pool in enumerate(p.pools)], batch_size=1000)
    QuotaRow.objects.bulk_create([
        QuotaRow(policy=policies[p.name], scope=q.scope, key=q.key, reserved=q.reserved, limit=q.limit)
        for p in config.policies for q in p.quotas], batch_size=1000)
    Queue.objects.bulk_create([
        Queue(profile=profiles[p.name], policy=policies[name], rank=rank)
        for p in config.profiles for rank, name in enumerate(p.policies)], batch_size=1000)


def _connection_name(names: tuple[str, ...], place: int, pool: str) -> str:
    return names[place] if place < len(names) and names[place] else pool


def _without_version(document: Any) -> Any:
    if isinstance(document, dict) and "version" in document:
        return {k: v for k, v in document.items() if k != "version"}
    return document


def _reconcile_after_change() -> None:
    # The change is committed and the caller is told so; a failing pass must not turn that into
    # an error (the next trigger or the worker runs it again), but it must be seen in the logs.
    try:
        reconcile_soon("config")
    except Exception:  # noqa: BLE001
        logger.exception("the reconcile pass after a configuration change failed")


def json_ready(value: Any) -> Any:
    """Decimals (from ``to_document``/``format_quantity``) as JSON numbers. A valid quantity has at
    most 15 significant digits (≤ 10^12, three decimals), which a float holds exactly."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    return value
