"""The console's cards (poolweb.console.cards and .drafts): a draft read leniently, marked against
the live version, with the API's errors placed at the cards their paths concern."""

from __future__ import annotations

import copy

import pytest

from poolweb.console.cards import Amount, Bar, Finding, Link, Mark, Removed, bar, config_board, duration_text
from poolweb.console.drafts import document_board, draft_board
from reconcile.document import read_document
from tests.poolweb.conftest import document


def board_of(doc: dict):
    return document_board(doc)


def test_a_document_reads_into_cards_with_every_default_spelled_out():
    doc = document()
    doc["pools"][0]["execution_order"] = ["job"]
    doc["profiles"][0]["connections"] = [{"pool": "a100", "name": "½ A100"}]

    board = board_of(doc)

    h100, a100 = board.pools
    assert (h100.name, h100.capacity, h100.order) == ("h100", (Amount("gpu", "8"),), ("job", "4xgpu"))
    assert a100.order == ("4xgpu", "half")  # none listed: connected profiles by name
    half = board.profiles[0]
    assert (half.resources, half.connections, half.dynamic) == ((Amount("gpu", "0.5"),), (Link("a100", "½ A100"),), False)
    assert board.profiles[1].connections == (Link("h100", "h100"), Link("a100", "a100"))
    assert board.policies[0].quotas[0].scope == "*"
    assert (board.policies[1].priority, board.policies[0].priority) == ("10", "0")


@pytest.mark.parametrize("broken", [
    None, [], {"pools": "x"}, {"pools": [1, None, {"name": 5, "capacity": [1]}]},
    {"profiles": [{"connections": [None, {"pool": 3}], "resources": {"gpu": "lots"}, "policies": "dev"}]},
    {"policies": [{"quotas": [{"reserved": {}}, "x"], "priority": "high"}]},
    {"policies": [{"max_wait_seconds": "soon", "min_runtime_seconds": [], "require_max_runtime": "yes"}]},
])
def test_anything_a_draft_holds_reads_into_cards_without_failing(broken):
    board = board_of(broken)
    assert board.editing is False


def test_a_value_that_is_not_a_quantity_shows_as_written_and_zeros_do_not_show():
    board = board_of({"pools": [{"name": "p", "capacity": {"gpu": "lots", "mcpu": 0, "licence": "1.50"}}]})
    assert board.pools[0].capacity == (Amount("gpu", "lots"), Amount("licence", "1.5"))


def live_cards():
    return board_of(document())


def test_the_draft_is_marked_against_the_live_version():
    doc = document()
    doc["pools"].append({"name": "l4", "capacity": {"gpu": 2}})
    doc["pools"][0]["capacity"] = {"gpu": "8"}
    doc["profiles"][1]["connections"].reverse()
    doc["profiles"][1]["policies"] = ["research"]
    doc["policies"][1]["priority"] = 5
    del doc["profiles"][2]

    board = draft_board(doc, live_cards(), [], [])

    # h100 loses job from its execution order; its capacity is the same however it is written.
    assert [(p.name, p.mark) for p in board.pools] == [("h100", Mark("changed", ("execution order",))), ("a100", None),
                                                       ("l4", Mark("added"))]
    assert board.profiles[1].mark == Mark("changed", ("connections", "policy rank"))
    assert board.policies[1].mark == Mark("changed", ("priority",))
    assert board.removed == (Removed("profile", "job"),)
    assert board.editing is True


def test_each_issue_goes_to_the_card_its_path_concerns_and_the_rest_to_the_summary():
    errors = [{"path": "profiles[1].connections", "code": "no_connection", "message": "no connection"},
              {"path": "pools", "code": "removal_refused", "message": "still in use"},
              {"path": "policies[7].name", "code": "invalid_name", "message": "beyond the cards"}]
    warnings = [{"path": "policies[0].group", "code": "group_empty", "message": "no members"}]

    board = draft_board(document(), live_cards(), errors, warnings)

    assert board.profiles[1].issues == (Finding("error", "profiles[1].connections", "no connection"),)
    assert board.policies[0].issues == (Finding("warning", "policies[0].group", "no members"),)
    assert [i.message for i in board.issues] == ["still in use", "beyond the cards"]
    assert (board.errors, board.warnings) == (3, 1)


@pytest.mark.parametrize("used, total, over, expected", [
    (0, 8000, None, Bar("gpu", "0", "8", 0, None)),
    (2500, 8000, None, Bar("gpu", "2.5", "8", 31, None)),
    (10000, 8000, 2000, Bar("gpu", "10", "8", 100, "2")),
    (0, 0, None, Bar("gpu", "0", "0", 0, None)),
    (1000, 0, 1000, Bar("gpu", "1", "0", 100, "1")),
])
def test_a_usage_bar_says_in_use_of_total_as_the_api_writes_them(used, total, over, expected):
    assert bar("gpu", used, total, over) == expected


def test_marks_compare_what_the_cards_show_not_how_the_document_spells_it():
    doc = copy.deepcopy(document())
    doc["profiles"][0]["connections"][0]["name"] = "a100"  # the default, written out
    doc["policies"][0]["quotas"][0]["scope"] = "*"
    assert all(card.mark is None for card in (*draft_board(doc, live_cards(), [], []).profiles,))


def test_a_pools_labels_show_as_written_and_a_changed_label_marks_the_card():
    live = document()
    draft = copy.deepcopy(live)
    draft["pools"][0]["labels"] = {"slurm_partition": "gpu", "rack": 7}
    draft["pools"][1]["labels"] = "not an object"

    h100, a100 = board_of(draft).pools

    assert h100.labels == (("rack", "7"), ("slurm_partition", "gpu")) and a100.labels == ()
    marked = draft_board(draft, document_board(live), [], []).pools[0].mark
    assert marked == Mark("changed", ("labels",))


TIMED = dict(min_runtime_seconds=1800, max_wait_seconds=7200, max_runtime_seconds=93600, on_time_limit="requeue",
             require_max_runtime=True)


def test_a_policy_s_time_rules_read_alike_from_a_document_and_from_the_engine_s_policy():
    doc = document()
    doc["policies"][0].update(TIMED)
    expected = ("protected for its first 30 min", "reserves after waiting 2 h", "runs at most 1 d 2 h, then queued again",
                "must state a run limit")

    assert board_of(doc).policies[0].time_rules == expected
    assert config_board(read_document(doc)).policies[0].time_rules == expected
    assert board_of(document()).policies[0].time_rules == ()  # none set: none shown
    doc["policies"][0].update(max_runtime_seconds=None, on_time_limit="requeue")
    assert "queued again at its run limit" in board_of(doc).policies[0].time_rules


def test_a_changed_time_rule_marks_its_policy_card():
    doc = document()
    doc["policies"][1]["max_wait_seconds"] = 3600

    board = draft_board(doc, live_cards(), [], [])

    assert board.policies[1].mark == Mark("changed", ("time rules",))
    assert board.policies[1].time_rules == ("reserves after waiting 1 h",)


@pytest.mark.parametrize("seconds,text", [(0, "0 s"), (45, "45 s"), (60, "1 min"), (90, "1 min 30 s"), (7200, "2 h"),
                                          (5400, "1 h 30 min"), (90061, "1 d 1 h"), ("soon", "soon s"), (True, "True s"),
                                          (-5, "-5 s")])
def test_a_duration_reads_in_its_two_largest_units_and_anything_else_as_written(seconds, text):
    assert duration_text(seconds) == text
