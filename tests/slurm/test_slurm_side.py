"""The bridge's Slurm side (bridge/poolweb_slurm/slurm.py, decision 129) against a real Slurm:
reading the gated partitions' jobs in one squeue, and each action the bridge takes on them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from poolweb_slurm.slurm import COMMENT_LENGTH, RELEASED_APART, Slurm, SlurmError

from tests.slurm.cluster import Cluster

GATED = ("bare-metal", "h100")


class CountingSlurm(Slurm):
    """The real commands, counted: the poll must be one call whatever the number of jobs."""

    calls: list[list[str]]

    def run(self, command: list[str]) -> str:
        self.calls.append(command)
        return super().run(command)


@pytest.fixture()
def slurm(cluster: Cluster) -> CountingSlurm:
    bridge = CountingSlurm(GATED, timeout=20, environment=cluster.environment())
    bridge.calls = []
    return bridge


def jobs_by_id(slurm: Slurm) -> dict:
    return {job.id: job for job in slurm.jobs()}


def wait_until(condition, what: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.2)


def test_it_reads_every_held_job_of_the_gated_partitions_in_one_call(cluster, slurm):
    singles = [cluster.submit("-p", "h100", "-A", "dev", "--gres=gpu:2", "-c", "4", "--mem=8G", "-J", "train | a=b",
                              "--wrap", "true") for _ in range(17)]
    array = cluster.submit("-p", "bare-metal,h100", "-A", "research", "--gpus=1", "-c", "2", "--mem-per-cpu=1G",
                           "-a", "1-3", "--wrap", "true")
    ungated = cluster.submit("-p", "open", "--wrap", "sleep 30")

    jobs = jobs_by_id(slurm)

    assert len(slurm.calls) == 1
    assert ungated not in jobs
    assert set(singles) | {f"{array}_{task}" for task in (1, 2, 3)} <= set(jobs)
    single = jobs[singles[0]]
    assert (single.user, single.account, single.partitions, single.state, single.reason, single.held) == \
        ("root", "dev", ("h100",), "PENDING", "JobHeldUser", True)
    assert (single.gpus, single.cpus, single.memory_mib, single.array_task, single.name) == (2, 4, 8192, None, "train | a=b")
    assert single.comment == "poolweb: waiting for the bridge to register this job"
    task = jobs[f"{array}_2"]
    assert (task.array_task, task.partitions, task.gpus, task.cpus, task.memory_mib, task.held) == \
        (2, ("bare-metal", "h100"), 1, 2, 2048, True)
    cluster.run("scancel", *singles, array, ungated)


def test_it_sets_many_comments_escaped_and_bounded_sharing_a_call_per_text(cluster, slurm):
    jobs = [cluster.submit("-p", "h100", "--wrap", "true") for _ in range(6)]
    comments = {job: "poolweb: waiting: #2 in dev's queue" for job in jobs[:4]}
    comments[jobs[4]] = "poolweb: line\none\x1b]0;title\x07 | tab\there"
    comments[jobs[5]] = "x" * 500

    slurm.set_comments(comments)

    assert len(slurm.calls) == 3
    read = jobs_by_id(slurm)
    assert {read[job].comment for job in jobs[:4]} == {"poolweb: waiting: #2 in dev's queue"}
    assert read[jobs[4]].comment == "poolweb: line one ]0;title | tab here"
    assert read[jobs[5]].comment == "x" * (COMMENT_LENGTH - 1) + "…"
    cluster.run("scancel", *jobs)


def test_a_grant_points_a_held_job_at_its_partition_and_it_runs_there_with_its_gpus(cluster, slurm):
    output = Path(cluster.directory) / "jobs" / "granted.out"
    job = cluster.submit("-p", "bare-metal,h100", "--gres=gpu:4", f"--output={output}",
                         "--wrap", "echo GPUS=$SLURM_GPUS_ON_NODE; sleep 60")

    slurm.grant([job], partition="h100", moving=[job])

    running = cluster.wait_for_job(job, {"RUNNING"})
    assert running["Partition"] == "h100" and running["NodeList"] in {"gpu003", "gpu004"}
    wait_until(lambda: output.exists() and "GPUS=" in output.read_text(), "the job to print its GPUs")
    assert output.read_text().strip() == "GPUS=4"  # fake GPUs: Slurm sets no CUDA_VISIBLE_DEVICES
    assert "GRES=gpu:4(IDX:0-3)" in cluster.run("scontrol", "show", "job", "-d", job).stdout
    assert jobs_by_id(slurm)[job].held is False
    cluster.run("scancel", job)


def test_requeue_held_puts_a_running_job_back_in_the_queue_held(cluster, slurm):
    job = cluster.submit("-p", "h100", "--gres=gpu:1", "--wrap", "sleep 60")
    slurm.grant([job], partition="h100")
    cluster.wait_for_job(job, {"RUNNING"})

    slurm.requeue_held([job])

    wait_until(lambda: jobs_by_id(slurm)[job].held, "the job to be held again")
    again = jobs_by_id(slurm)[job]
    assert (again.state, again.reason) == ("PENDING", "job requeued in held state")
    assert cluster.job(job)["Restarts"] == "1"
    cluster.run("scancel", job)


def test_a_signal_reaches_the_batch_script_of_a_running_job(cluster, slurm):
    ready, marker = (Path(cluster.directory) / "jobs" / name for name in ("trapping", "signalled"))
    job = cluster.submit("-p", "h100", "--wrap", f"trap 'echo got USR1 > {marker}; exit 0' USR1; touch {ready}; "
                                                 "while true; do sleep 0.2; done")
    slurm.grant([job], partition="h100")
    # RUNNING comes at allocation, before the script starts: a signal then would find no trap.
    wait_until(ready.exists, "the script to set its trap")

    slurm.signal([job], "USR1")

    wait_until(marker.exists, "the script's trap to run")
    assert cluster.wait_for_job(job, {"COMPLETED"})["ExitCode"] == "0:0"


def test_cancel_ends_held_jobs_and_leaves_the_reason_in_squeue(cluster, slurm):
    jobs = [cluster.submit("-p", "h100", "--wrap", "true") for _ in range(2)]

    slurm.cancel(jobs, "poolweb: request 12 expired in Poolweb")

    for job in jobs:
        assert cluster.wait_for_job(job, {"CANCELLED"})["Comment"] == "poolweb: request 12 expired in Poolweb"


def test_a_failure_names_the_job_and_slurms_message_and_the_others_are_done(cluster, slurm):
    job = cluster.submit("-p", "h100", "--wrap", "true")

    with pytest.raises(SlurmError) as failed:
        slurm.set_comments({job: "poolweb: fine", "999999": "poolweb: gone"})
    assert failed.value.failures == {"999999": "Invalid job id specified for job 999999"}
    assert jobs_by_id(slurm)[job].comment == "poolweb: fine"

    with pytest.raises(SlurmError) as failed:
        slurm.grant([job], partition="no-such-partition", moving=[job])
    assert failed.value.failures == {job: f"Invalid partition name specified for job {job}"}
    assert jobs_by_id(slurm)[job].held  # not moved, so not released
    cluster.run("scancel", job)


def test_every_command_is_bounded_by_the_timeout(cluster):
    with pytest.raises(SlurmError, match="squeue: no answer within 0.001 s"):
        Slurm(GATED, timeout=0.001, environment=cluster.environment()).jobs()


def test_a_name_and_comment_holding_squeues_separators_cannot_forge_a_job(cluster, slurm):
    forged = "x\x1e\n999\x1f999\x1fN/A\x1falice\x1fresearch\x1fh100\x1fPENDING\x1fJobHeldUser\x1f0"
    job = cluster.submit("-p", "h100", "-J", "a\x1fb\x1e\nc", "--wrap", "true")
    cluster.run("scontrol", "update", f"jobid={job}", f"comment={forged}")  # any job's owner may

    jobs = jobs_by_id(slurm)

    assert "999" not in jobs
    assert (jobs[job].name, jobs[job].comment, jobs[job].user) == ("a\x1fb\x1e\nc", forged, "root")
    cluster.run("scancel", job)


def test_cancel_ends_the_jobs_it_could_not_comment(cluster, slurm):
    job = cluster.submit("-p", "h100", "--wrap", "true")

    with pytest.raises(SlurmError) as failed:
        slurm.cancel([job, "999999"], "poolweb: cancelled in Poolweb")

    assert set(failed.value.failures) == {"999999"}
    assert cluster.wait_for_job(job, {"CANCELLED"})["Comment"] == "poolweb: cancelled in Poolweb"


def test_one_grant_call_pair_releases_many_jobs_and_one_task_of_an_array(cluster, slurm):
    jobs = [cluster.submit("-p", "bare-metal,h100", "--gres=gpu:1", "--wrap", "sleep 30") for _ in range(4)]
    array = cluster.submit("-p", "bare-metal,h100", "--gres=gpu:1", "-a", "1-3", "--wrap", "sleep 30")
    slurm.calls.clear()

    slurm.grant([*jobs, f"{array}_2"], partition="h100", moving=[*jobs, f"{array}_2"])

    assert [command[:2] for command in slurm.calls] == [["scontrol", "update"], ["scontrol", "release"]]
    for job in (*jobs, f"{array}_2"):
        assert cluster.wait_for_job(job, {"RUNNING"})["Partition"] == "h100"
    others = jobs_by_id(slurm)
    assert [others[f"{array}_{task}"].held for task in (1, 3)] == [True, True]
    cluster.run("scancel", *jobs, array)


def test_jobs_that_asked_for_the_granted_partition_alone_are_only_released(cluster, slurm):
    moved = cluster.submit("-p", "bare-metal,h100", "--gres=gpu:1", "--wrap", "sleep 30")
    placed = [cluster.submit("-p", "h100", "--gres=gpu:1", "--wrap", "sleep 30") for _ in range(2)]
    slurm.calls.clear()

    slurm.grant([moved, *placed], partition="h100", moving=[moved])

    assert slurm.calls == [["scontrol", "update", f"jobid={moved}", "partition=h100", "starttime=now"],
                           ["scontrol", "release", ",".join([moved, *placed])]]
    for job in (moved, *placed):
        assert cluster.wait_for_job(job, {"RUNNING"})["Partition"] == "h100"
    cluster.run("scancel", moved, *placed)


def test_a_jobs_time_limit_is_read_in_seconds(cluster, slurm):
    timed, untimed = (cluster.submit("-p", "h100", *options, "--wrap", "true") for options in (("--time=90",), ()))
    jobs = jobs_by_id(slurm)
    assert jobs[timed].time_limit_seconds == 5400
    cluster.run("scancel", timed, untimed)


def test_a_long_release_goes_as_four_calls_at_once_each_every_fourth_job(cluster, slurm):
    # Begin times an hour away: released, they wait for it instead of filling the nodes.
    jobs = [cluster.submit("-p", "h100", "--begin=now+3600", "--wrap", "true") for _ in range(RELEASED_APART)]
    slurm.calls.clear()

    slurm.release(jobs)

    assert sorted(slurm.calls) == sorted(["scontrol", "release", ",".join(jobs[start::4])] for start in range(4))
    assert not any(job.held for job in slurm.jobs() if job.id in jobs)
    cluster.run("scancel", *jobs)
