"""Which Slurm partition is which Poolweb pool (decision 137): the label ``slurm_partition`` on a
pool of Poolweb's live configuration (``GET /api/v1/config``) — what an administrator sets in the
console's editor and sees on the pool's card — and the mapping file's ``[pools]`` table, now
optional, beside it. Pure: a function of the mapping file and the configuration's document.

With pools ``h100`` (labelled ``slurm_partition=h100``) and ``bare-metal`` (labelled
``slurm_partition=bm``) and no ``[pools]``, ``partitions(mapping, document).pools`` is
``{"h100": "h100", "bm": "bare-metal"}``. With ``[pools] bm = "h100"`` in the file as well, the two
disagree, and ``conflicts`` says so naming both: the file's line and the pool's label. ``check``
lists conflicts as problems; ``run`` refuses to start on one (exit 2), since a job of ``bm`` would
go to a pool the administrator did not choose.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from poolweb_slurm.mapping_file import NAME, BridgeMapping

PARTITION_LABEL = "slurm_partition"  # spelled as the labels the bridge puts on its requests (slurm_job, …)


@dataclass(frozen=True)
class Partitions:
    pools: dict[str, str]  # Slurm partition → Poolweb pool, from the labels and the file
    conflicts: tuple[str, ...]  # where the two disagree, or the labels with themselves; each names its fix


def labelled(document: Mapping[str, Any]) -> dict[str, list[str]]:
    """Partition → the pools labelled with it, in the document's order."""
    found: dict[str, list[str]] = {}
    for pool in document.get("pools", []):
        labels = pool.get("labels") if isinstance(pool.get("labels"), Mapping) else {}
        if partition := labels.get(PARTITION_LABEL):
            found.setdefault(partition, []).append(pool["name"])
    return found


def partitions(mapping: BridgeMapping, document: Mapping[str, Any]) -> Partitions:
    """The partitions the bridge gates and the pool of each: every pool's label, and every line
    of the file's ``[pools]``; where they disagree, a conflict naming both."""
    by_label = labelled(document)
    label_of = {pool: partition for partition, pools in by_label.items() for pool in pools}
    conflicts = [f"Poolweb's pools {' and '.join(pools)} all have the label {PARTITION_LABEL}={partition}: a "
                 "partition is one pool; change the label of all but one in Poolweb's editor"
                 for partition, pools in by_label.items() if len(pools) > 1]
    conflicts += [f"Poolweb's pool {pools[0]} has the label {PARTITION_LABEL}={partition}, which is no Slurm "
                  "partition name (letters, digits, '_', '.', '-'): correct it in Poolweb's editor"
                  for partition, pools in by_label.items() if not NAME.match(partition)]
    for partition, pool in mapping.pools.items():
        line = f"[pools] {partition} = \"{pool}\" in {mapping.source}"
        if label_of.get(pool, partition) != partition:
            conflicts.append(f"{line}, but Poolweb's pool {pool} has the label {PARTITION_LABEL}="
                             f"{label_of[pool]}: change one of the two, or remove the line")
        for other in by_label.get(partition, []):
            if other != pool:
                conflicts.append(f"{line}, but Poolweb's pool {other} has the label {PARTITION_LABEL}={partition}: "
                                 "change one of the two, or remove the line")
    pools = {partition: names[0] for partition, names in by_label.items()}
    return Partitions({**pools, **mapping.pools}, tuple(conflicts))


def unmapped(mapping: BridgeMapping) -> str:
    """The problem of a bridge that gates no partition, naming both ways to map one."""
    return (f"no Slurm partition is mapped to a Poolweb pool: give a pool the label {PARTITION_LABEL}=<partition> "
            f"in Poolweb's editor, or add <partition> = \"<pool>\" to [pools] in {mapping.source}")
