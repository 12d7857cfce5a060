"""The gate's configuration, poolweb_gate.conf (docs/slurm.md, decision 127): without it Slurm's
controller does not start, so no job of a gated partition can run unseen; an edited one takes
effect when the script is touched. Each test starts a small cluster of its own."""

from __future__ import annotations

import os
import time

import pytest

from tests.slurm.cluster import Cluster, Layout, Partition


def test_without_its_config_the_gate_stops_slurmctld_from_starting(cluster_directory):
    cluster = Cluster(cluster_directory(), Layout(nodes=1))
    cluster.write()
    (cluster.directory / "etc" / "poolweb_gate.conf").unlink()
    try:
        with pytest.raises(RuntimeError, match="slurmctld"):
            cluster.boot()
    finally:
        cluster.stop()
    log = (cluster.directory / "log" / "slurmctld.log").read_text()
    assert f"poolweb gate: cannot read {cluster.directory}/etc/poolweb_gate.conf" in log
    assert "fatal: failed to initialize job_submit plugin" in log


def test_an_edited_config_gates_once_the_script_is_touched(cluster_directory):
    layout = Layout(nodes=1, partitions=(Partition("gpu", (1,), gated=True, default=True),
                                         Partition("spare", (1,), gated=False)))
    with Cluster.started(cluster_directory(), layout) as cluster:
        first = cluster.submit("-p", "spare", "--begin=now+600", "--wrap", "true")
        (cluster.directory / "etc" / "poolweb_gate.conf").write_text('gated_partitions = { "gpu", "spare" }\n')
        script = cluster.directory / "etc" / "job_submit.lua"
        later = time.time() + 1  # Slurm compares whole seconds
        os.utime(script, (later, later))
        second = cluster.submit("-p", "spare", "--wrap", "true")
        assert cluster.job(first)["Reason"] == "BeginTime" and "Comment" not in cluster.job(first)
        assert cluster.job(second)["Reason"] == "JobHeldUser"
        assert cluster.job(second)["Comment"] == "poolweb: waiting for the bridge to register this job"
