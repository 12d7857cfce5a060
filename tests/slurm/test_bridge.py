"""The bridge end to end (decision 133): a real Slurm (two gated 8-GPU partitions, ``bare-metal``
the default and ``h100``), a real Poolweb (``manage.py serve`` on the tests' database) and
``poolweb-slurm run`` between them, driven only through ``sbatch``, ``scancel`` and ``squeue``.

ClearML's setup: pools ``bare-metal`` and ``h100`` of 8 GPUs, Bare Metal preferred; policies
``dev`` and ``research``, each reserving 8 GPUs with a limit of 16; a fixed profile ``4xgpu``.
Every job is root's (Poolweb's user ``root`` is in both teams); each runs until the test touches
its stop file, so ending one is a step of the test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from poolctl.api import Api
from poolweb.services import config as config_services
from tests.poolweb import processes
from tests.slurm.cluster import Cluster, Layout

GRACE_SECONDS = 4  # Poolweb's eviction grace; the bridge's ends a poll before
CLEARML = {
    # Each pool names its Slurm partition by a label, as an admin sets it in the editor (decision 137):
    # the mapping file below has no [pools].
    "pools": [{"name": name, "capacity": {"gpu": 8}, "labels": {"slurm_partition": name}} for name in ("bare-metal", "h100")],
    "profiles": [{"name": "4xgpu", "resources": {"gpu": 4}, "connections": [{"pool": "bare-metal"}, {"pool": "h100"}],
                  "policies": ["dev", "research"]}],
    "policies": [{"name": name, "group": name, "quotas": [{"scope": "*", "key": "gpu", "reserved": 8, "limit": 16}]}
                 for name in ("dev", "research")],
}
MAPPING = """\
cluster = "clearml"

[jobs]
partitions = "any"
retries = 3

