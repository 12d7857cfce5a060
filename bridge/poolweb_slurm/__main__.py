"""``python -m poolweb_slurm``: the ``poolweb-slurm`` command."""

import sys

from poolweb_slurm.cli import main

sys.exit(main())
