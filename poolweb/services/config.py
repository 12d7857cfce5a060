"""The configuration: draft, provision, versions and the management switch (docs/api.md §1–2, spec
R-55…R-57). What a document is judged by is services/validation.py; what provisioning would do,
services/preview.py.

A provision holds the pass lock (so two provisions take numbers one after the other, and no pass
runs meanwhile) and, inside it, one transaction: refuse R-57 removals against the live requests
as they are at that moment, write the numbered version with its document and relational rows,
point the site at it. The pass lock comes first, as everywhere (decision 79): on SQLite the
transaction is the write lock, which a pass holding the pass lock may be waiting for. A reconcile
pass is asked for once the transaction is done. Validation happens before anything is written,
so a refused provision leaves no trace.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from poolweb.models import (
    ConfigVersion, Connection, Draft, Policy as PolicyRow, Pool as PoolRow, Profile as ProfileRow, Queue,
    Quota as QuotaRow, SiteState,
)
from poolweb.selectors.diffs import config_of
from poolweb.selectors.drafts import live_number
from poolweb.selectors.versions import ConfigNotFound, draft_get, live_version, version_get
from poolweb.services import audit, events
from poolweb.services.draft_base import base_version_errors, refuse_stale
from poolweb.services.payloads import api_time, json_ready
from poolweb.services.site import site_locked
from poolweb.services.triggers import reconcile_soon
from poolweb.services.validation import (
    Validation, malformed_errors, refusal_errors, removal_refusals, text_errors, validate_document,
    validate_for_provision,
)
from reconcile import Config
from reconcile.budgets import budget_document
from reconcile.diff import diff, summarize
from reconcile.document import Issue
from reconcile.document_writer import to_document

logger = logging.getLogger(__name__)

MAX_COMMENT = 500  # ConfigVersion.comment
MAX_AUTHOR_NAME = 150  # ConfigVersion.author_name


class DraftChanged(Exception):
    """The draft was saved again (or discarded) while it was being provisioned; nothing was."""

    def __init__(self) -> None:
        super().__init__("the draft changed while it was being provisioned; nothing was provisioned: "
                         "look at the draft and provision it again")


class DraftUnchanged(Exception):
    """The draft configures exactly what is live: a version of it would change nothing, so none is
    made (as ``config import`` does); the draft is left as it is."""

    def __init__(self, live_version: int) -> None:
        super().__init__(f"the draft configures exactly what version {live_version} does: nothing was provisioned")
        self.live_version = live_version


class ConfigInvalid(Exception):
    """A document or provision refused, with every finding (docs/api.md §1)."""

    def __init__(self, errors: list[Issue]) -> None:
        super().__init__(f"{len(errors)} error(s): " + "; ".join(f"{e.path}: {e.code}" for e in errors[:5]))
        self.errors = errors


def draft_validate() -> Validation:
    """The draft judged as a provision would judge it now, R-57 included; changes nothing."""
    return validate_for_provision(draft_get())


# Writes.


def config_provision_document(*, document: Any, author=None, author_name: str = "", comment: str = "",
                              if_changed: bool = False) -> ConfigVersion | None:
    """Validate and publish ``document`` as the next version (R-55); ``ConfigInvalid`` otherwise.
    ``author`` is an account, or else ``author_name`` says who (a command line's user). With
    ``if_changed``, a document that is the live configuration already writes nothing and gives
    None: a deployment that applies its file every time makes no new version."""
    version = _provision(document=document, author=author, author_name=author_name, comment=comment,
                         if_changed=if_changed)
    if version is not None:
        _reconcile_after_change()
    return version


def draft_provision(*, user, comment: str = "", confirm_stale: bool = False) -> ConfigVersion:
    """Provision the draft and discard it, in one transaction (S-12 step 3 and 4); ``DraftStale``
    when it was made from a version no longer live and ``confirm_stale`` is false, ``DraftChanged``
    when the draft was saved again while it was being provisioned, ``DraftUnchanged`` (nothing
    written) when it configures exactly what is live."""
    with site_locked():  # the live version stays put from the staleness check to the publish
        draft = Draft.objects.filter(pk=1).first()
        if draft is None:
            raise ConfigNotFound("there is no draft")
        refuse_stale(draft, confirmed=confirm_stale)
        version = _provision(document=draft.document, author=user, comment=comment, draft=draft, if_changed=True)
        if version is None:
            raise DraftUnchanged(live_number())
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


@transaction.atomic
def draft_delete(*, user=None) -> None:
    """Discard the draft; nothing happens when there is none (DELETE is idempotent). ``user``
    discards it (None: an operator at the command line); a draft discarded is audited."""
    draft = Draft.objects.select_for_update().filter(pk=1).first()
    if draft is None:
        return
    draft.delete()
    audit.record(actor=user, action="draft.reset", target="draft",
                 before=f"draft from version {draft.based_on or 0}", after="no draft",
                 detail={"based_on": draft.based_on, "saved_by": draft.updated_by.get_username()
                         if draft.updated_by else None, "saved_at": api_time(draft.updated_at)})


@transaction.atomic
def version_restore(*, number: int, user) -> dict:
    """Copy version ``number`` into the draft (rollback = restore + provision), made from the
    version live now."""
    version = version_get(number)
    live = live_number()
    Draft.objects.update_or_create(pk=1, defaults={"document": version.document, "based_on": version.number,
                                                   "base_version": live,
                                                   "updated_by": user, "updated_at": timezone.now()})
    # The two versions are the reference: what the draft now changes is their diff (decision 157).
    audit.record(actor=user, action="version.restore", target=f"version:{number}", before=f"live version {live}",
                 after=f"draft of version {number}", detail={"restored": number, "live": live})
    return version.document


def management_set(*, enabled: bool, user) -> bool:
    """Switch resource management on or off (R-30, R-58); the new state."""
    with site_locked() as state, transaction.atomic():
        changed = state.management_enabled != enabled
        state.management_enabled = enabled
        if changed:
            state.management_changed_by, state.management_changed_at = user, timezone.now()
        state.save(update_fields=["management_enabled", "management_changed_by", "management_changed_at"])
        if changed:
            events.publish(events.MANAGEMENT_CHANGED, {"enabled": enabled, "by": getattr(user, "username", None),
                                                       "at": api_time(state.management_changed_at)})
            audit.record(actor=user, action="management.switch", target="management",
                         before=audit.on_off(not enabled), after=audit.on_off(enabled))
    logger.info("management %s by %s", "enabled" if enabled else "disabled", getattr(user, "username", None))
    _reconcile_after_change()
    return enabled


def _provision(*, document: Any, author, comment: str, author_name: str = "",
               if_changed: bool = False, draft: Draft | None = None) -> ConfigVersion | None:
    """Publish ``document``; with ``draft`` (the one it was read from), discard that draft in the
    same transaction."""
    # The document is judged before the transaction: on SQLite a transaction holds the write lock.
    checked = validate_document(_without_version(document))
    errors = (checked.errors + text_errors(comment, "comment", MAX_COMMENT, multiline=True)
              + text_errors(author_name, "author", MAX_AUTHOR_NAME))
    if errors or checked.config is None:
        raise ConfigInvalid(errors)
    normalised = json_ready(to_document(checked.config))
    with site_locked() as state:
        before = config_of(state.live_version)  # the live one stays put: the pass lock is held
        if if_changed and state.live_version is not None and state.live_version.document == normalised:
            return None
        with transaction.atomic():
            return _publish(state, checked.config, normalised, summarize(diff(before, checked.config)),
                            author=author, author_name=author_name, comment=comment, draft=draft)


def _publish(state: SiteState, config: Config, normalised: dict, summary: str, *, author, author_name: str,
             comment: str, draft: Draft | None) -> ConfigVersion:
    """The version written and made live, in the caller's transaction (under the pass lock)."""
    # R-57 is checked under the lock, against the requests live at this moment.
    refusals = removal_refusals(config)
    if refusals:
        raise ConfigInvalid(refusal_errors(refusals))
    number = (ConfigVersion.objects.aggregate(top=Max("number"))["top"] or 0) + 1
    previous = state.live_version.number if state.live_version is not None else 0
    version = ConfigVersion.objects.create(number=number, document=normalised, author=author,
                                           author_name="" if author is not None else author_name, comment=comment,
                                           summary=summary)
    _write_rows(version, config)
    state.live_version = version
    state.save(update_fields=["live_version"])
    if draft is not None and not Draft.objects.filter(pk=1, updated_at=draft.updated_at).delete()[0]:
        raise DraftChanged()  # a save after our read: publishing what it replaced would lose it
    events.publish(events.CONFIG_PROVISIONED, {
        "version": number, "author": version.author_label, "comment": comment,
        "created_at": api_time(version.created_at)})
    # What it changed is the version's own summary; the whole diff is the versions' (decision 157).
    audit.record(actor=author, actor_name=author_name, action="config.provision", target=f"version:{number}",
                 before=previous, after=number, detail={"summary": summary, "comment": comment})
    return version


def _write_rows(version: ConfigVersion, config: Config) -> None:
    """The version as rows, quantities in milli-units, both orders of every connection."""
    pools = {row.name: row for row in PoolRow.objects.bulk_create(
        [PoolRow(version=version, name=p.name, display_name=p.display_name, description=p.description,
                 capacity=dict(p.capacity), labels=dict(p.labels)) for p in config.pools])}
    profiles = {row.name: row for row in ProfileRow.objects.bulk_create(
        [ProfileRow(version=version, name=p.name, display_name=p.display_name, description=p.description,
                    resources=dict(p.resources), dynamic=p.dynamic) for p in config.profiles])}
    policies = {row.name: row for row in PolicyRow.objects.bulk_create(
        [PolicyRow(version=version, name=p.name, display_name=p.display_name, description=p.description,
                   group_name=p.group, priority=p.priority,
                   budget=None if p.budget is None else json_ready(budget_document(p.budget)),
                   min_runtime_seconds=p.min_runtime_seconds, max_runtime_seconds=p.max_runtime_seconds,
                   require_max_runtime=p.require_max_runtime, on_time_limit=p.on_time_limit,
                   max_wait_seconds=p.max_wait_seconds)
         for p in config.policies])}
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