[bridge]
poll_seconds = 0.3
comment_seconds = 0
"""


@pytest.fixture(scope="module")
def cluster(cluster_directory) -> Iterator[Cluster]:
    """Two nodes of 8 GPUs: ``bare-metal`` (gpu001) and ``h100`` (gpu002), gated; ``open`` not."""
    with Cluster.started(cluster_directory(), Layout(nodes=2)) as started:
        yield started


@pytest.fixture(scope="module")
def server(django_db_setup, tmp_path_factory):
    with processes.live_server(tmp_path_factory.mktemp("server"), POOLWEB_EVENT_POLL_MS="20",
                               POOLWEB_EVICTION_GRACE_SECONDS=str(GRACE_SECONDS),
                               POOLWEB_LOG_LEVEL="WARNING") as running:
        yield running


@dataclass
class Site:
    cluster: Cluster
    api: Api  # as the bridge's account: reads every request
    bridge_token: str
    url: str
    folder: Path

    def sbatch(self, *arguments: str) -> str:
        """A job that runs until ``finish`` touches its stop file; sent SIGTERM, it writes a
        checkpoint file and exits, as a training script that traps it does."""
        stop, checkpoint = self.folder / "stop-$SLURM_JOB_ID", self.folder / "checkpoint-$SLURM_JOB_ID"
        return self.cluster.submit(*arguments, "--wrap", f"trap 'touch {checkpoint}; exit 0' TERM; "
                                                         f"while [ ! -e {stop} ]; do sleep 0.2; done")

    def checkpointed(self, job: str) -> bool:
        return (self.folder / f"checkpoint-{job}").exists()

    def finish(self, job: str) -> None:
        (self.folder / f"stop-{job}").touch()

    def squeue(self) -> dict[str, tuple[str, str, str]]:
        """Each gated job as ``squeue`` shows it: state, partition, comment."""
        lines = self.cluster.run("squeue", "-h", "-p", "bare-metal,h100", "-o", "%i|%T|%P|%k").stdout.splitlines()
        return {job: (state, partition, comment) for job, state, partition, comment in
                (line.split("|", 3) for line in lines)}

    def request_of(self, job: str):
        found = self.api.list(labels={"slurm_cluster": "clearml", "slurm_job": job}, limit=10)
        assert len(found) <= 1, f"job {job} has {len(found)} requests"
        return found[0] if found else None

    def running(self) -> dict[str, str]:
        return {job: partition for job, (state, partition, _) in self.squeue().items() if state == "RUNNING"}


@pytest.fixture
def site(server, transactional_db, cluster, tmp_path) -> Iterator[Site]:
    # As docs/slurm.md installs it: a service account, an admin for the API, that submits for others.
    out = StringIO()
    call_command("service_account", "create", "slurm-bridge", "--admin", "--submit-for-others", stdout=out,
                 stderr=StringIO())
    token, bridge = out.getvalue().strip(), User.objects.get(username="slurm-bridge")
    root = User.objects.create_user("root")
    for team in ("dev", "research"):
        root.groups.add(Group.objects.get_or_create(name=team)[0])
    config_services.config_provision_document(document=CLEARML, author=bridge, comment="ClearML's example")
    folder = Path(cluster.directory) / "jobs"
    yield Site(cluster, Api(server.url, token), token, server.url, folder)
    for partition in ("bare-metal", "h100"):
        cluster.run("scancel", "-p", partition, check=False)
    wait_until(lambda: not any(state in {"RUNNING", "COMPLETING"} for state, _, _ in site_jobs(cluster)),
               "the test's jobs to end")


def site_jobs(cluster: Cluster) -> list[tuple[str, str, str]]:
    lines = cluster.run("squeue", "-h", "-p", "bare-metal,h100", "-o", "%T|%P|%k").stdout.splitlines()
    return [tuple(line.split("|", 2)) for line in lines]


class BridgeProcess:
    """``poolweb-slurm run`` as a platform team runs it: its own process, Poolweb's URL and the
    bridge account's token in its environment, SLURM_CONF the cluster's."""

    def __init__(self, site: Site, mapping: Path):
        self.site, self.mapping = site, mapping
        self.log = mapping.parent / "bridge.log"
        self.process: subprocess.Popen | None = None

    def environment(self) -> dict[str, str]:
        return {**self.site.cluster.environment(), "POOLWEB_URL": self.site.url,
                "POOLWEB_TOKEN": self.site.bridge_token, "PYTHONUNBUFFERED": "1"}

    def start(self) -> None:
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen([sys.executable, "-m", "poolweb_slurm", "run", "--mapping",
                                             str(self.mapping)], env=self.environment(), stdout=sink,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def check(self) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "poolweb_slurm", "check", "--mapping", str(self.mapping)],
                              env=self.environment(), capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)

    def kill(self) -> None:
        assert self.process is not None and self.process.poll() is None, self.output()
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=20)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@pytest.fixture
def bridge(site, tmp_path) -> Iterator[BridgeProcess]:
    mapping = tmp_path / "slurm-bridge.toml"
    mapping.write_text(MAPPING)
    started = BridgeProcess(site, mapping)
    started.start()
    yield started
    code = started.stop()
    assert code == 0, f"the bridge ended with {code}:\n{started.output()[-5000:]}"
    assert "Traceback" not in started.output(), started.output()[-5000:]


def wait_until(condition: Callable[[], object], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds} s for {what}")
        time.sleep(0.2)


def placements(site: Site, jobs: list[str]) -> list[str]:
    running = site.running()
    return [running.get(job, "held") for job in jobs]


def test_clearml_s_example_through_sbatch(site, bridge):
    """Four dev jobs fill Bare Metal, then borrow H100; four research jobs reclaim H100: dev's
    borrowed jobs go back to the queue held, and run again when capacity frees."""
    dev = [site.sbatch("-A", "dev", "--gres=gpu:4", "-J", f"dev-{n}") for n in range(4)]
    wait_until(lambda: placements(site, dev) == ["bare-metal", "bare-metal", "h100", "h100"],
               "dev's four jobs to run: Bare Metal first, then H100", seconds=30)

    research = [site.sbatch("-A", "research", "--gres=gpu:4", "-J", f"research-{n}") for n in range(4)]
    wait_until(lambda: placements(site, dev + research) ==
               ["bare-metal", "bare-metal", "held", "held", "h100", "h100", "held", "held"],
               "research to reclaim H100 from dev's borrowed jobs", seconds=60)
    # Poolweb's reason and place where squeue shows it, written once the queue rests (a second)
    waiting = dev[2:] + research[2:]
    wait_until(lambda: all(site.squeue()[job][2].startswith("poolweb: #") for job in waiting),
               "the waiting jobs' places in squeue", seconds=15)
    assert all(site.squeue()[job][0] == "PENDING" for job in waiting)
    assert all(site.request_of(job).state == "pending" for job in waiting)
    for job in dev[:2] + research[:2]:  # the same placement as the API gives
        request = site.request_of(job)
        assert (request.state, request.pool) == ("allocated", site.running()[job])
    assert site.request_of(dev[2]).attempt == 2  # reclaimed, re-queued: its second attempt
    assert site.checkpointed(dev[2]) and site.checkpointed(dev[3])  # signalled before being requeued
    assert not site.checkpointed(dev[0])

    site.finish(research[0])  # a job ending releases its capacity; research, in share, goes next
    wait_until(lambda: site.request_of(research[0]).state == "released", "the ended job's request to be released",
               seconds=15)
    wait_until(lambda: site.running().get(research[2]) == "h100", "the next research job to start on H100")

    site.cluster.run("scancel", dev[0])  # scancel of a running job releases it: dev's requeued job runs again
    wait_until(lambda: site.request_of(dev[0]).state == "released", "the cancelled job's request to be released",
               seconds=15)
    wait_until(lambda: site.running().get(dev[2]) == "bare-metal", "dev's reclaimed job to run again")


def test_a_job_that_maps_to_nothing_waits_with_the_fix_in_squeue(site, bridge):
    unmapped_account = site.sbatch("-A", "web", "--gres=gpu:4")
    no_such_profile = site.sbatch("-A", "dev", "--gres=gpu:3")
    wait_until(lambda: all(site.squeue().get(job, ("", "", ""))[2] != "poolweb: waiting for the bridge to register "
                           "this job" for job in (unmapped_account, no_such_profile)), "the bridge to explain both")
    shown = site.squeue()
    assert shown[unmapped_account][:2] == ("PENDING", "bare-metal")
    assert shown[unmapped_account][2].startswith("poolweb: account web has no Poolweb policy")
    assert "4xgpu (4 GPU)" in shown[no_such_profile][2]
    assert site.request_of(unmapped_account) is None and site.request_of(no_such_profile) is None


def test_a_user_poolweb_does_not_know_waits_with_the_reason(site, bridge):
    job = site.cluster.run_as("nobody", "sbatch", "--parsable", "--output=/dev/null", "-A", "dev", "--gres=gpu:4",
                              "--wrap", "sleep 60").stdout.strip()
    wait_until(lambda: "refused" in site.squeue().get(job, ("", "", ""))[2], "the bridge to explain the refusal")
    assert "owner" in site.squeue()[job][2]
    assert site.squeue()[job][0] == "PENDING"


def test_the_bridge_killed_and_restarted_mid_run_loses_nothing(site, bridge):
    first = [site.sbatch("-A", "dev", "--gres=gpu:4") for _ in range(2)]
    wait_until(lambda: placements(site, first) == ["bare-metal", "bare-metal"], "two dev jobs to run")
    bridge.kill()
    # While it is down: a job ends, another is submitted. Nothing new runs.
    site.finish(first[0])
    later = site.sbatch("-A", "research", "--gres=gpu:4")
    time.sleep(2)
    assert later not in site.running()
    assert site.request_of(first[0]).state == "allocated"  # Poolweb has not heard yet

    bridge.start()
    wait_until(lambda: site.request_of(first[0]).state == "released", "the ended job's request to be released")
    wait_until(lambda: later in site.running(), "the job submitted while the bridge was down to run")
    assert site.request_of(first[1]).state == "allocated" and site.running()[first[1]] == "bare-metal"
    assert site.request_of(later).pool == site.running()[later]
    # One request per job: the restart registered nothing twice.
    every = site.api.list(labels={"slurm_cluster": "clearml"}, limit=100)
    assert sorted(request.labels["slurm_job"] for request in every) == sorted([*first, later])



def test_a_request_cancelled_in_poolweb_cancels_its_job_with_the_reason(site, bridge):
    running = site.sbatch("-A", "dev", "--gres=gpu:4")
    wait_until(lambda: running in site.running(), "the job to run")
    site.api.cancel(site.request_of(running))
    wait_until(lambda: site.cluster.job(running)["JobState"] == "CANCELLED", "the job to be cancelled")
    shown = site.cluster.job(running)
    request = site.request_of(running)
    assert shown["Comment"] == f"poolweb: request {request.id} is released: cancelled by slurm-bridge; its capacity " \
                               "on pool bare-metal is free again"


def test_a_job_array_is_registered_and_granted_task_by_task(site, bridge):
    array = site.cluster.submit("-A", "dev", "--gres=gpu:4", "-a", "1-3", "--wrap", "sleep 300")
    tasks = [f"{array}_{task}" for task in (1, 2, 3)]
    wait_until(lambda: all(task in site.running() for task in tasks), "the three tasks to run")
    assert [site.running()[task] for task in tasks] == ["bare-metal", "bare-metal", "h100"]
    assert [site.request_of(task).pool for task in tasks] == ["bare-metal", "bare-metal", "h100"]


def test_a_bridge_away_longer_than_a_lease_finds_the_grant_gone_and_cancels_the_job(site, tmp_path):
    """The bridge heartbeats a running job's request; away longer than the lease, Poolweb expires
    the grant and gives its capacity away, and the bridge, back, makes Slurm agree: the job
    stops, its comment says why."""
    short_lease = tmp_path / "short-lease.toml"
    short_lease.write_text(MAPPING.replace("[bridge]\n", "[bridge]\nlease_seconds = 10\n"))
    away = BridgeProcess(site, short_lease)
    away.start()
    job = site.sbatch("-A", "dev", "--gres=gpu:4")
    wait_until(lambda: job in site.running(), "the job to run")
    granted = site.request_of(job)
    time.sleep(12)  # longer than the lease: the bridge's heartbeats keep the grant
    assert site.request_of(job).state == "allocated"
    assert site.request_of(job).lease_expires_at > granted.lease_expires_at
    away.kill()
    wait_until(lambda: site.request_of(job).state == "expired", "Poolweb to expire the grant", seconds=40)
    assert job in site.running()  # Slurm does not know yet

    away.start()
    wait_until(lambda: site.cluster.job(job)["JobState"] == "CANCELLED", "the returning bridge to cancel the job")
    assert site.cluster.job(job)["Comment"].startswith(f"poolweb: request {site.request_of(job).id} is expired")
    assert away.stop() == 0


def test_a_waiting_job_released_by_hand_is_held_again(site, bridge):
    """Nothing runs without a grant: an operator's ``scontrol release`` of a job Poolweb has not
    granted is undone (Slurm, with no free node, has not started it)."""
    running = [site.sbatch("-A", "dev", "--gres=gpu:4") for _ in range(4)]
    wait_until(lambda: all(job in site.running() for job in running), "dev's four jobs to run")
    over = site.sbatch("-A", "dev", "--gres=gpu:4")  # over dev's limit of 16
    wait_until(lambda: site.request_of(over) is not None, "the fifth job to be registered")
    site.cluster.run("scontrol", "release", over)
    wait_until(lambda: site.cluster.job(over)["Priority"] == "0", "the bridge to hold it again", seconds=15)
    assert site.request_of(over).state == "pending"
    assert "held again until Poolweb grants it" in site.cluster.job(over)["Comment"]


def test_a_grant_reaches_its_job_between_two_polls(site, tmp_path):
    """Poolweb's event stream says the moment it allocates (decision 193): the bridge releases the
    job then, not at its next poll — here a minute away. Capacity frees on Poolweb's side (root's
    own grants through the API fill dev's limit of 16), which no squeue shows."""
    slow = tmp_path / "slow-polls.toml"
    slow.write_text(MAPPING.replace("poll_seconds = 0.3", "poll_seconds = 60"))
    held = [result.request for result in site.api.submit_batch(
        [{"policy": "dev", "profile": "4xgpu", "owner": "root", "idempotency_key": f"api-{n}"} for n in range(4)])]
    wait_until(lambda: all(site.api.get(request).state == "allocated" for request in held), "root's API grants")
    job = site.sbatch("-A", "dev", "--gres=gpu:4")
    bridge = BridgeProcess(site, slow)
    bridge.start()
    try:
        wait_until(lambda: site.squeue()[job][2].startswith("poolweb: #1 in line"), "the job's place in squeue")
        time.sleep(1)  # the polls that registered it and wrote its place are over: the next is a minute away
        site.api.release(held[0])
        wait_until(lambda: job in site.running(), "the job to run before the next poll", seconds=30)
        assert f"granted on bare-metal: {job}" in bridge.output()
    finally:
        assert bridge.stop() == 0, bridge.output()[-5000:]


def test_check_reaches_poolweb_and_its_event_stream(site, tmp_path):
    mapping = tmp_path / "slurm-bridge.toml"
    mapping.write_text(MAPPING)

    checked = BridgeProcess(site, mapping).check()

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 partition(s) mapped (bare-metal → bare-metal, h100 → h100)" in checked.stdout
    assert "its event stream answers" in checked.stdout
