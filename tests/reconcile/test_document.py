"""The configuration document (api.md §1): every error code at its path, defaults, round trip."""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconcile import Config, Policy, Pool, Profile, Quota, Vector
from reconcile.document import parse_document, read_document
from reconcile.diff import diff
from reconcile.document_writer import to_document

ERROR_CODES = {
    "required", "invalid_type", "unknown_field", "too_many", "too_long", "invalid_name", "duplicate_name",
    "invalid_key", "invalid_quantity", "out_of_range", "reserved_above_limit", "no_connection",
    "unknown_pool", "unknown_profile", "unknown_policy", "duplicate_reference", "not_connected",
    "duplicate_quota", "reservations_above_capacity", "fits_no_pool", "exceeds_limit", "too_many_errors",
    "invalid_choice",
}
WARNING_CODES = {"unused_policy", "reservations_above_reach"}

# The example of api.md §1, verbatim.
API_EXAMPLE: dict[str, Any] = {
    "version": 3,
    "pools": [
        {"name": "bare-metal", "description": "", "capacity": {"gpu": 8}, "execution_order": ["4xgpu"]},
        {"name": "h100", "capacity": {"gpu": 8, "mcpu": 256000}, "execution_order": ["2xgpu", "4xgpu"]},
    ],
    "profiles": [
        {"name": "4xgpu", "description": "", "resources": {"gpu": 4}, "dynamic": False,
         "connections": [{"pool": "bare-metal", "name": "4 GPU Low End"}, {"pool": "h100", "name": "4 GPU H100"}],
         "policies": ["dev", "research"]},
        {"name": "2xgpu", "resources": {"gpu": 2}, "connections": [{"pool": "h100"}], "policies": ["research"]},
    ],
    "policies": [
        {"name": "dev", "description": "", "group": "dev", "priority": 0,
         "quotas": [{"scope": "*", "key": "gpu", "reserved": 8, "limit": 16}]},
        {"name": "research", "group": "research",
         "quotas": [{"scope": "*", "key": "gpu", "reserved": 8, "limit": 16},
                    {"scope": "h100", "key": "gpu", "limit": 8}]},
    ],
}


# Terse builders of document fragments.

def pool(name: str, *order: str, **capacity: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "capacity": capacity}
    if order:
        doc["execution_order"] = list(order)
    return doc


def profile(name: str, pools: str | tuple[str, ...], policies: str | tuple[str, ...] = (),
            **resources: Any) -> dict[str, Any]:
    pools = (pools,) if isinstance(pools, str) else pools
    policies = (policies,) if isinstance(policies, str) else policies
    return {"name": name, "resources": resources, "connections": [{"pool": p} for p in pools],
            "policies": list(policies)}


