"""A submission from the command line: the options ``poolctl submit`` and ``poolctl run`` share,
checked before anything is sent so a typo is a usage error with the fix, not a round trip.

``--gpu``, ``--cpu``, ``--memory`` and ``--resource KEY=N`` become the request's
``resource_settings`` (docs/api.md §3: ``gpu_count``, ``cpu_count``, ``memory``, ``pool_resources``);
amounts travel as decimal strings so 0.143 stays exactly 0.143.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

QUANTITY = re.compile(r"[0-9]+(\.[0-9]{1,3})?")
MEMORY = re.compile(r"[0-9]+(KB|MB|GB|TB|PB|KiB|MiB|GiB|TiB|PiB)")
KEY = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
LABEL_KEY = re.compile(r"[^=]{1,63}")


def quantity(text: str) -> str:
    if not QUANTITY.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a quantity: a number ≥ 0 with at most 3 decimals, like 2 "
                                         "or 0.5")
    return text


def memory(text: str) -> str:
    if not MEMORY.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount of memory: a whole number and a unit, like 16GiB "
                                         "or 500MB (KB MB GB TB PB, or KiB MiB GiB TiB PiB)")
    return text


def resource(text: str) -> tuple[str, str]:
    key, _, amount = text.partition("=")
    if not KEY.fullmatch(key):
        raise argparse.ArgumentTypeError(f"{key!r} is not a resource key (lower case, like tensorrt_sessions); "
                                         "write KEY=AMOUNT")
    return key, quantity(amount)


def label(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not LABEL_KEY.fullmatch(key):
        raise argparse.ArgumentTypeError(f"{text!r} is not a label: write KEY=VALUE, like team=nlp")
    return key, value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds ≥ 0")
    return value


def run_limit(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a run limit: a whole number of seconds ≥ 1, like 3600")
    return int(text)


def add_submission_arguments(parser: argparse.ArgumentParser, default_retries: int = 0,
                             retries: str = "times to re-queue after preemption; 0: a preemption ends the request"
                             ) -> None:
    queue = parser.add_argument_group("the request")
    queue.add_argument("--policy", required=True, help="the policy to submit to (see `poolctl policies`)")
    queue.add_argument("--profile", required=True, help="the job shape, e.g. half, 2xgpu, job")
    queue.add_argument("--name", help="a name people see in the queue")
    queue.add_argument("--label", type=label, action="append", default=[], metavar="KEY=VALUE",
                       help="a label (repeat for more)")
    queue.add_argument("--max-retries", type=int, default=default_retries, metavar="N",
                       help=f"{retries} (default {default_retries})")
    queue.add_argument("--lease", type=int, metavar="SECONDS",
                       help="lease length, renewed by heartbeats (server default 300, range 10…86400)")
    queue.add_argument("--max-runtime", type=run_limit, metavar="SECONDS",
                       help="its run limit: the run ends that long after each grant, or is queued again where the "
                            "policy says so; warned a grace before (R-52)")
    queue.add_argument("--not-preemptible", action="store_true",
                       help="never preempted; it must then fit in the policy's reserved share")
    amounts = parser.add_argument_group("amounts (dynamic profiles only)")
    amounts.add_argument("--gpu", type=quantity, metavar="N", help="GPUs (fractions allowed; 0 removes gpu)")
    amounts.add_argument("--cpu", type=quantity, metavar="N", help="CPUs (1 = 1000 mcpu)")
    amounts.add_argument("--memory", type=memory, metavar="AMOUNT", help="memory, like 16GiB or 500MB")
    amounts.add_argument("--resource", type=resource, action="append", default=[], metavar="KEY=N",
                         help="another resource key, e.g. tensorrt_sessions=1 (repeat for more)")


def submission_from(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``Client.submit`` that the options give."""
    settings: dict[str, Any] = {}
    for option, field in (("gpu", "gpu_count"), ("cpu", "cpu_count"), ("memory", "memory")):
        if getattr(args, option) is not None:
            settings[field] = getattr(args, option)
    if args.resource:
        settings["pool_resources"] = dict(args.resource)
    return {
        "policy": args.policy, "profile": args.profile, "name": args.name, "labels": dict(args.label) or None,
        "max_retries": args.max_retries, "lease_seconds": args.lease, "preemptible": not args.not_preemptible,
        "max_runtime_seconds": args.max_runtime,
        "resource_settings": settings or None,
    }
