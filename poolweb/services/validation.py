"""Judging a configuration document before it is saved as a draft or provisioned (docs/api.md §1,
R-55, R-57): the engine's checks, what JSON and the databases cannot hold, R-57 against the
live requests, and the groups a policy names. Every finding is a ``reconcile.document.Issue``
(path, code, message).

The draft is saved even when it is semantically invalid (S-12 step 1: an admin saves work in
progress), but never when it is *malformed* — wrong types, unreadable quantities, unknown fields,
oversized or non-JSON values — since such a body is not a configuration document at all and
would be stored garbage.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import Group
from django.db.models import Count

from poolweb.models import Request as RequestRow
from poolweb.selectors.snapshot import SNAPSHOT_FIELDS, to_engine
from reconcile import LIVE_STATES, Config
from reconcile.document import Issue, parse_document
from reconcile.document_checks import json_type
from reconcile.preview import Refusal, refused_removals

MAX_DEPTH = 32  # the document itself nests 5 deep; anything far deeper is garbage
MAX_NODES = 2_000_000  # bounds the walk of a YAML alias bomb; a full-size valid document stays below
MAX_TEXT = 1000  # the longest text §1 allows (a description): anything longer is garbage, even in a name
TOP_LEVEL = frozenset({"pools", "profiles", "policies"})
# Errors that make a body "malformed" (refused even as a draft): the value is not of the shape
# §1 describes. Everything else (names, references, semantics) is saved in a draft.
MALFORMED = frozenset({"invalid_type", "invalid_quantity", "invalid_key", "too_long", "too_many", "unknown_field",
                       "out_of_range", "too_many_errors", "invalid_character", "control_character",
                       "invalid_number", "too_deep", "too_large"})
REFUSAL_PATHS = {"pool": "pools", "profile": "profiles", "policy": "policies"}  # R-57 errors point at the list
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_NOT_STORABLE = "text must not contain NUL characters or unpaired surrogates"
_NOT_STORABLE_CHARACTER = re.compile("[\x00\ud800-\udfff]")  # a str holds a surrogate only unpaired
# What a terminal or a page would act on instead of showing: C0 and C1 controls (ESC, CSI, OSC: a
# window title, a cleared screen, a clipboard write), DEL, and the bidirectional embeddings,
# overrides and isolates that reorder what is shown. poolctl neutralises the same set
# (poolctl.render.printable) for text stored before this rule.
_CONTROL = "\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_CONTROL_CHARACTER = re.compile(f"[\n{_CONTROL}]")
_CONTROL_BUT_NEWLINE = re.compile(f"[{_CONTROL}]")
MULTILINE = frozenset({"description"})  # the document's fields of several lines (a textarea's)


@dataclass(frozen=True)
class Validation:
    config: Config | None  # None when there are errors
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors


def validate_document(document: Any) -> Validation:
    """Every error of ``document`` (engine and structure); warnings only when there is none."""
    parsed = parse_document(document)
    errors = _with_structure(list(parsed.errors), document)
    if errors or parsed.config is None:
        return Validation(None, errors)
    return Validation(parsed.config, [], list(parsed.warnings) + _group_warnings(parsed.config))


def validate_for_provision(document: Any) -> Validation:
    """``validate_document`` plus R-57 against the requests live right now."""
    checked = validate_document(document)
    if checked.config is None:
        return checked
    return Validation(checked.config, refusal_errors(removal_refusals(checked.config)), checked.warnings)


def malformed_errors(document: Any) -> list[Issue]:
    """The errors that refuse ``document`` even as a draft (see the module docstring)."""
    errors = [i for i in parse_document(document).errors
              if i.code in MALFORMED or (i.code == "required" and i.path in TOP_LEVEL)]
    return _with_structure(errors, document)  # every structure error is malformed


def removal_refusals(config: Config) -> tuple[Refusal, ...]:
    """R-57 against the requests live right now."""
    rows = RequestRow.objects.filter(state__in=LIVE_STATES)
    return refused_removals((to_engine(row) for row in rows.values_list(*SNAPSHOT_FIELDS)), config)


def refusal_errors(refusals: Iterable[Refusal]) -> list[Issue]:
    return [Issue(REFUSAL_PATHS[r.kind], "removal_refused",
                  f"{r.message}: release or cancel them before removing it (R-57)") for r in refusals]


def text_errors(value: Any, path: str, limit: int, multiline: bool = False) -> list[Issue]:
    """A free text field (a version's comment, its author): a string of at most ``limit`` storable
    characters without control characters (newlines allowed when ``multiline``)."""
    if not isinstance(value, str):
        return [Issue(path, "invalid_type", f"{path} is a string, not {json_type(value)}")]
    if len(value) > limit:
        return [Issue(path, "too_long", f"{path} has {len(value)} characters, at most {limit} are allowed")]
    return _character_errors(value, path, multiline)


def _with_structure(errors: list[Issue], document: Any) -> list[Issue]:
    """``errors`` plus what the engine does not look at: values JSON or the database cannot hold."""
    seen = {e.path for e in errors}
    return errors + [e for e in structure_errors(document) if e.path not in seen]


def structure_errors(document: Any) -> list[Issue]:
    """NUL characters and lone surrogates (PostgreSQL refuses them), control characters (a newline
    only in a ``MULTILINE`` field), text over ``MAX_TEXT``, non-finite numbers, non-JSON values (YAML
    dates, sets), non-string keys, nesting deeper than ``MAX_DEPTH``; the walk stops after
    ``MAX_NODES`` values or 100 findings."""
    found: list[Issue] = []
    stack: list[tuple[Any, str, int]] = [(document, "", 0)]
    visited = 0
    while stack and len(found) < 100:
        value, path, depth = stack.pop()
        visited += 1
        if visited > MAX_NODES:
            found.append(Issue("", "too_large", f"the document has more than {MAX_NODES:,} values"))
            break
        if depth > MAX_DEPTH:
            found.append(Issue(path, "too_deep", f"values nest at most {MAX_DEPTH} deep"))
        elif isinstance(value, dict):
            for key, inner in reversed(value.items()):
                if (not isinstance(key, str) or len(key) > MAX_TEXT or not storable(key)
                        or _CONTROL_CHARACTER.search(key)):
                    found.append(Issue(path, "invalid_key", "object keys are plain strings"))
                else:
                    stack.append((inner, _child(path, key), depth + 1))
        elif isinstance(value, list):
            stack.extend((inner, f"{path}[{i}]", depth + 1) for i, inner in reversed(list(enumerate(value))))
        else:
            found += _leaf_errors(value, path)
    return found


def _leaf_errors(value: Any, path: str) -> list[Issue]:
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            return [Issue(path, "too_long", f"text is at most {MAX_TEXT} characters")]
        return _character_errors(value, path, multiline=path.rpartition(".")[2] in MULTILINE)
    if isinstance(value, float) and not math.isfinite(value):
        return [Issue(path, "invalid_number", "numbers must be finite")]
    if not (value is None or isinstance(value, (bool, int, float))):
        return [Issue(path, "invalid_type", f"{json_type(value)} is not a JSON value")]
    return []


def _character_errors(text: str, path: str, multiline: bool) -> list[Issue]:
    if not storable(text):
        return [Issue(path, "invalid_character", _NOT_STORABLE)]
    found = (_CONTROL_BUT_NEWLINE if multiline else _CONTROL_CHARACTER).search(text)
    if found is None:
        return []
    line = "; this text is one line" if found.group() == "\n" else ""
    return [Issue(path, "control_character", f"text must not contain control characters: U+{ord(found.group()):04X} "
                                             f"at character {found.start() + 1}{line}")]


def storable(text: str) -> bool:
    """Whether both databases can store ``text``: no NUL (PostgreSQL), no lone surrogate (UTF-8)."""
    return _NOT_STORABLE_CHARACTER.search(text) is None


def _child(path: str, key: str) -> str:
    if not _PLAIN_KEY.fullmatch(key):
        return path  # an odd key is not echoed into a path
    return f"{path}.{key}" if path else key


def _group_warnings(config: Config) -> list[Issue]:
    """docs/api.md §1: a policy whose group does not exist or has no members (allowed: members can be
    added later, and admins may always submit)."""
    names = {p.group for p in config.policies if p.group}
    members = dict(Group.objects.filter(name__in=names).annotate(n=Count("user")).values_list("name", "n"))
    warnings = []
    for i, policy in enumerate(config.policies):
        path = f"policies[{i}].group"
        if not policy.group:
            warnings.append(Issue(path, "group_missing",
                                  f"policy {policy.name} names no group: only admins may submit to its queues"))
        elif policy.group not in members:
            warnings.append(Issue(path, "group_missing", f"group {policy.group!r} of policy {policy.name} does not "
                                                         "exist: only admins may submit to its queues until it is created"))
        elif members[policy.group] == 0:
            warnings.append(Issue(path, "group_empty", f"group {policy.group!r} of policy {policy.name} has no members yet"))
    return warnings
