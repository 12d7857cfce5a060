"""Python 3.11 to 3.13: the package admits them, and ``make`` finds the first that runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make") or "make"


def test_the_package_admits_python_3_11_to_3_13():
    admitted = SpecifierSet(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"])

    assert [version in admitted for version in ("3.10.9", "3.11.0", "3.12.1", "3.13.0", "3.14.0")] == [
        False, True, True, True, False]


def fake_pythons(folder: Path, works: dict[str, bool]) -> None:
    """``python3.X`` scripts on a PATH: a working one runs this interpreter, a broken one fails like
    a pyenv shim for a version pyenv does not enable."""
    for name, ok in works.items():
        script = folder / name
        script.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n' if ok else "#!/bin/sh\nexit 127\n")
        script.chmod(0o755)


def make(folder: Path, *arguments: str) -> subprocess.CompletedProcess:
    """``make`` as if the virtualenv were out of date, with only ``folder`` on the PATH."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHON"}
    environment["PATH"] = str(folder)
    return subprocess.run([MAKE, "-W", "pyproject.toml", *arguments], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=30, check=False)


def planned(folder: Path, *arguments: str) -> str:
    """The commands ``make`` would run to build the virtualenv."""
    return "\n" + make(folder, "-n", ".venv/.installed", *arguments).stdout


@pytest.mark.parametrize("works, chosen", [
    ({"python3.13": False, "python3.12": True, "python3.11": True}, "python3.12"),
    ({"python3.13": True, "python3.12": True, "python3.11": True}, "python3.13"),
    ({"python3.13": False, "python3.12": False, "python3.11": True}, "python3.11"),
])
def test_make_uses_the_newest_supported_python_that_runs(tmp_path, works, chosen):
    fake_pythons(tmp_path, works)

    assert f"\n{chosen} -m venv .venv\n" in planned(tmp_path)


def test_python_may_be_named(tmp_path):
    assert "\n/opt/py/bin/python3 -m venv .venv\n" in planned(tmp_path, "PYTHON=/opt/py/bin/python3")


def test_make_says_plainly_when_no_supported_python_runs(tmp_path):
    fake_pythons(tmp_path, {"python3.13": False, "python3.12": False, "python3.11": False})

    result = make(tmp_path, ".venv/.installed")

    assert result.returncode != 0
    assert "No Python 3.11, 3.12 or 3.13 found on the PATH" in result.stderr
