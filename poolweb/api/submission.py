"""Reading a submission body (``POST /requests``, docs/api.md §3) into a ``services.requests.Submission``.

Every field is checked and all errors are reported together, each with its path and a stable
code. Choices where api.md is silent:
- ``null`` is no field's value; integers and booleans must be JSON integers and booleans;
- ``resources`` may repeat ``step_run: 1`` (as a returned request object shows it), no other value;
- a dynamic profile's allotment gives the amount of every key the request leaves out; a key
  given as 0 (``gpu_count: 0``) removes it;
- text refuses control characters (PostgreSQL cannot store NUL) and lone surrogates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from poolweb.services.requests import MAX_RETRIES, Refusal, Submission
from poolweb.services.validation import storable
from reconcile import Config, Profile, Vector, lifecycle
from reconcile.document import Issue
from reconcile import STEP_RUN
from reconcile.document import MAX_SECONDS
from reconcile.document_checks import json_type, show
from reconcile.resource_settings import ResourceError, child, read_resources, resources_from_settings

FIELDS = ("policy", "profile", "resources", "resource_settings", "preemptible", "max_retries", "lease_seconds",
          "max_runtime_seconds", "name", "labels", "owner")  # ``owner`` is read apart, first (``read_owner``)
MAX_NAME, MAX_LABELS, MAX_LABEL_KEY, MAX_LABEL_VALUE, MAX_IDEMPOTENCY_KEY = 200, 50, 63, 200, 200
MAX_USERNAME = 150  # Django's
LEASE_BOUNDS = (lifecycle.LEASE_SECONDS_MIN, lifecycle.LEASE_SECONDS_MAX)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class SubmissionInvalid(Refusal):
    """The body cannot be accepted; ``errors`` lists every problem."""

    def __init__(self, errors: list[Issue]) -> None:
        super().__init__(errors[0].message if errors else "invalid input")
        self.errors = errors


def idempotency_key_errors(key: str) -> list[Issue]:
    if 1 <= len(key) <= MAX_IDEMPOTENCY_KEY and key.isprintable():
        return []
    return [Issue("Idempotency-Key", "invalid",
                  f"the Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY} printable characters")]


def read_owner(data: Any) -> str | None:
    """The optional ``owner`` of a submission (a username: submitting for that user, decision 131),
    read before the rest: it decides whose group and pending cap are checked. A body that is no
    object has none: reading the rest says what is wrong with it."""
    if not isinstance(data, Mapping) or "owner" not in data:
        return None
    errors: list[Issue] = []
    owner = _text(data["owner"], "owner", MAX_USERNAME, errors, empty=False)
    if errors:
        raise SubmissionInvalid(errors)
    return owner


@dataclass(frozen=True)
class SubmissionBody:
    """A submission's body, read when ``services.requests.request_submit`` gets to it: after a
    retried ``Idempotency-Key`` and the pending cap, which answer before the body is parsed."""

    request: Any  # DRF's request: its ``data`` is parsed on first use

    def owner_name(self) -> str | None:
        return read_owner(self.request.data)

    def read(self, config: Config) -> Submission:
        return read_submission(self.request.data, config)


@dataclass(frozen=True)
class SubmissionItem:
    """One item of ``POST /requests/batch``: a submission body with its own ``idempotency_key``,
    which ``item_key`` reads and the submission leaves out."""

    data: Any

    def owner_name(self) -> str | None:
        return read_owner(self.data)

    def read(self, config: Config) -> Submission:
        data = self.data
        if isinstance(data, Mapping):
            data = {key: value for key, value in data.items() if key != "idempotency_key"}
        return read_submission(data, config)


def item_key(data: Any) -> str | None:
    """A batch item's ``idempotency_key``; ``SubmissionInvalid`` naming it when it is no key."""
    if not isinstance(data, Mapping) or "idempotency_key" not in data:
        return None
    key = data["idempotency_key"]
    if not isinstance(key, str) or idempotency_key_errors(key):
        raise SubmissionInvalid([Issue("idempotency_key", "invalid",
                                       f"idempotency_key is 1 to {MAX_IDEMPOTENCY_KEY} printable characters")])
    return key


