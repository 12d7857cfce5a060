"""``pip install ./client`` into a fresh virtual environment: poolctl works there, and Django is
not pulled in (a laptop or a training container needs only the client). Needs the package index
pip is configured with (for websockets and the build backend)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CLIENT = Path(__file__).resolve().parents[2] / "client"


def test_the_client_installs_alone_without_django(tmp_path):
    source = tmp_path / "client"
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    environment = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(environment)], check=True)
    python = environment / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(source)], capture_output=True,
                             text=True, timeout=300)
    assert install.returncode == 0, install.stderr

    django = subprocess.run([str(python), "-c", "import django"], capture_output=True, text=True)
    assert django.returncode != 0 and "No module named 'django'" in django.stderr
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True)
    installed = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert "poolctl" in installed and "websockets" in installed and not installed & {"django", "poolweb"}

    help_text = subprocess.run([str(environment / "bin" / "poolctl"), "--help"], capture_output=True, text=True)
    assert help_text.returncode == 0 and "exit codes:" in help_text.stdout and "poolctl run" in help_text.stdout
    api = subprocess.run([str(python), "-c", "from poolctl import Client, Preempted; print(Client.allocation)"],
                         capture_output=True, text=True)
    assert api.returncode == 0, api.stderr
