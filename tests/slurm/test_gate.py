"""Poolweb's gate in a real Slurm (docs/slurm.md, decision 127): jobs of gated partitions wait,
held by Slurm with Poolweb's comment, until the bridge (root) releases them; jobs of other
partitions run as if Poolweb were not there. Root stands in for the bridge, which is not built
yet; ``nobody`` is a Slurm user."""

from __future__ import annotations

import pytest

from tests.slurm.cluster import Cluster

WAITING = "poolweb: waiting for the bridge to register this job"


def queue_line(cluster: Cluster, job_id: str) -> str:
    """What a Slurm user reads in ``squeue``: id, state, reason, comment."""
    return cluster.run("squeue", "-h", "-j", job_id, "-o", "%i %T %r %k").stdout.strip()


def held(job_id: str) -> str:
    return f"{job_id} PENDING JobHeldUser {WAITING}"


def submit_as_nobody(cluster: Cluster, *arguments: str) -> str:
    submitted = cluster.run_as("nobody", "sbatch", "--parsable", "--output=/dev/null", *arguments)
    assert submitted.returncode == 0, submitted.stderr
    return submitted.stdout.strip()


def test_a_job_of_an_ungated_partition_runs_and_completes_untouched(cluster):
    job_id = cluster.submit("-p", "open", "--wrap", "sleep 1")
    job = cluster.wait_for_job(job_id, {"COMPLETED"})
    assert job["ExitCode"] == "0:0" and "Comment" not in job  # scontrol shows no comment when there is none


def test_a_job_of_a_gated_partition_waits_held_with_poolwebs_comment_until_released(cluster):
    job_id = cluster.submit("-p", "h100", "--wrap", "sleep 1")
    # A later job on the same nodes runs to its end: Slurm scheduled, and passed the gated one by.
    cluster.wait_for_job(cluster.submit("-p", "open", "-w", "gpu003", "--wrap", "true"), {"COMPLETED"})
    assert queue_line(cluster, job_id) == held(job_id)

    cluster.run("scontrol", "release", job_id)  # what the bridge does on a grant
    job = cluster.wait_for_job(job_id, {"COMPLETED"})
    assert job["NodeList"] in {"gpu003", "gpu004"}
    assert job["Comment"] == "poolweb: granted, released on partition h100"  # in the release's own RPC


def test_a_job_naming_no_partition_passes_the_gate_of_the_default_partition(cluster):
    job_id = cluster.submit("--wrap", "true")
    assert queue_line(cluster, job_id) == held(job_id)
    assert cluster.job(job_id)["Partition"] == "bare-metal"
    cluster.run("scancel", job_id)


def test_a_job_asking_for_two_gated_partitions_waits_for_poolweb_to_choose_one(cluster):
    job_id = cluster.submit("-p", "bare-metal,h100", "--wrap", "true")
    assert queue_line(cluster, job_id) == held(job_id)

    # What the bridge does on a grant: point the job at the granted pool's partition, release it.
    cluster.run("scontrol", "update", f"job={job_id}", "partition=h100")
    assert queue_line(cluster, job_id) == held(job_id)
    cluster.run("scontrol", "release", job_id)
    job = cluster.wait_for_job(job_id, {"COMPLETED"})
    assert job["Partition"] == "h100" and job["NodeList"] in {"gpu003", "gpu004"}
    assert job["Comment"] == "poolweb: granted, released on partition h100"


def test_a_job_of_an_ungated_partition_keeps_its_comment_when_root_releases_it(cluster):
    job_id = cluster.submit("-p", "open", "-H", "--comment", "mine", "--wrap", "true")
    cluster.run("scontrol", "release", job_id)
    assert cluster.wait_for_job(job_id, {"COMPLETED"})["Comment"] == "mine"


@pytest.mark.parametrize("partitions, gated, others", [("h100,open", "h100", "open"),
                                                         ("open,bare-metal,h100", "bare-metal,h100", "open")])
def test_a_job_asking_for_gated_and_ungated_partitions_is_refused_naming_the_fix(cluster, partitions, gated,
                                                                                    others):
    refused = cluster.run("sbatch", "--parsable", "-p", partitions, "--wrap", "true", check=False)
    assert refused.returncode == 1 and refused.stdout == ""
    assert (f"poolweb: gated by Poolweb: {gated}; not gated: {others}; a job asks for one side only: "
            f"sbatch -p {gated} (Poolweb decides) or sbatch -p {others}") in refused.stderr


def test_a_job_held_by_its_own_user_is_refused_on_a_gated_partition(cluster):
    refused = cluster.run("sbatch", "--parsable", "-H", "-p", "h100", "--wrap", "true", check=False)
    assert refused.returncode == 1
    assert "poolweb: partition h100 is gated by Poolweb, which holds and releases its jobs itself; " \
           "submit without -H/--hold" in refused.stderr


def test_a_user_cannot_release_a_job_that_waits_for_poolweb(cluster):
    job_id = submit_as_nobody(cluster, "-p", "h100", "--wrap", "true")
    refused = cluster.run_as("nobody", "scontrol", "release", job_id)
    assert refused.returncode == 1 and "Access/permission denied" in refused.stderr
    assert queue_line(cluster, job_id) == held(job_id)

    cluster.run("scontrol", "release", job_id)
    cluster.wait_for_job(job_id, {"COMPLETED"})


def test_a_user_cannot_move_a_pending_job_into_a_gated_partition(cluster):
    job_id = submit_as_nobody(cluster, "-p", "open", "--begin=now+600", "--wrap", "true")
    refused = cluster.run_as("nobody", "scontrol", "update", f"job={job_id}", "partition=h100")
    assert refused.returncode == 1 and "Access/permission denied" in refused.stderr
    assert cluster.job(job_id)["Partition"] == "open"
    cluster.run("scancel", job_id)


def test_a_released_gated_job_gets_the_gpus_it_asked_for(cluster):
    output = cluster.directory / "jobs" / "gpus.out"
    job_id = cluster.submit("-p", "bare-metal", "--gres=gpu:2", f"--output={output}",
                            "--wrap", 'echo "gpus=$SLURM_GPUS_ON_NODE"; sleep 30')
    assert queue_line(cluster, job_id) == held(job_id)

    cluster.run("scontrol", "release", job_id)
    cluster.wait_for_job(job_id, {"RUNNING"})
    # Without slurmdbd, TRES= leaves GPUs out (no AccountingStorageTRES); the details name them.
    details = cluster.run("scontrol", "show", "job", "-d", "-o", job_id).stdout
    assert "JOB_GRES=gpu:2 " in details and "GRES=gpu:2(IDX:0-1)" in details, details
    cluster.wait_for(lambda: output.exists() and output.read_text().strip(), "the job to print its GPUs")
    assert output.read_text().strip() == "gpus=2"
    cluster.run("scancel", job_id)


def test_a_waiting_job_stays_held_across_a_restart_of_slurmctld(cluster):
    job_id = cluster.submit("-p", "bare-metal", "--wrap", "true")
    cluster.restart_controller()
    assert queue_line(cluster, job_id) == held(job_id)

    cluster.run("scontrol", "release", job_id)
    cluster.wait_for_job(job_id, {"COMPLETED"})