def read_submission(data: Any, config: Config) -> Submission:
    """Validate a submission body against the live configuration; every error at once."""
    if not isinstance(data, Mapping):
        raise SubmissionInvalid([Issue("", "invalid_type", "the body must be a JSON object")])
    errors = [Issue(child("", field), "unknown_field",
                    f"{show(field)} is not a field of a request; the fields are {', '.join(FIELDS)}")
              for field in data if field not in FIELDS]
    policy, profile = _queue(data, config, errors)
    resources = _resources(data, profile, errors)
    values = dict(
        preemptible=_boolean(data, "preemptible", True, errors),
        max_retries=_integer(data, "max_retries", 0, (0, MAX_RETRIES), errors),
        lease_seconds=_integer(data, "lease_seconds", lifecycle.LEASE_SECONDS_DEFAULT, LEASE_BOUNDS, errors),
        name=_text(data.get("name", ""), "name", MAX_NAME, errors) or "",
        labels=_labels(data.get("labels", {}), errors),
        max_runtime_seconds=_run_limit(data, config.policy.get(policy) if policy else None, errors),
    )
    if errors or policy is None or profile is None or resources is None:
        raise SubmissionInvalid(errors)
    return Submission(policy=policy, profile=profile.name, resources=resources, **values)


def _queue(data: Mapping, config: Config, errors: list[Issue]) -> tuple[str | None, Profile | None]:
    """The policy name and the profile, when they name a queue of the live configuration."""
    policy, profile = (_reference(data, field, errors) for field in ("policy", "profile"))
    if not config.policies:
        if policy is not None:
            errors.append(Issue("policy", "unknown_policy", "no configuration is provisioned: there are no queues"))
        return None, None
    if policy is not None and policy not in config.policy:
        errors.append(Issue("policy", "unknown_policy", f"there is no policy named {show(policy)}"))
        policy = None
    if profile is not None and profile not in config.profile:
        errors.append(Issue("profile", "unknown_profile", f"there is no profile named {show(profile)}"))
        profile = None
    if policy is not None and profile is not None and not config.queue_exists(policy, profile):
        errors.append(Issue("policy", "unknown_queue",
                            f"policy {policy} may not use profile {profile}: there is no queue {policy}/{profile}"))
        return None, None
    return policy, (config.profile[profile] if profile is not None else None)


def _reference(data: Mapping, field: str, errors: list[Issue]) -> str | None:
    if field not in data:
        errors.append(Issue(field, "required", f"{field} is required"))
        return None
    if not isinstance(data[field], str):
        errors.append(Issue(field, "invalid_type", f"{field} is a name (a string), not {json_type(data[field])}"))
        return None
    return data[field]


def _resources(data: Mapping, profile: Profile | None, errors: list[Issue]) -> Vector | None:
    """The request's vector: a fixed profile's allotment, or a dynamic one's allotment overridden by
    the keys the request gives (``resources`` or ``resource_settings``); plus step_run: 1."""
    given: dict[str, int] = {}
    for field, read in (("resources", read_resources), ("resource_settings", resources_from_settings)):
        if field not in data:
            continue
        try:
            given = read(data[field], field)
        except ResourceError as error:
            errors.append(Issue(error.path, error.code, error.message))
            continue
        if profile is not None and not profile.dynamic:
            errors.append(Issue(field, "fixed_profile",
                                f"profile {profile.name} is fixed ({profile.resources}): only a dynamic profile "
                                f"takes {field}"))
    if "resources" in data and "resource_settings" in data:
        errors.append(Issue("resource_settings", "conflict", "give resources or resource_settings, not both"))
    if profile is None:
        return None
    return Vector({**profile.resources, **given, **STEP_RUN})


