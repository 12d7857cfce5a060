"""``python -m poolctl``: the same as the ``poolctl`` command."""

from poolctl.cli import entry_point

entry_point()
