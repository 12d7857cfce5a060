"""The throwaway cluster itself (tests/slurm/cluster.py, decision 128): its stop ends what it
started and the jobs it ran, and nothing else on the machine; ``scontrol show job -o`` is read
whole."""

from __future__ import annotations

import subprocess

from tests.slurm.cluster import Cluster, Layout, split_fields


def test_stopping_ends_the_clusters_daemons_and_jobs_and_nothing_else(cluster_directory):
    bystander = subprocess.Popen(["sleep", "60"])  # a process of the same name as the job's
    try:
        with Cluster.started(cluster_directory(), Layout(nodes=1)) as cluster:
            job_id = cluster.submit("-p", "open", "--wrap", "sleep 60")
            cluster.wait_for_job(job_id, {"RUNNING"})
            assert len(cluster.tagged_processes()) >= 4  # munged, slurmctld, slurmd, the job's
        assert cluster.tagged_processes() == []
        assert all(process.poll() is not None for process in cluster.processes)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_value_with_spaces_stays_whole():
    line = "JobId=7 Comment=poolweb: waiting for the bridge StdErr=/dev/null TRES=cpu=1,gres/gpu=2"
    assert split_fields(line) == ["JobId=7", "Comment=poolweb: waiting for the bridge", "StdErr=/dev/null",
                                  "TRES=cpu=1,gres/gpu=2"]
