"""The structural diff of two configurations (reconcile.diff): one case per kind of change, the
whole list of changes compared in one assert."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

import pytest

from reconcile.diff import Change, FieldChange, diff, summarize
from reconcile.document import parse_document

BASE: dict[str, Any] = {
    "pools": [
        {"name": "h100", "description": "8 × H100", "capacity": {"gpu": 8, "mcpu": 256000},
         "execution_order": ["8xgpu", "half"]},
        {"name": "a100", "capacity": {"gpu": 4}},
    ],
    "profiles": [
        {"name": "half", "resources": {"gpu": 0.5},
         "connections": [{"pool": "a100", "name": "½ A100"}, {"pool": "h100"}], "policies": ["dev", "research"]},
        {"name": "8xgpu", "resources": {"gpu": 8}, "connections": [{"pool": "h100"}], "policies": ["research"]},
    ],
    "policies": [
        {"name": "research", "group": "research", "priority": 10,
         "quotas": [{"key": "gpu", "reserved": 4, "limit": 12}, {"scope": "h100", "key": "gpu", "limit": 8}]},
        {"name": "dev", "group": "dev", "quotas": [{"key": "gpu", "reserved": 2, "limit": 4}]},
    ],
}


def edited(change: Callable[[dict], None]) -> dict:
    doc = copy.deepcopy(BASE)
    change(doc)
    return doc


def config(doc: dict):
    parsed = parse_document(doc)
    assert parsed.errors == (), parsed.errors
    return parsed.config


def changed(kind: str, name: str, *fields: tuple) -> Change:
    return Change(kind, name, "changed", tuple(FieldChange(*f) for f in fields))


@dataclass(frozen=True)
class Case:
    name: str
    edit: Callable[[dict], None]
    expected: tuple[Change, ...]


def _add_pool(doc):
    doc["pools"].append({"name": "l4", "capacity": {"gpu": 2}})


def _rename_connection(doc):
    doc["profiles"][0]["connections"][1]["name"] = "½ H100"


def _swap_precedence(doc):
    doc["profiles"][0]["connections"].reverse()


def _execution_order(doc):
    doc["pools"][0]["execution_order"] = ["half"]  # 8xgpu follows, by the default rule


def _policy_rank(doc):
    doc["profiles"][0]["policies"] = ["research", "dev"]


def _quota_rows(doc):
    doc["policies"][0]["quotas"][0]["reserved"] = 6
    doc["policies"][0]["quotas"].pop(1)
    doc["policies"][1]["quotas"].append({"scope": "a100", "key": "gpu", "reserved": 1})


def _remove_profile(doc):
    doc["profiles"].pop(1)
    doc["pools"][0]["execution_order"] = ["half"]
    doc["policies"][0]["quotas"].pop(1)


def _scalars(doc):
    doc["pools"][1]["description"] = "4 × A100"
    doc["profiles"][1]["dynamic"] = True
    doc["policies"][1].update(group="product", priority=-5)


def _capacity_keys(doc):
    doc["pools"][0]["capacity"] = {"gpu": 8.5}
    doc["profiles"][0]["resources"] = {"gpu": 0.5, "memory_mb": 16000}


def _labels(doc):
    doc["pools"][0]["labels"] = {"slurm_partition": "gpu", "rack": "b7"}
    doc["pools"][1]["labels"] = {"slurm_partition": "a100"}


CASES = [
    Case("nothing changed", lambda doc: None, ()),
    Case("a pool added lists its fields from nothing", _add_pool, (
        Change("pool", "l4", "added", (FieldChange("description", None, ""), FieldChange("capacity.gpu", None, 2),
                                       FieldChange("execution_order", None, ()))),)),
    Case("a connection renamed", _rename_connection, (
        changed("profile", "half", ("connections[h100].name", "h100", "½ H100")),)),
    Case("the pool precedence reversed", _swap_precedence, (
        changed("profile", "half", ("connections", ("a100", "h100"), ("h100", "a100"))),)),
    Case("an execution order compared in full", _execution_order, (
        changed("pool", "h100", ("execution_order", ("8xgpu", "half"), ("half", "8xgpu"))),)),
    Case("a policy rank", _policy_rank, (
        changed("profile", "half", ("policies", ("dev", "research"), ("research", "dev"))),)),
    Case("quota rows changed, removed and added", _quota_rows, (
        changed("policy", "research", ("quotas[*/gpu].reserved", 4, 6), ("quotas[h100/gpu].limit", 8, None)),
        changed("policy", "dev", ("quotas[a100/gpu].reserved", None, 1)),
    )),
    Case("a profile removed, with what its removal changed elsewhere", _remove_profile, (
        changed("pool", "h100", ("execution_order", ("8xgpu", "half"), ("half",))),
        Change("profile", "8xgpu", "removed", (
            FieldChange("description", "", None), FieldChange("resources.gpu", 8, None),
            FieldChange("dynamic", False, None), FieldChange("connections", ("h100",), None),
            FieldChange("connections[h100].name", "h100", None), FieldChange("policies", ("research",), None))),
        changed("policy", "research", ("quotas[h100/gpu].limit", 8, None)),
    )),
    Case("descriptions, allotment, group and priority", _scalars, (
        changed("pool", "a100", ("description", "", "4 × A100")),
        changed("profile", "8xgpu", ("dynamic", False, True)),
        changed("policy", "dev", ("group", "dev", "product"), ("priority", 0, -5)),
    )),
    Case("resource keys changed, removed and added", _capacity_keys, (
        changed("pool", "h100", ("capacity.gpu", 8, Decimal("8.5")), ("capacity.mcpu", 256000, None)),
        changed("profile", "half", ("resources.memory_mb", None, 16000)),
    )),
    Case("pool labels added, each a field of its own", _labels, (
        changed("pool", "h100", ("labels.rack", None, "b7"), ("labels.slurm_partition", None, "gpu")),
        changed("pool", "a100", ("labels.slurm_partition", None, "a100")),
    )),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_diff(case: Case):
    assert diff(config(BASE), config(edited(case.edit))) == case.expected


def test_diff_from_nothing_adds_every_entry_in_order():
    changes = diff(parse_document({"pools": [], "profiles": [], "policies": []}).config, config(BASE))
    assert [(c.kind, c.name, c.action) for c in changes] == [
        ("pool", "h100", "added"), ("pool", "a100", "added"), ("profile", "half", "added"),
        ("profile", "8xgpu", "added"), ("policy", "research", "added"), ("policy", "dev", "added")]


@pytest.mark.parametrize("edit, line", [
    (lambda doc: None, "no changes"),
    (_add_pool, "added pool l4"),
    (_quota_rows, "changed policies research, dev"),
    (_remove_profile, "changed pool h100 and policy research; removed profile 8xgpu"),
    (lambda doc: doc["pools"].extend({"name": f"p{i}", "capacity": {"gpu": 1}} for i in range(4)), "added 4 pools"),
])
def test_summary(edit, line: str):
    assert summarize(diff(config(BASE), config(edited(edit)))) == line


def test_a_change_reads_as_a_sentence():
    [change] = diff(config(BASE), config(edited(_rename_connection)))
    assert str(change) == "profile half changed: connections[h100].name 'h100' → '½ H100'"
    [order] = diff(config(BASE), config(edited(_execution_order)))
    assert str(order) == "pool h100 changed: execution_order [8xgpu, half] → [half, 8xgpu]"
