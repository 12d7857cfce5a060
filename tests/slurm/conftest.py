"""One real Slurm cluster per module that asks for it (tests/slurm/cluster.py, decision 128):
four simulated nodes of 8 fake GPUs; ``bare-metal`` (gpu[001-002], the default partition) and ``h100``
(gpu[003-004]) gated by Poolweb's job_submit.lua, ``open`` (all four) not.

What the tests check of Poolweb does not depend on its database, so they run once: on the suite's
SQLite pass, and are skipped on the PostgreSQL one (``DATABASE_URL`` set), where they would start
the same cluster to learn nothing new.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.slurm.cluster import Cluster, Layout, missing_binaries


def reason_to_skip() -> str | None:
    if os.environ.get("DATABASE_URL"):
        return "the Slurm tests run on the SQLite pass only (docs/slurm.md §6)"
    if missing := missing_binaries():
        return f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurmctld slurmd slurm-client munge"
    if os.geteuid() != 0:
        return "the Slurm tests run slurmd as root (it starts jobs as their users)"
    return None


@pytest.fixture(scope="session")
def cluster_directory() -> Iterator[Callable[[], Path]]:
    """A fresh folder per call, removed at the end of the session. Not under pytest's tmp_path:
    its folder is root's alone, and the tests submit as nobody too."""
    if reason := reason_to_skip():
        pytest.skip(reason)
    made: list[Path] = []

    def fresh() -> Path:
        made.append(Path(tempfile.mkdtemp(prefix="poolweb-slurm-")))
        return made[-1]

    yield fresh
    for directory in made:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(cluster_directory) -> Iterator[Cluster]:
    with Cluster.started(cluster_directory(), Layout(nodes=4)) as started:
        yield started


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test of the bridge shows the bridge's log and what squeue showed then."""
    outcome = yield
    report = outcome.get_result()
    bridge = item.funcargs.get("bridge") if hasattr(item, "funcargs") else None
    if report.failed and report.when == "call" and hasattr(bridge, "output"):
        report.sections.append(("bridge log", bridge.output()[-8000:]))
        report.sections.append(("squeue", bridge.site.cluster.run("squeue", "-o", "%i %T %P %a %r %k",
                                                                  check=False).stdout))
