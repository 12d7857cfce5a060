"""The examples the bridge's pure tests share: ClearML's configuration and mapping file, a job
as squeue shows it, a request as Poolweb shows it."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any

from poolctl.models import Request

from poolweb_slurm.mapping import Catalogue
from poolweb_slurm.mapping_file import parse_mapping
from poolweb_slurm.slurm import Job

FILE = "/etc/poolweb/slurm-bridge.toml"

# ClearML's setup (docs/slurm.md §5): two 8-GPU pools, a 4-GPU profile on both (Bare Metal
# first), a 1-GPU profile on bare-metal only, and a dynamic one.
LIVE = {
    "pools": [{"name": "bare-metal", "capacity": {"gpu": 8}}, {"name": "h100", "capacity": {"gpu": 8}}],
    "profiles": [
        {"name": "4xgpu", "resources": {"gpu": 4, "mcpu": 32000, "memory_mb": 200000},
         "connections": [{"pool": "bare-metal"}, {"pool": "h100"}], "policies": ["dev", "research"]},
        {"name": "4xgpu-small", "resources": {"gpu": 4, "mcpu": 8000},
         "connections": [{"pool": "bare-metal"}, {"pool": "h100"}], "policies": ["research"]},
        {"name": "1xgpu", "resources": {"gpu": 1, "mcpu": 8000}, "connections": [{"pool": "bare-metal"}],
         "policies": ["dev"]},
        {"name": "job", "resources": {"gpu": 1}, "dynamic": True,
         "connections": [{"pool": "bare-metal"}, {"pool": "h100"}], "policies": ["dev", "research"]},
    ],
    "policies": [{"name": "dev"}, {"name": "research"}],
}

MAPPING = """\
cluster = "clearml"

[pools]
bare-metal = "bare-metal"
h100 = "h100"

[jobs]
partitions = "any"

[accounts.ml]
policy = "research"
preemptible = false
retries = 1
"""


def job(**changes: Any) -> Job:
    return dataclasses.replace(Job(
        id="12", array_task=None, user="ann", account="dev", partitions=("bare-metal",), state="PENDING",
        reason="JobHeldUser", comment="", gpus=4, cpus=16, memory_mib=16384, submitted=datetime(2026, 12, 3),
        eligible=None, name="train", held=True), **changes)


NOW = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
MAPPED = parse_mapping(MAPPING + "[bridge]\npoll_seconds = 1\ncomment_seconds = 10\n", "/etc/poolweb/slurm-bridge.toml")
CATALOGUE = Catalogue.from_document(LIVE)

HELD = job(held=True, state="PENDING", reason="JobHeldUser", gpus=4, cpus=8, memory_mib=0)
RELEASED = dataclasses.replace(HELD, held=False, reason="Resources")
RUNNING = dataclasses.replace(HELD, held=False, state="RUNNING", reason="None", partitions=("h100",))
ENDED = dataclasses.replace(RUNNING, state="COMPLETED")


def request(state: str, **changes: Any) -> Request:
    values: dict[str, Any] = dict(id=41, state=state, policy="dev", profile="4xgpu", attempt=1, max_retries=3,
                                  reason="Waiting", message="waiting for 4 gpu on bare-metal", lease_seconds=600,
                                  labels={"slurm_cluster": "clearml", "slurm_job": "12"})
    if state in {"allocated", "preempting"}:
        values.update(pool="h100", reason="Granted", message="granted on pool h100", lease_expires_at=NOW +
                      timedelta(seconds=590), allocated_at=NOW - timedelta(seconds=10))
    if state == "preempting":
        values.update(reason="Reclaimed", message="reclaimed for request 50", preempted_by=50,
                      grace_ends_at=NOW + timedelta(seconds=20))
    return Request(**{**values, **changes})
