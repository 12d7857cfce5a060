"""Poolweb in front of Slurm (docs/slurm.md): the gate, ``job_submit.lua``, the script Slurm's
job_submit/lua plugin runs, shipped inside this package so a pip install carries it to the
controller::

    cp "$(python -m poolweb_slurm gate-script)" /etc/slurm/job_submit.lua

and the bridge, ``poolweb-slurm run`` (``cli``): ``plan`` (what one poll does, a pure function of
both sides), ``bridge`` (the loop that reads both sides and carries the plan out),
``allocations`` (grants between two polls, from Poolweb's event stream), ``comments`` (what
``squeue`` shows of a waiting job, written on a thread of its own), ``slurm``
(Slurm's commands), ``partitions`` (which partition is which pool: the pools' ``slurm_partition``
labels and the file), ``mapping_file`` and ``mapping`` (from a job to a Poolweb request).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def gate_script() -> Path:
    """Where the installed ``job_submit.lua`` is."""
    return Path(str(resources.files(__name__).joinpath("job_submit.lua")))