def _boolean(data: Mapping, field: str, default: bool, errors: list[Issue]) -> bool:
    value = data.get(field, default)
    if not isinstance(value, bool):
        errors.append(Issue(field, "invalid_type", f"{field} is true or false, not {json_type(value)}"))
        return default
    return value


def _run_limit(data: Mapping, policy, errors: list[Issue]) -> int | None:
    """R-52: the declared ``max_runtime_seconds``, within its policy's cap, and present where the
    policy requires one."""
    field = "max_runtime_seconds"
    if field not in data:
        if policy is not None and policy.require_max_runtime:
            errors.append(Issue(field, "required", f"policy {policy.name} requires {field}"))
        return None
    declared = _integer(data, field, 0, (1, MAX_SECONDS), errors)
    if declared and policy is not None and policy.max_runtime_seconds is not None \
            and declared > policy.max_runtime_seconds:
        errors.append(Issue(field, "out_of_range", f"policy {policy.name} allows at most "
                                                   f"{policy.max_runtime_seconds:,} seconds"))
    return declared or None


def _integer(data: Mapping, field: str, default: int, bounds: tuple[int, int], errors: list[Issue]) -> int:
    value, (low, high) = data.get(field, default), bounds
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(Issue(field, "invalid_type", f"{field} is an integer, not {json_type(value)}"))
        return default
    if not low <= value <= high:
        errors.append(Issue(field, "out_of_range", f"{field} must be between {low:,} and {high:,}"))
        return default
    return value


def _text(value: Any, path: str, limit: int, errors: list[Issue], *, what: str = "", empty: bool = True) -> str | None:
    """A string of at most ``limit`` characters, storable everywhere (no control characters, UTF-8)."""
    what = what or path
    if not isinstance(value, str):
        errors.append(Issue(path, "invalid_type", f"{what} is a string, not {json_type(value)}"))
    elif len(value) > limit or (not empty and not value):
        errors.append(Issue(path, "invalid_length", f"{what} must be {0 if empty else 1} to {limit} characters long"))
    elif _CONTROL.search(value) or not storable(value):
        errors.append(Issue(path, "invalid_character", f"{what} contains a control character or invalid text"))
    else:
        return value
    return None


def read_label_filter(texts: Sequence[str]) -> tuple[tuple[tuple[str, str], ...], list[Issue]]:
    """``GET /requests``' ``label`` parameters, each ``key=value`` (the value may hold ``=``): the
    (key, value) pairs to match, and an issue at ``label`` for each that breaks ``_labels``' rules,
    so a filter never asks for a label no submission could have. An empty parameter is no filter."""
    pairs: dict[tuple[str, str], None] = {}
    errors: list[Issue] = []
    for text in filter(None, texts):
        key, equals, value = text.partition("=")
        if not equals or not key:
            errors.append(Issue("label", "invalid", f"label is key=value, with a key: not {show(text)}"))
            continue
        found: list[Issue] = []
        _labels({key: value}, found)
        errors += [Issue("label", issue.code, issue.message) for issue in found]
        if not found:
            pairs[key, value] = None
    return tuple(pairs), errors


def _labels(value: Any, errors: list[Issue]) -> dict[str, str]:
    """At most 50 string → string entries; keys 1 to 63 characters, values up to 200."""
    if not isinstance(value, Mapping):
        errors.append(Issue("labels", "invalid_type", f"labels is an object of string → string, not {json_type(value)}"))
        return {}
    if len(value) > MAX_LABELS:
        errors.append(Issue("labels", "too_many", f"labels has {len(value)} entries, at most {MAX_LABELS} are allowed"))
        return {}
    labels = {}
    for key, text in value.items():
        at = child("labels", key)
        if _text(key, at, MAX_LABEL_KEY, errors, what=f"the label key {show(key)}", empty=False) is not None:
            if (checked := _text(text, at, MAX_LABEL_VALUE, errors, what=f"label {show(key)}")) is not None:
                labels[key] = checked
    return labels
