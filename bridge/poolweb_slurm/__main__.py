"""``python -m poolweb_slurm gate-script``: prints the path of the installed job_submit.lua."""

from __future__ import annotations

import sys

from poolweb_slurm import gate_script


def main(arguments: list[str]) -> int:
    if arguments != ["gate-script"]:
        print("usage: python -m poolweb_slurm gate-script", file=sys.stderr)
        return 2
    print(gate_script())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
