"""The poolweb-slurm distribution (bridge/) stands alone: a Slurm controller installs it without
Django or the server, and it carries the gate's script."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from poolweb_slurm import cli, gate_script
from tests.imports import third_party_imports

BRIDGE = Path(__file__).resolve().parents[2] / "bridge" / "poolweb_slurm"
MODULES = sorted(BRIDGE.glob("*.py"))
ALLOWED = {"poolweb_slurm", "poolctl"}  # itself, and the client library the bridge may build on


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_the_bridge_module_imports_no_django(path):
    assert third_party_imports(path, ALLOWED) == []


def test_the_check_sees_the_modules_and_would_catch_django(tmp_path):
    assert BRIDGE / "__init__.py" in MODULES
    bad = tmp_path / "bad.py"
    bad.write_text("from django.conf import settings\nimport poolweb.models\n")
    assert third_party_imports(bad, ALLOWED) == ["django", "poolweb"]


def test_the_package_names_its_gate_script():
    assert gate_script() == BRIDGE / "job_submit.lua"
    assert "function slurm_job_submit(job_desc, part_list, submit_uid)" in gate_script().read_text()


def test_the_command_says_its_version(capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"poolweb-slurm {importlib.metadata.version('poolweb-slurm')}\n"