def policy(name: str, *quotas: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": name, "group": name, "quotas": list(quotas), **fields}


def row(key: str, reserved: Any = None, limit: Any = None, scope: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"key": key}
    for field, value in (("scope", scope), ("reserved", reserved), ("limit", limit)):
        if value is not None:
            doc[field] = value
    return doc


def document(*items: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """Sort fragments by shape: a capacity makes a pool, connections a profile, a group a policy."""
    return {
        "pools": [i for i in items if "capacity" in i],
        "profiles": [i for i in items if "connections" in i],
        "policies": [i for i in items if "group" in i],
        **extra,
    }


def lists(pools: list[Any] = [], profiles: list[Any] = [], policies: list[Any] = []) -> dict[str, Any]:
    """A document from raw lists, for entries the shape-sorting of ``document`` cannot place."""
    return {"pools": pools, "profiles": profiles, "policies": policies}


def with_field(fragment: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**fragment, **fields}


def errors(doc: object) -> list[tuple[str, str]]:
    return [(issue.path, issue.code) for issue in parse_document(doc).errors]


# Error cases: each a document and every error it must produce, in order.

@dataclass(frozen=True)
class Case:
    name: str
    doc: object
    expected: list[tuple[str, str]]


OK_POOL = pool("a", gpu=8)
OK_PROFILE = profile("one", "a", "dev", gpu=1)
OK_POLICY = policy("dev")
GPU = "pools[0].capacity.gpu"

CASES = [
    # The document itself.
    Case("a document that is null is refused", None, [("", "invalid_type")]),
    Case("a document that is an array is refused", [], [("", "invalid_type")]),
    Case("a document that is a string is refused", "x", [("", "invalid_type")]),
    Case("an empty object lacks all three lists", {},
         [("pools", "required"), ("profiles", "required"), ("policies", "required")]),
    Case("pools that are a string are refused", {"pools": "x", "profiles": [], "policies": []},
         [("pools", "invalid_type")]),
    Case("a pool that is a number is refused", {"pools": [1], "profiles": [], "policies": []},
         [("pools[0]", "invalid_type")]),
    Case("a misspelt top-level field is refused", document(pool=[]), [("pool", "unknown_field")]),
    Case("past 1000 errors the rest are only counted",
         document(*[pool(f"P{i}", gpu=-1) for i in range(200)], *[policy(f"Q{i}", priority=10**7) for i in range(500)]),
         [issue for i in range(200) for issue in ((f"pools[{i}].name", "invalid_name"),
                                                   (f"pools[{i}].capacity.gpu", "invalid_quantity"))]
         + [issue for i in range(300) for issue in ((f"policies[{i}].name", "invalid_name"),
                                                     (f"policies[{i}].priority", "out_of_range"))]
         + [("", "too_many_errors")]),
    Case("the version is accepted and ignored", document(version="anything"), []),
    Case("more than 200 pools are too many", document(*[pool(f"p{i}") for i in range(201)]), [("pools", "too_many")]),
    # Pools.
    Case("a pool without a name is refused", lists(pools=[{}]), [("pools[0].name", "required")]),
    Case("a misspelt pool field is refused", document(with_field(OK_POOL, descripton="x")),
         [("pools[0].descripton", "unknown_field")]),
    Case("an upper-case pool name is refused", document(pool("H100")), [("pools[0].name", "invalid_name")]),
    Case("a name of 10,000 characters is refused", document(pool("a" * 10_000)), [("pools[0].name", "invalid_name")]),
    Case("a name with a trailing newline is refused", document(pool("a\n")), [("pools[0].name", "invalid_name")]),
    Case("a name that is a number is refused", document(pool(7)), [("pools[0].name", "invalid_type")]),
    Case("two pools with one name are refused", document(pool("a"), pool("a")), [("pools[1].name", "duplicate_name")]),
    Case("a negative capacity is refused", document(pool("a", gpu="-1")), [(GPU, "invalid_quantity")]),
    Case("a NaN capacity is refused", document(pool("a", gpu=float("nan"))), [(GPU, "invalid_quantity")]),
    Case("an infinite capacity (1e400) is refused", document(pool("a", gpu=json.loads("1e400"))),
         [(GPU, "invalid_quantity")]),
    Case("a capacity above 10^12 is refused", document(pool("a", gpu=10**400)), [(GPU, "invalid_quantity")]),
    Case("a boolean capacity is refused", document(pool("a", gpu=True)), [(GPU, "invalid_quantity")]),
    Case("a capacity with four decimals is refused", document(pool("a", gpu="0.0001")),
         [(GPU, "invalid_quantity")]),
    Case("a capacity in exponent notation is refused", document(pool("a", gpu="1e3")),
         [(GPU, "invalid_quantity")]),
    Case("a capacity that is not an object is refused", document({"name": "a", "capacity": [8]}),
         [("pools[0].capacity", "invalid_type")]),
    Case("an upper-case resource key is refused", document(pool("a", GPU=1)),
         [("pools[0].capacity.GPU", "invalid_key")]),
    Case("a key with a newline is refused at the capacity", document({"name": "a", "capacity": {"gpu\n": 1}}),
         [("pools[0].capacity", "invalid_key")]),
    Case("more than 100 resource keys are too many", document(pool("a", **{f"k{i}": 1 for i in range(101)})),
         [("pools[0].capacity", "too_many")]),
    Case("a description of 1001 characters is too long", document(with_field(OK_POOL, description="x" * 1001)),
         [("pools[0].description", "too_long")]),
    Case("a description that is a number is refused", document(with_field(OK_POOL, description=5)),
         [("pools[0].description", "invalid_type")]),
    Case("an execution order naming an unknown profile is refused", document(pool("a", "ghost")),
         [("pools[0].execution_order[0]", "unknown_profile")]),
    Case("an execution order naming a profile of another pool is refused",
         document(pool("a", "one"), pool("b", gpu=8), profile("one", "b")),
         [("pools[0].execution_order[0]", "not_connected")]),
    Case("an execution order naming a profile twice is refused",
         document(pool("a", "one", "one", gpu=8), profile("one", "a")),
         [("pools[0].execution_order[1]", "duplicate_reference")]),
    Case("an execution order entry that is not a string is refused",
         document(with_field(OK_POOL, execution_order=[None])), [("pools[0].execution_order[0]", "invalid_type")]),
    # Profiles.
    Case("a profile without connections is refused", document(profile("one", ())),
         [("profiles[0].connections", "no_connection")]),
    Case("a profile missing its connections is refused", lists(profiles=[{"name": "one"}]),
         [("profiles[0].connections", "required")]),
    Case("a connection to an unknown pool is refused", document(profile("one", "ghost")),
         [("profiles[0].connections[0].pool", "unknown_pool")]),
    Case("a connection to the same pool twice is refused", document(OK_POOL, profile("one", ("a", "a"))),
         [("profiles[0].connections[1].pool", "duplicate_reference")]),
    Case("a connection without a pool is refused",
         document(with_field(OK_PROFILE, connections=[{}]), OK_POOL, OK_POLICY),
         [("profiles[0].connections[0].pool", "required")]),
    Case("an empty connection name is refused",
         document(with_field(OK_PROFILE, connections=[{"pool": "a", "name": ""}]), OK_POOL, OK_POLICY),
         [("profiles[0].connections[0].name", "required")]),
    Case("a blank connection name is refused",
         document(with_field(OK_PROFILE, connections=[{"pool": "a", "name": "  "}]), OK_POOL, OK_POLICY),
         [("profiles[0].connections[0].name", "required")]),
    Case("a connection name of 101 characters is too long",
         document(with_field(OK_PROFILE, connections=[{"pool": "a", "name": "x" * 101}]), OK_POOL, OK_POLICY),
         [("profiles[0].connections[0].name", "too_long")]),
    Case("more than 50 connections are too many",
         document(with_field(OK_PROFILE, connections=[{"pool": "a"}] * 51), OK_POOL, OK_POLICY),
         [("profiles[0].connections", "too_many")]),
    Case("an unknown policy on a profile is refused", document(OK_POOL, profile("one", "a", "ghost")),
         [("profiles[0].policies[0]", "unknown_policy")]),
    Case("a policy listed twice on a profile is refused",
         document(OK_POOL, OK_POLICY, profile("one", "a", ("dev", "dev"))),
         [("profiles[0].policies[1]", "duplicate_reference")]),
    Case("dynamic that is not a boolean is refused",
         document(OK_POOL, OK_POLICY, with_field(OK_PROFILE, dynamic="yes")),
         [("profiles[0].dynamic", "invalid_type")]),
    Case("a profile larger than every connected pool fits no pool (R-11)",
         document(pool("a", gpu=8), pool("b", gpu=4), profile("big", ("a", "b"), gpu=16)),
         [("profiles[0].resources", "fits_no_pool")]),
    Case("a profile needing a key no pool has fits no pool (R-11)",
         document(OK_POOL, profile("lic", "a", lic=1)), [("profiles[0].resources", "fits_no_pool")]),
    Case("a dynamic profile's default allotment is checked too",
         document(OK_POOL, with_field(profile("big", "a", gpu=9), dynamic=True)),
         [("profiles[0].resources", "fits_no_pool")]),
    Case("step_run is part of the allotment, as the server adds it",
         document(pool("a", gpu=8, step_run=0.5), profile("one", "a")), [("profiles[0].resources", "fits_no_pool")]),
    Case("a queue above its policy's limit on every pool is refused (R-12)",
         document(pool("a", gpu=8), pool("b", gpu=8), policy("dev", row("gpu", limit=2)),
                  profile("one", ("a", "b"), "dev", gpu=4)),
         [("profiles[0].policies[0]", "exceeds_limit")]),
    Case("a queue within its policy's limit on one pool is accepted",
         document(pool("a", gpu=8), pool("b", gpu=8), policy("dev", row("gpu", limit=2, scope="a")),
                  profile("one", ("a", "b"), "dev", gpu=4)), []),
    Case("a limit on a key the pool does not meter is not checked",
         document(pool("a", gpu=8), policy("dev", row("mcpu", limit=1)), profile("one", "a", "dev", gpu=1, mcpu=4000)),
         []),
    # Policies and quota rows.
    Case("a policy without a name is refused", lists(policies=[{"group": "dev"}]),
         [("policies[0].name", "required")]),
    Case("an empty group is refused", document(with_field(OK_POLICY, group="")), [("policies[0].group", "required")]),
    Case("a blank group is refused", document(with_field(OK_POLICY, group="  ")), [("policies[0].group", "required")]),
    Case("a group of 151 characters is too long", document(with_field(OK_POLICY, group="g" * 151)),
         [("policies[0].group", "too_long")]),
    Case("a priority that is a boolean is refused", document(with_field(OK_POLICY, priority=True)),
         [("policies[0].priority", "invalid_type")]),
    Case("a priority with a fraction is refused", document(with_field(OK_POLICY, priority=1.5)),
         [("policies[0].priority", "invalid_type")]),
    Case("a priority beyond a million is out of range", document(with_field(OK_POLICY, priority=1_000_001)),
         [("policies[0].priority", "out_of_range")]),
    Case("a min_runtime_seconds with a fraction is refused", document(with_field(OK_POLICY, min_runtime_seconds=1.5)),
         [("policies[0].min_runtime_seconds", "invalid_type")]),
    Case("a min_runtime_seconds as text is refused", document(with_field(OK_POLICY, min_runtime_seconds="600")),
         [("policies[0].min_runtime_seconds", "invalid_type")]),
    Case("a min_runtime_seconds of 0 is out of range", document(with_field(OK_POLICY, min_runtime_seconds=0)),
         [("policies[0].min_runtime_seconds", "out_of_range")]),
    Case("a max_wait_seconds of 0 is out of range", document(with_field(OK_POLICY, max_wait_seconds=0)),
         [("policies[0].max_wait_seconds", "out_of_range")]),
    Case("a max_wait_seconds as true is refused", document(with_field(OK_POLICY, max_wait_seconds=True)),
         [("policies[0].max_wait_seconds", "invalid_type")]),
    Case("a min_runtime_seconds beyond 366 days is out of range",
         document(with_field(OK_POLICY, min_runtime_seconds=366 * 86400 + 1)),
         [("policies[0].min_runtime_seconds", "out_of_range")]),
    Case("a max_runtime_seconds that is negative is out of range", document(with_field(OK_POLICY, max_runtime_seconds=-5)),
         [("policies[0].max_runtime_seconds", "out_of_range")]),
    Case("a require_max_runtime that is not a boolean is refused", document(with_field(OK_POLICY, require_max_runtime=1)),
         [("policies[0].require_max_runtime", "invalid_type")]),
    Case("an on_time_limit other than end or requeue is refused", document(with_field(OK_POLICY, on_time_limit="kill")),
         [("policies[0].on_time_limit", "invalid_choice")]),
    Case("a quota row with neither reserved nor limit is refused", document(policy("dev", row("gpu"))),
         [("policies[0].quotas[0]", "required")]),
    Case("a quota row without a key is refused", document(policy("dev", {"limit": 1})),
         [("policies[0].quotas[0].key", "required")]),
    Case("a quota row with a bad key is refused", document(policy("dev", row("Gpu", limit=1))),
         [("policies[0].quotas[0].key", "invalid_key")]),
    Case("a quota row with a negative limit is refused", document(policy("dev", row("gpu", limit=-1))),
         [("policies[0].quotas[0].limit", "invalid_quantity")]),
    Case("reserved above limit is refused", document(policy("dev", row("gpu", reserved=9, limit=8))),
         [("policies[0].quotas[0].reserved", "reserved_above_limit")]),
    Case("a quota scoped to an unknown pool is refused", document(policy("dev", row("gpu", limit=1, scope="ghost"))),
         [("policies[0].quotas[0].scope", "unknown_pool")]),
    Case("two rows for one scope and key are refused",
         document(policy("dev", row("gpu", limit=1), row("gpu", reserved=1, scope="*"))),
         [("policies[0].quotas[1]", "duplicate_quota")]),
    Case("more than 64 quota rows are too many", document(policy("dev", *[row(f"k{i}", limit=1) for i in range(65)])),
         [("policies[0].quotas", "too_many")]),
    Case("more than 2,000 connections in all are too many",
         document(*[pool(f"p{i}", gpu=1) for i in range(50)],
                  *[profile(f"r{n}", tuple(f"p{i}" for i in range(50))) for n in range(41)]),
         [("profiles", "too_many")]),
    Case("more than 5,000 policies listed by the profiles in all (queues) are too many",
         document(pool("a", gpu=1), *[policy(f"q{i}") for i in range(500)],
                  *[profile(f"r{n}", "a", tuple(f"q{i}" for i in range(500))) for n in range(11)]),
         [("profiles", "too_many")]),
    Case("more than 5,000 quota rows in all are too many",
         document(*[policy(f"q{n}", *[row(f"k{i}", limit=1) for i in range(64)]) for n in range(79)]),
         [("policies", "too_many")]),
    Case("two policies with one name are refused", document(OK_POLICY, OK_POLICY),
         [("policies[1].name", "duplicate_name")]),
    Case("pool-scoped reservations above capacity are refused at the last row",
         document(pool("a", gpu=8), policy("dev", row("gpu", reserved=6, scope="a")),
                  policy("ops", row("mcpu", limit=1), row("gpu", reserved=3, scope="a"))),
         [("policies[1].quotas[1].reserved", "reservations_above_capacity")]),
    Case("a pool-scoped reservation of a key the pool lacks is above its capacity",
         document(pool("a", gpu=8), policy("dev", row("lic", reserved=1, scope="a"))),
         [("policies[0].quotas[0].reserved", "reservations_above_capacity")]),
    Case("a reservation of a key the pool does not meter is not checked",
         document(pool("a", gpu=8), policy("dev", row("mcpu", reserved=1000, scope="a"))), []),
    Case("*-scope reservations are not counted against one pool",
         document(pool("a", gpu=8), policy("dev", row("gpu", reserved=16)), profile("one", "a", "dev")), []),
]


def test_every_error_code_has_a_case():
    assert {code for case in CASES for _, code in case.expected} == ERROR_CODES


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_each_error_is_reported_at_its_path(case: Case):
    assert errors(case.doc) == case.expected


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_document_with_errors_has_no_config_and_short_messages(case: Case):
    parsed = parse_document(case.doc)
    assert (parsed.config is None) == bool(case.expected)
    assert all(0 < len(issue.message) < 400 for issue in parsed.errors)


def test_messages_give_the_numbers():
    doc = document(pool("a", gpu=8), policy("dev", row("gpu", reserved=6, scope="a")),
                   policy("ops", row("gpu", reserved=3, scope="a")), policy("qa", row("gpu", reserved=9, limit=8)))
    assert [issue.message for issue in parse_document(doc).errors] == [
        "reserved 9 gpu is above the limit of 8 across all pools",
        "reservations of gpu on pool a sum to 9 (dev 6, ops 3), above its capacity of 8",
    ]
    doc = document(pool("a", gpu=8), pool("b", gpu=4),
                   policy("dev", row("gpu", limit=2), row("gpu", limit=1, scope="b")),
                   profile("one", ("a", "b"), "dev", gpu=4))
    assert [issue.message for issue in parse_document(doc).errors] == [
        "queue dev/one can never run: 4 gpu exceeds the limit of policy dev (2 gpu across all pools)"
    ]
    doc = document(*[pool(f"p{i}", gpu=1) for i in range(5)], profile("big", tuple(f"p{i}" for i in range(5)), gpu=2))
    assert [issue.message for issue in parse_document(doc).errors] == [
        "profile big (gpu=2, step_run=1) fits no connected pool: 2 gpu exceeds the capacity of pool p0 (1); "
        "2 gpu exceeds the capacity of pool p1 (1); 2 gpu exceeds the capacity of pool p2 (1); and 2 more"
    ]


def test_it_collects_every_error_in_one_go():
    doc = {
        "pools": [pool("a", gpu=8), pool("a", gpu="lots"), {"name": "c", "capacity": {}, "colour": "red"}],
        "profiles": [profile("one", ("a", "ghost"), ("dev", "nope")), profile("two", (), gpu=1)],
        "policies": [policy("dev", row("gpu", reserved=3, limit=2)), {"name": "Ops", "quotas": "none"}],
    }
    assert errors(doc) == [
        ("pools[1].capacity.gpu", "invalid_quantity"),
        ("pools[2].colour", "unknown_field"),
        ("profiles[1].connections", "no_connection"),
        ("policies[0].quotas[0].reserved", "reserved_above_limit"),
        ("policies[1].name", "invalid_name"),
        ("policies[1].quotas", "invalid_type"),
        ("pools[1].name", "duplicate_name"),
        ("profiles[0].connections[1].pool", "unknown_pool"),
        ("profiles[0].policies[1]", "unknown_policy"),
    ]


def test_it_reports_semantic_errors_alongside_errors_elsewhere():
    doc = document(pool("a", gpu=4), pool("B", gpu=1), profile("big", "a", gpu=8), policy("dev", row("gpu", limit="x")))
    assert errors(doc) == [("pools[1].name", "invalid_name"), ("policies[0].quotas[0].limit", "invalid_quantity"),
                           ("profiles[0].resources", "fits_no_pool")]


def test_an_unreadable_capacity_does_not_also_report_a_profile_that_fits_no_pool():
    assert errors(document(pool("a", gpu="eight"), profile("one", "a", gpu=4))) == [
        ("pools[0].capacity.gpu", "invalid_quantity")]


def test_an_unknown_field_with_an_odd_name_does_not_hide_other_errors():
    doc = document(pool("a", gpu=1), profile("one", "a", gpu=4), **{"bad key!": 1})
    assert errors(doc) == [("", "unknown_field"), ("profiles[0].resources", "fits_no_pool")]


def test_a_reference_to_a_badly_named_pool_is_not_also_unknown():
    assert errors(document(pool("A", gpu=8), profile("one", "A"))) == [("pools[0].name", "invalid_name")]


def test_messages_quote_only_a_short_part_of_a_long_name():
    (issue,) = parse_document(document(pool("a" * 10_000))).errors
    assert len(issue.message) < 200 and "…" in issue.message


# Warnings.

def test_a_policy_no_profile_uses_is_a_warning():
    parsed = parse_document(document(OK_POOL, OK_POLICY, policy("idle"), OK_PROFILE))
    assert parsed.config is not None
    assert [(w.path, w.code) for w in parsed.warnings] == [("policies[1]", "unused_policy")]


def test_star_reservations_above_what_their_policies_reach_are_a_warning():
    doc = document(pool("a", gpu=8), pool("b", gpu=100), policy("dev", row("gpu", reserved=6)),
                   policy("ops", row("gpu", reserved=4)), profile("one", "a", ("dev", "ops")), profile("two", "b"))
    parsed = parse_document(doc)
    assert parsed.config is not None
    assert [(w.path, w.code, w.message) for w in parsed.warnings] == [
        ("policies[1].quotas[0].reserved", "reservations_above_reach",
         "reservations of gpu across all pools sum to 10 (dev 6, ops 4), above the 8 gpu their policies' queues "
         "can reach")]


def test_star_reservations_within_reach_or_of_an_unmetered_key_are_not_a_warning():
    doc = document(pool("a", gpu=8), pool("b", gpu=8),
                   policy("dev", row("gpu", reserved=12), row("mcpu", reserved=10**6)),
                   profile("one", ("a", "b"), "dev"))
    assert parse_document(doc).warnings == ()


def test_no_warnings_are_given_for_a_document_with_errors():
    assert parse_document(document(OK_POOL, OK_POLICY, policy("idle"), profile("one", "ghost"))).warnings == ()


# Defaults, execution order and the round trip.

def test_the_api_example_parses_and_every_default_is_written_out():
    parsed = parse_document(API_EXAMPLE)
    assert parsed.errors == () and parsed.warnings == ()
    # The example's first pool, profile and policy state every field already: they come back as
    # they are; the second of each gains its defaults.
    complete = {part: API_EXAMPLE[part][0] for part in ("pools", "profiles", "policies")}
    assert to_document(parsed.config, version=3) == {
        "version": 3,
        "pools": [
            complete["pools"],
            {"name": "h100", "description": "", "capacity": {"gpu": 8, "mcpu": 256000},
             "execution_order": ["2xgpu", "4xgpu"]},
        ],
        "profiles": [
            complete["profiles"],
            {"name": "2xgpu", "description": "", "resources": {"gpu": 2}, "dynamic": False,
             "connections": [{"pool": "h100", "name": "h100"}], "policies": ["research"]},
        ],
        "policies": [
            complete["policies"],
            {"name": "research", "description": "", "group": "research", "priority": 0,
             "quotas": [{"scope": "*", "key": "gpu", "reserved": 8, "limit": 16},
                        {"scope": "h100", "key": "gpu", "limit": 8}]},
        ],
    }


def test_the_api_example_becomes_this_config():
    assert parse_document(API_EXAMPLE).config == Config(
        pools=(Pool("bare-metal", Vector.of(gpu=8), ("4xgpu",)),
               Pool("h100", Vector.of(gpu=8, mcpu=256000), ("2xgpu", "4xgpu"))),
        profiles=(Profile("4xgpu", Vector.of(gpu=4), pools=("bare-metal", "h100"), policies=("dev", "research"),
                          connection_names=("4 GPU Low End", "4 GPU H100")),
                  Profile("2xgpu", Vector.of(gpu=2), pools=("h100",), policies=("research",),
                          connection_names=("h100",))),
        policies=(Policy("dev", group="dev", quotas=(Quota("*", "gpu", 8000, 16000),)),
                  Policy("research", group="research",
                         quotas=(Quota("*", "gpu", 8000, 16000), Quota("h100", "gpu", None, 8000)))),
    )


@pytest.mark.parametrize("listed, expected", [
    (None, ("a", "b", "c")),
    ([], ("a", "b", "c")),
    (["c"], ("c", "a", "b")),
    (["b", "c"], ("b", "c", "a")),
    (["c", "b", "a"], ("c", "b", "a")),
], ids=["omitted: name order", "empty: name order", "listed first, the rest in name order",
        "two listed", "all listed"])
def test_the_execution_order_lists_the_named_profiles_then_the_other_connected_ones(listed, expected):
    target = pool("p", gpu=8) if listed is None else with_field(pool("p", gpu=8), execution_order=listed)
    doc = document(target, pool("q", gpu=8), profile("c", "p"), profile("x", "q"), profile("b", "p"),
                   profile("a", ("q", "p")))
    assert parse_document(doc).config.pools[0].execution_order == expected


def test_quantities_may_be_decimal_strings_and_are_written_as_numbers():
    config = parse_document(document(pool("a", gpu="0.5", mcpu=1.5, lic=Decimal("2.125")))).config
    assert config.pools[0].capacity == {"gpu": 500, "mcpu": 1500, "lic": 2125}
    assert to_document(config)["pools"][0]["capacity"] == {"gpu": Decimal("0.5"), "lic": Decimal("2.125"),
                                                           "mcpu": Decimal("1.5")}


def test_to_document_fills_what_a_hand_built_config_leaves_out():
    built = Config(pools=(Pool("a", Vector.of(gpu=8)),), profiles=(Profile("one", Vector.of(gpu=1), pools=("a",)),))
    doc = to_document(built)
    assert doc["pools"][0]["execution_order"] == ["one"]
    assert doc["profiles"][0]["connections"] == [{"pool": "a", "name": "a"}]
    assert "version" not in doc
    assert to_document(parse_document(doc).config) == doc


def test_the_round_trip_is_exact_for_the_api_example():
    config = parse_document(API_EXAMPLE).config
    assert parse_document(to_document(config)).config == config
    assert parse_document(_through_json(to_document(config, version=4))).config == config


# Hostile inputs.

def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


HOSTILE = [None, [], "x", 0, True, float("nan"), {"pools": "x"}, {"pools": [1]}, {"pools": [None], "profiles": [[]]},
           {"pools": _nested(100_000), "profiles": [{"name": _nested(100_000)}], "policies": {"a": 1}},
           {"pools": [{"name": "a", "capacity": {"gpu": _nested(10_000)}, "execution_order": {"x": 1}}]},
           {"pools": [{"name": "a", "capacity": {"gpu": 10**5000}}], "profiles": [], "policies": []},
           {"pools": [], "profiles": [],
            "policies": [{"name": "p", "group": "g", "priority": 10**5000, "quotas": [1]}]},
           {1: 2, None: 3, (1, 2): 4}, {"pools": [{"name": "a", "capacity": {1: 1, None: 2}}]}]


@pytest.mark.parametrize("doc", HOSTILE, ids=lambda doc: type(doc).__name__)
def test_hostile_inputs_give_errors_and_never_raise(doc):
    parsed = parse_document(doc)
    assert parsed.config is None and parsed.errors
    assert {issue.code for issue in parsed.errors} <= ERROR_CODES
    assert read_document(doc) is None


# Properties.

EXAMPLES = max(200, settings.default.max_examples // 10)  # --slow runs ten times more
# Documents are built in plain Python from one drawn Random: a draw per field made a test of
# 200 examples take 15 s. Hypothesis still replays failures from its database.
NAMES = ["a", "0", "h100", "4xgpu", "bare-metal", "a.b_c-d", "9-", "x" * 63, "dev", "ops", "z.z", "1.5"]
TEXTS = ["", "GPU pool", "Ünïcödé ✓", " padded ", "x" * 100]


def _amount(rnd: random.Random, low: int, high: int) -> Any:
    """A quantity in milli-units [low, high], written as an int, a decimal string, a float or a Decimal."""
    milli = rnd.choice([low, high, rnd.randint(low, high), rnd.randint(low // 1000, high // 1000) * 1000])
    forms = [str(Decimal(milli) / 1000), milli / 1000, Decimal(milli) / 1000]
    return rnd.choice(forms + [milli // 1000] * (milli % 1000 == 0))


def _maybe(rnd: random.Random, doc: dict[str, Any], field: str, value: Any) -> None:
    if rnd.random() < 0.5:
        doc[field] = value


def _some(rnd: random.Random, items: list[str], at_least: int = 0) -> list[str]:
    """A random selection of ``items`` in random order."""
    return rnd.sample(items, rnd.randint(min(at_least, len(items)), len(items)))


def _random_document(rnd: random.Random) -> dict[str, Any]:
    """Valid by construction: pools of ≥ 8 gpu, profiles of ≤ 4, limits ≥ 8, small pool reservations."""
    pool_names, profile_names, policy_names = (rnd.sample(NAMES, rnd.randint(low, 4)) for low in (1, 0, 0))
    pools = [{"name": name, "capacity": {"gpu": _amount(rnd, 8000, 16000)}} for name in pool_names]
    for doc in pools:
        _maybe(rnd, doc["capacity"], "mcpu", _amount(rnd, 64000, 256000))
        _maybe(rnd, doc, "description", rnd.choice(TEXTS))
    profiles = [_random_profile(rnd, name, pool_names, policy_names) for name in profile_names]
    for doc in pools:
        connected = [p["name"] for p in profiles if any(c["pool"] == doc["name"] for c in p["connections"])]
        _maybe(rnd, doc, "execution_order", _some(rnd, connected))
    policies = [_random_policy(rnd, name, pool_names) for name in policy_names]
    doc = {"pools": pools, "profiles": profiles, "policies": policies}
    _maybe(rnd, doc, "version", rnd.randint(1, 100))
    return doc


def _random_profile(rnd: random.Random, name: str, pool_names: list[str], policy_names: list[str]) -> dict[str, Any]:
    connections = [{"pool": p} for p in _some(rnd, pool_names, at_least=1)]
    for connection in connections:
        _maybe(rnd, connection, "name", rnd.choice(TEXTS[1:]))
    doc = {"name": name, "resources": {"gpu": _amount(rnd, 0, 4000)}, "connections": connections,
           "policies": _some(rnd, policy_names)}
    _maybe(rnd, doc["resources"], "mcpu", _amount(rnd, 0, 8000))
    _maybe(rnd, doc, "dynamic", rnd.random() < 0.5)
    _maybe(rnd, doc, "description", rnd.choice(TEXTS))
    return doc


def _random_policy(rnd: random.Random, name: str, pool_names: list[str]) -> dict[str, Any]:
    targets = [(scope, key) for scope in ["*", *pool_names] for key in ("gpu", "mcpu")]
    quotas = []
    for scope, key in rnd.sample(targets, rnd.randint(0, min(4, len(targets)))):
        limit = rnd.choice([None, _amount(rnd, 8000, 64000)])
        ceiling = 2000 if scope != "*" else 8000  # ≤ every limit; 4 policies × 2 fit a pool of 8
        quota: dict[str, Any] = {"key": key}
        if limit is None or rnd.random() < 0.5:
            quota["reserved"] = _amount(rnd, 0, ceiling)
        if limit is not None:
            quota["limit"] = limit
        if scope != "*" or rnd.random() < 0.5:
            quota["scope"] = scope
        quotas.append(quota)
    doc = {"name": name, "group": rnd.choice(["ml", "ML Team", "g" * 150]), "quotas": quotas}
    _maybe(rnd, doc, "priority", rnd.choice([0, -1_000_000, 1_000_000, rnd.randint(-100, 100)]))
    _maybe(rnd, doc, "description", rnd.choice(TEXTS))
    return doc


VALID_DOCUMENTS = st.randoms(use_true_random=True).map(_random_document)


def _through_json(doc: dict[str, Any]) -> Any:
    """As a client would see it: Decimals written as JSON numbers, read back as floats."""
    return json.loads(json.dumps(doc, default=float))


@settings(max_examples=EXAMPLES)
@given(VALID_DOCUMENTS)
def test_valid_documents_parse_and_round_trip(doc):
    original = copy.deepcopy(doc)
    parsed = parse_document(doc)
    assert doc == original  # the input is never changed
    assert parsed.errors == ()
    normal = to_document(parsed.config)
    again = parse_document(normal)
    assert again.config == parsed.config
    assert to_document(again.config) == normal
    assert parse_document(_through_json(normal)).config == parsed.config
    assert read_document(doc) == read_document(normal) == parsed.config  # a stored version reads the same
    for pool_doc, pool_ in zip(doc["pools"], parsed.config.pools):
        listed = pool_doc.get("execution_order", [])
        assert list(pool_.execution_order[:len(listed)]) == listed
        assert list(pool_.execution_order[len(listed):]) == sorted(pool_.execution_order[len(listed):])


FIELDS = ["pools", "profiles", "policies", "name", "capacity", "resources", "connections", "pool", "quotas", "key",
          "reserved", "limit", "scope", "execution_order", "group", "priority", "dynamic", "description", "gpu"]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.sampled_from(FIELDS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20,
)


@settings(max_examples=EXAMPLES)
@given(JSON)
def test_any_json_value_gives_a_result_and_never_raises(doc):
    parsed = parse_document(doc)
    assert (parsed.config is None) == bool(parsed.errors)
    assert {issue.code for issue in parsed.errors} <= ERROR_CODES


def _spots(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a document where a value could be swapped."""
    found = [path]
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        found += _spots(child, (*path, key))
    return found


@settings(max_examples=EXAMPLES)
@given(VALID_DOCUMENTS, st.data())
def test_a_valid_document_with_one_value_swapped_for_garbage_never_raises(doc, data):
    spot = data.draw(st.sampled_from(_spots(doc)[1:]))
    mutated = copy.deepcopy(doc)
    parent = mutated
    for key in spot[:-1]:
        parent = parent[key]
    parent[spot[-1]] = data.draw(JSON)
    parsed = parse_document(mutated)
    assert {issue.code for issue in parsed.errors} <= ERROR_CODES
    assert {issue.code for issue in parsed.warnings} <= WARNING_CODES
    if parsed.config is not None:
        assert parse_document(to_document(parsed.config)).config == parsed.config


def test_a_policy_without_a_group_round_trips():
    parsed = parse_document(lists(pools=[{"name": "a", "capacity": {"gpu": 1}}], policies=[{"name": "dev"}]))
    assert parsed.errors == ()
    again = parse_document(to_document(parsed.config))
    assert (again.errors, again.config) == ((), parsed.config)


def test_a_policy_with_an_empty_group_round_trips_without_one():
    built = Config(policies=(Policy("dev", group=""),))
    doc = to_document(built)
    assert "group" not in doc["policies"][0]
    assert parse_document(doc).config == built
    assert parse_document(_through_json(doc)).config == built


# Display names (decision 121): what people read, beside the stable name.

def test_a_display_name_is_read_and_written_back_and_its_absence_means_the_name():
    doc = document({**pool("h100-half", gpu=4), "display_name": "H100 Half a Superpod"},
                   profile("one", "h100-half", "dev", gpu=1), {**policy("dev"), "display_name": "dev"})
    config = parse_document(doc).config

    assert (config.pools[0].display_name, config.pools[0].label) == ("H100 Half a Superpod", "H100 Half a Superpod")
    assert (config.profiles[0].display_name, config.profiles[0].label) == ("", "one")
    assert config.policies[0].display_name == ""  # the name itself: as if absent
    written = to_document(config)
    assert written["pools"][0]["display_name"] == "H100 Half a Superpod"
    assert "display_name" not in written["profiles"][0] and "display_name" not in written["policies"][0]


def test_a_display_name_is_text_of_at_most_100_characters():
    assert errors(document({**pool("a", gpu=1), "display_name": 7}, profile("one", "a", gpu=1))) == [
        ("pools[0].display_name", "invalid_type")]
    assert errors(document({**pool("a", gpu=1), "display_name": "x" * 101}, profile("one", "a", gpu=1))) == [
        ("pools[0].display_name", "too_long")]


def test_a_name_refused_says_in_words_what_a_name_may_contain():
    (issue,) = parse_document(document(pool("H100 Half", gpu=1), profile("one", "H100 Half", gpu=1))).errors
    assert issue.message == ("'H100 Half' is not a valid pool name: a name has 1 to 63 lower-case letters, digits, "
                             "'.', '_' or '-', the first a letter or digit")


# Pool labels (decision 137): key → text for other systems, the engine reads none.

def test_a_pools_labels_are_read_sorted_and_written_back_only_when_there_are_some():
    doc = document({**pool("h100", gpu=8), "labels": {"slurm_partition": "gpu", "rack": "b7"}},
                   pool("a100", gpu=4), profile("one", "h100", gpu=1))
    config = parse_document(doc).config

    assert config.pools[0].labels == (("rack", "b7"), ("slurm_partition", "gpu"))
    assert config.pools[0].label_value("slurm_partition") == "gpu" and config.pools[1].label_value("x") is None
    written = to_document(config)
    assert written["pools"][0]["labels"] == {"rack": "b7", "slurm_partition": "gpu"}
    assert "labels" not in written["pools"][1]
    assert parse_document(_through_json(written)).config == config


@pytest.mark.parametrize("labels,path,code", [
    ([], "pools[0].labels", "invalid_type"),
    ({"Slurm Partition": "gpu"}, "pools[0].labels", "invalid_key"),
    ({"-x": "gpu"}, "pools[0].labels.-x", "invalid_key"),
    ({"slurm_partition": 7}, "pools[0].labels.slurm_partition", "invalid_type"),
    ({"slurm_partition": "g" * 201}, "pools[0].labels.slurm_partition", "too_long"),
    ({f"k{n}": "v" for n in range(21)}, "pools[0].labels", "too_many"),
])
def test_a_label_that_breaks_a_rule_is_an_error_at_its_path(labels, path, code):
    assert errors(document({**pool("a", gpu=1), "labels": labels}, profile("one", "a", gpu=1))) == [(path, code)]


# The time rules (docs/scheduling.md R-48): absent means none, and is written back absent.

def test_a_policys_min_runtime_seconds_is_read_and_written_back_and_absent_or_null_means_none():
    stated = parse_document(document(with_field(OK_POLICY, min_runtime_seconds=600))).config
    assert stated.policies[0].min_runtime_seconds == 600
    assert to_document(stated)["policies"][0]["min_runtime_seconds"] == 600
    assert parse_document(_through_json(to_document(stated))).config == stated
    for doc in (document(OK_POLICY), document(with_field(OK_POLICY, min_runtime_seconds=None))):
        config = parse_document(doc).config
        assert config.policies[0].min_runtime_seconds is None
        assert "min_runtime_seconds" not in to_document(config)["policies"][0]


def test_r49_a_policys_max_wait_seconds_is_read_and_written_back_and_absent_means_none():
    stated = parse_document(document(with_field(OK_POLICY, max_wait_seconds=3600))).config
    assert stated.policies[0].max_wait_seconds == 3600
    assert parse_document(_through_json(to_document(stated))).config == stated
    default = parse_document(document(OK_POLICY)).config
    assert default.policies[0].max_wait_seconds is None
    assert "max_wait_seconds" not in to_document(default)["policies"][0]
    assert [field.field for change in diff(default, stated) for field in change.fields] == ["max_wait_seconds"]


def test_a_policys_run_limit_terms_are_read_and_written_back_and_their_defaults_left_out():
    doc = document(with_field(OK_POLICY, max_runtime_seconds=3600, require_max_runtime=True, on_time_limit="requeue"))
    stated = parse_document(doc).config
    policy = stated.policies[0]
    assert (policy.max_runtime_seconds, policy.require_max_runtime, policy.on_time_limit) == (3600, True, "requeue")
    assert parse_document(_through_json(to_document(stated))).config == stated
    default = parse_document(document(OK_POLICY)).config.policies[0]
    assert (default.max_runtime_seconds, default.require_max_runtime, default.on_time_limit) == (None, False, "end")
    assert not {"max_runtime_seconds", "require_max_runtime", "on_time_limit"} & to_document(
        parse_document(document(OK_POLICY)).config)["policies"][0].keys()
