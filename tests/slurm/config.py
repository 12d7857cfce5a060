"""The text of a throwaway cluster's slurm.conf, gres.conf and poolweb_gate.conf (decision 128):
pure functions of the layout, its directory and its ports."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.slurm.cluster import Layout

# A scheduler that answers in about a second, for many small jobs (the shared note's figures).
SCHEDULER = ("default_queue_depth=20000,sched_interval=2,sched_min_interval=500000,batch_sched_delay=1,"
             "bf_interval=2,bf_continue,bf_max_job_test=20000")


# What every throwaway cluster shares, beside its paths, ports, nodes and partitions.
SETTINGS = (
    "ClusterName=poolweb-test",
    "AuthType=auth/munge",
    "CredType=cred/munge",
    "SlurmUser=root",
    "SlurmdUser=root",
    "LogTimeFormat=iso8601_ms",
    "ReturnToService=2",
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_Core",
    "GresTypes=gpu",
    "SlurmdParameters=config_overrides",  # a 2-core machine declares 64 CPUs and 8 GPUs a node
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/none",
    "JobAcctGatherType=jobacct_gather/none",
    "AccountingStorageType=accounting_storage/none",  # AccountingStorageTRES needs slurmdbd: left out
    "JobCompType=jobcomp/none",
    "MpiDefault=none",
    "JobRequeue=1",
    "KillWait=5",
    "MinJobAge=300",
    f"SchedulerParameters={SCHEDULER}",
    "JobSubmitPlugins=lua",
)


def slurm_conf(directory: Path, layout: Layout, controller_port: int, node_ports: list[int]) -> str:
    # SlurmctldHost must be this machine's short name, or slurmctld refuses to be the controller.
    controller = [f"SlurmctldHost={socket.gethostname().split('.')[0]}(127.0.0.1)",
                  f"SlurmctldPort={controller_port}"]
    return "\n".join([*controller, *paths(directory), *SETTINGS, *nodes(layout, node_ports),
                      *partitions(layout)]) + "\n"


def paths(directory: Path) -> list[str]:
    """Every file and folder of the cluster under ``directory``; ``%n`` is the node's name."""
    return [f"AuthInfo=socket={directory / 'munge' / 'munge.socket'}",
            f"StateSaveLocation={directory / 'state'}",
            f"SlurmdSpoolDir={directory / 'spool' / '%n'}",
            f"SlurmctldPidFile={directory / 'run' / 'slurmctld.pid'}",
            f"SlurmdPidFile={directory / 'run' / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={directory / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={directory / 'log' / 'slurmd-%n.log'}"]


def nodes(layout: Layout, ports: list[int]) -> list[str]:
    """One line per node, each on 127.0.0.1 with a port of its own."""
    return [f"NodeName={name} NodeHostname={name} NodeAddr=127.0.0.1 Port={port} CPUs={layout.cpus} "
            f"RealMemory={layout.memory_mb} Gres=gpu:{layout.gpus} State=UNKNOWN"
            for name, port in zip(layout.node_names(), ports, strict=True)]


def partitions(layout: Layout) -> list[str]:
    names = layout.node_names()
    return [f"PartitionName={partition.name} Nodes={','.join(names[number - 1] for number in partition.nodes)} "
            f"Default={'YES' if partition.default else 'NO'} MaxTime=INFINITE State=UP"
            for partition in layout.all_partitions()]


def gres_conf(directory: Path, layout: Layout) -> str:
    # Empty regular files stand for the GPUs: slurmd warns they are not devices and counts them.
    last = layout.gpus - 1
    devices = directory / "dev" / (f"nvidia[0-{last}]" if last else "nvidia0")
    return "AutoDetect=off\n" + "".join(f"NodeName={name} Name=gpu File={devices}\n" for name in layout.node_names())


def gate_conf(layout: Layout) -> str:
    gated = ", ".join(f'"{partition.name}"' for partition in layout.all_partitions() if partition.gated)
    return f"gated_partitions = {{ {gated} }}\n"
