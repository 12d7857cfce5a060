"""``poolweb-slurm``: the bridge's command (docs/slurm.md)::

    poolweb-slurm run   [--mapping /etc/poolweb/slurm-bridge.toml]   # the bridge, until SIGTERM
    poolweb-slurm check [--mapping ...]     # the file read, Poolweb and its event stream reached, what does not match
    poolweb-slurm gate-script               # where the installed job_submit.lua is
    poolweb-slurm --version

Poolweb's URL and the bridge account's token come from ``POOLWEB_URL`` and ``POOLWEB_TOKEN`` (the
systemd unit's ``EnvironmentFile``); Slurm's commands find their cluster as usual (``SLURM_CONF``).
Which partition is which pool comes from the pools' ``slurm_partition`` labels in Poolweb and the
file's optional ``[pools]``, read once at start (``partitions``, decision 137).

Exit codes: 0 done, 1 a problem found by ``check``, 2 bad usage, an unusable mapping file, or (for
``run``) partitions the labels and the file map differently, or none mapped; 3 Poolweb or Slurm
unreachable at start.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path

from poolctl.api import Api
from poolctl.errors import PoolctlError
from poolctl.stream import StreamDown

from poolweb_slurm import gate_script
from poolweb_slurm.bridge import Bridge
from poolweb_slurm.mapping import Catalogue, problems
from poolweb_slurm.mapping_file import DEFAULT_PATH, BridgeMapping, MappingError, load_mapping
from poolweb_slurm.partitions import partitions, unmapped
from poolweb_slurm.slurm import Slurm, SlurmError

USAGE, UNREACHABLE = 2, 3
STREAM_SECONDS = 1.0  # check: a stream that refuses the token says so at once; one that stays open is usable


def main(arguments: list[str] | None = None) -> int:
    options = parser().parse_args(arguments)
    if options.command == "gate-script":
        print(gate_script())
        return 0
    logging.basicConfig(level=options.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        mapping = load_mapping(options.mapping)
    except MappingError as unusable:
        print(f"poolweb-slurm: {unusable}", file=sys.stderr)
        return USAGE
    try:
        api = Api()
        return check(mapping, api) if options.command == "check" else run(mapping, api)
    except (PoolctlError, SlurmError) as unreachable:
        print(f"poolweb-slurm: {unreachable}", file=sys.stderr)
        return UNREACHABLE


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="poolweb-slurm", description="Poolweb in front of Slurm (docs/slurm.md).")
    top.add_argument("--version", action="version", version=f"poolweb-slurm {installed_version()}")
    commands = top.add_subparsers(dest="command", required=True)
    for name, what in (("run", "run the bridge until SIGTERM or SIGINT"),
                       ("check", "read the mapping file and Poolweb's configuration; list what does not match")):
        command = commands.add_parser(name, help=what)
        command.add_argument("--mapping", type=Path, default=DEFAULT_PATH, help=f"the mapping file ({DEFAULT_PATH})")
        command.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    commands.add_parser("gate-script", help="print the path of the installed job_submit.lua")
    return top


def installed_version() -> str:
    try:
        return importlib.metadata.version("poolweb-slurm")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout without pip install
        return "(not installed)"


def check(mapping: BridgeMapping, api: Api) -> int:
    document = api.config()
    mapped = partitions(mapping, document)
    mapping = replace(mapping, pools=mapped.pools)
    found = [*mapped.conflicts, *([] if mapped.pools else [unmapped(mapping)]),
             *problems(mapping, Catalogue.from_document(document)), *stream_problems(api)]
    for problem in found:
        print(problem)
    if not found:
        print(f"{mapping.source}: {len(mapping.pools)} partition(s) mapped ({shown(mapping)}); Poolweb has every "
              "pool, policy and profile it names, and its event stream answers")
    return 1 if found else 0


def stream_problems(api: Api) -> list[str]:
    """The event stream (decision 193) opened with the bridge's token: without it the bridge still
    works, but grants wait for its polls; a proxy that refuses WebSockets is the usual cause."""
    stream = api.event_stream()
    try:
        stream.receive(STREAM_SECONDS)
    except StreamDown as why:
        return [f"Poolweb's event stream {stream.url} refused the bridge ({why}): it would grant at its polls only, "
                "not as Poolweb allocates (docs/slurm.md §5.4)"]
    finally:
        stream.close()
    return []


def shown(mapping: BridgeMapping) -> str:
    return ", ".join(f"{partition} → {pool}" for partition, pool in mapping.pools.items())


def run(mapping: BridgeMapping, api: Api) -> int:
    mapped = partitions(mapping, api.config())
    refusals = [*mapped.conflicts, *([] if mapped.pools else [unmapped(mapping)])]
    for refusal in refusals:
        print(f"poolweb-slurm: {refusal}", file=sys.stderr)
    if refusals:
        return USAGE
    mapping = replace(mapping, pools=mapped.pools)
    slurm = Slurm(partitions=list(mapping.pools))
    slurm.jobs()  # Slurm and Poolweb reachable before the first poll, or the start fails loudly
    bridge = Bridge(mapping, api, slurm)
    bridge.current_catalogue(bridge.clock())  # logs what the mapping names and Poolweb lacks
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: (stop.set(), bridge.wake()))
    logging.getLogger("poolweb_slurm").info("bridge of cluster %s: partitions %s, Poolweb at %s", mapping.cluster,
                                            shown(mapping), api.url)
    bridge.run(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
