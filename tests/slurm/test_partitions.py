"""Which partition is which pool (bridge/poolweb_slurm/partitions.py, decision 137): the pools'
``slurm_partition`` labels in Poolweb, the mapping file's optional ``[pools]``, and what ``check``
and ``run`` say when the two disagree. Pure: no Slurm, no Poolweb."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, NamedTuple

import pytest

from poolctl.stream import StreamDown

from poolweb_slurm import cli
from poolweb_slurm.mapping import Catalogue, map_job
from poolweb_slurm.mapping_file import parse_mapping
from poolweb_slurm.partitions import Partitions, partitions
from tests.slurm.examples import FILE, LIVE, job

WITHOUT_POOLS = 'cluster = "clearml"\n[jobs]\npartitions = "any"\n'


def labelled(**partition_of: str) -> dict[str, Any]:
    """ClearML's configuration with pool → ``slurm_partition`` labels (pool names with ``_`` for ``-``)."""
    live = copy.deepcopy(LIVE)
    for pool in live["pools"]:
        if (partition := partition_of.get(pool["name"].replace("-", "_"))) is not None:
            pool["labels"] = {"slurm_partition": partition, "rack": "b7"}
    return live


class Case(NamedTuple):
    name: str
    file: str  # the [pools] lines
    live: dict[str, Any]
    expected: Partitions


LINE = f"in {FILE}, but Poolweb's pool"
CASES = [
    Case("the labels alone", "", labelled(bare_metal="bm", h100="gpu"),
         Partitions({"bm": "bare-metal", "gpu": "h100"}, ())),
    Case("the file alone, as before labels", 'bare-metal = "bare-metal"\nh100 = "h100"\n', LIVE,
         Partitions({"bare-metal": "bare-metal", "h100": "h100"}, ())),
    Case("both, agreeing, and each adding its own", 'bm = "bare-metal"\nextra = "h100"\n', labelled(bare_metal="bm"),
         Partitions({"bm": "bare-metal", "extra": "h100"}, ())),
    Case("the file maps a pool whose label names another partition", 'gpu = "h100"\n', labelled(h100="h100"),
         Partitions({"h100": "h100", "gpu": "h100"}, (
             f'[pools] gpu = "h100" {LINE} h100 has the label slurm_partition=h100: change one of the two, or '
             "remove the line",))),
    Case("the file maps a partition another pool is labelled with", 'bm = "h100"\n', labelled(bare_metal="bm"),
         Partitions({"bm": "h100"}, (
             f'[pools] bm = "h100" {LINE} bare-metal has the label slurm_partition=bm: change one of the two, or '
             "remove the line",))),
    Case("two pools labelled with one partition", "", labelled(bare_metal="gpu", h100="gpu"),
         Partitions({"gpu": "bare-metal"}, (
             "Poolweb's pools bare-metal and h100 all have the label slurm_partition=gpu: a partition is one pool; "
             "change the label of all but one in Poolweb's editor",))),
    Case("a label that is no partition name", "", labelled(h100="gpu h100"),
         Partitions({"gpu h100": "h100"}, (
             "Poolweb's pool h100 has the label slurm_partition=gpu h100, which is no Slurm partition name (letters, "
             "digits, '_', '.', '-'): correct it in Poolweb's editor",))),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_partitions_are_the_labels_and_the_file_and_every_disagreement_names_both(case):
    mapping = parse_mapping(f'cluster = "clearml"\n[pools]\n{case.file}', FILE)
    assert partitions(mapping, case.live) == case.expected


def test_a_file_without_pools_maps_jobs_by_the_labels_alone():
    mapping = parse_mapping(WITHOUT_POOLS, FILE)
    mapped = partitions(mapping, labelled(bare_metal="bare-metal", h100="h100"))
    mapping = dataclasses.replace(mapping, pools=mapped.pools)

    submitted = map_job(mapping, Catalogue.from_document(LIVE), job(partitions=("h100",)))

    assert mapped.conflicts == () and submitted.body["profile"] == "4xgpu"
    assert mapping.partition_of("bare-metal") == "bare-metal"


class Stream:
    """An event stream that stays open with nothing to say, or refuses at once."""

    url = "ws://poolweb.test/ws/events/"

    def __init__(self, refused: str | None) -> None:
        self.refused, self.closed = refused, False

    def receive(self, timeout: float) -> None:
        if self.refused:
            raise StreamDown(self.refused)

    def close(self) -> None:
        self.closed = True


class Poolweb:
    """What the commands read of Poolweb: the live configuration, and its event stream."""

    url = "http://poolweb.test"

    def __init__(self, document: dict[str, Any], stream_refused: str | None = None) -> None:
        self.document = document
        self.stream = Stream(stream_refused)

    def config(self) -> dict[str, Any]:
        return self.document

    def event_stream(self) -> Stream:
        return self.stream


def test_check_lists_a_disagreement_and_run_refuses_to_start_naming_both(capsys):
    mapping = parse_mapping('cluster = "clearml"\n[pools]\ngpu = "h100"\n', FILE)
    poolweb = Poolweb(labelled(h100="h100"))

    assert cli.check(mapping, poolweb) == 1
    assert "[pools] gpu = \"h100\" in /etc/poolweb/slurm-bridge.toml, but Poolweb's pool h100 has the label " \
           "slurm_partition=h100" in capsys.readouterr().out
    assert cli.run(mapping, poolweb) == cli.USAGE  # before Slurm is asked anything
    assert "[pools] gpu = \"h100\"" in capsys.readouterr().err


def test_with_no_partition_mapped_check_says_both_ways_and_run_refuses():
    mapping = parse_mapping(WITHOUT_POOLS, FILE)

    assert cli.check(mapping, Poolweb(LIVE)) == 1
    assert cli.run(mapping, Poolweb(LIVE)) == cli.USAGE


def test_check_names_the_partitions_the_labels_map(capsys):
    mapping = parse_mapping(WITHOUT_POOLS, FILE)

    assert cli.check(mapping, Poolweb(labelled(bare_metal="bm", h100="h100"))) == 0
    assert "2 partition(s) mapped (bm → bare-metal, h100 → h100)" in capsys.readouterr().out


def test_check_says_when_the_event_stream_refuses_the_bridge(capsys):
    mapping = parse_mapping(WITHOUT_POOLS, FILE)
    poolweb = Poolweb(labelled(bare_metal="bm", h100="h100"), stream_refused="server rejected WebSocket connection: HTTP 404")

    assert cli.check(mapping, poolweb) == 1
    assert "Poolweb's event stream ws://poolweb.test/ws/events/ refused the bridge (server rejected WebSocket " \
           "connection: HTTP 404): it would grant at its polls only" in capsys.readouterr().out
    assert poolweb.stream.closed
