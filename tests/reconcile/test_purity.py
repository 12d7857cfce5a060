"""The engine is pure Python (decision 1): it imports only the standard library and itself, and
has no clock and no I/O. Parsed with ast, so a module that would fail to import is still read."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.imports import imported_roots

ENGINE = Path(__file__).resolve().parents[2] / "reconcile"
MODULES = sorted(ENGINE.rglob("*.py"))
FORBIDDEN_ROOTS = {"django", "poolweb"}
# name → why; a call of any of these, or an attribute chain ending in one, is refused.
FORBIDDEN_CALLS = {
    "time.time": "a clock", "time.time_ns": "a clock", "time.monotonic": "a clock", "time.monotonic_ns": "a clock",
    "time.perf_counter": "a clock", "time.sleep": "a clock",
    "datetime.now": "a clock", "datetime.utcnow": "a clock", "datetime.today": "a clock", "date.today": "a clock",
    "open": "I/O", "print": "I/O", "input": "I/O", "os.environ": "the environment", "os.getenv": "the environment",
}
FORBIDDEN_MODULES = {"socket": "I/O", "subprocess": "I/O", "urllib": "I/O", "http": "I/O", "logging": "I/O"}


def dotted(node: ast.AST) -> str | None:
    """``datetime.datetime.now`` for the expression ``datetime.datetime.now``; None if not a name chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def impurities(source: str) -> list[str]:
    """Every import outside the standard library and every clock or I/O use in ``source``."""
    tree = ast.parse(source)
    found = []
    for line, root in imported_roots(tree):
        if root in FORBIDDEN_ROOTS or root not in sys.stdlib_module_names:
            found.append(f"line {line}: imports {root}, which is not the standard library")
        elif root in FORBIDDEN_MODULES:
            found.append(f"line {line}: imports {root} ({FORBIDDEN_MODULES[root]})")
    for line, name in used_names(tree):
        for banned, why in FORBIDDEN_CALLS.items():
            # Builtins only as bare names (``self.print`` is a method); dotted ones also at the
            # end of a longer chain (``datetime.datetime.now``).
            if name == banned or ("." in banned and name.endswith("." + banned)):
                found.append(f"line {line}: uses {name} ({why})")
    return found


def used_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, dotted name) of every name chain, and of every ``from x import y`` as ``x.y``."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, (ast.Attribute, ast.Name)) and (name := dotted(node)) is not None:
            names.append((node.lineno, name))
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ENGINE.parent)))
def test_the_engine_module_is_pure(path: Path):
    assert impurities(path.read_text(encoding="utf-8")) == []


def test_the_engine_has_modules_to_check():
    assert len(MODULES) >= 10 and ENGINE / "planner.py" in MODULES


@pytest.mark.parametrize("source, complaint", [
    ("import django.db", "imports django"),
    ("from poolweb.models import Request", "imports poolweb"),
    ("import yaml", "imports yaml"),
    ("from hypothesis import given", "imports hypothesis"),
    ("import socket", "imports socket (I/O)"),
    ("import time\nt = time.time()", "uses time.time (a clock)"),
    ("import time\nt = time.monotonic()", "uses time.monotonic (a clock)"),
    ("from datetime import datetime\nnow = datetime.now()", "uses datetime.now (a clock)"),
    ("import datetime\nnow = datetime.datetime.utcnow()", "uses datetime.datetime.utcnow (a clock)"),
    ("from datetime import date\nd = date.today()", "uses date.today (a clock)"),
    ("data = open('x').read()", "uses open (I/O)"),
    ("print('hello')", "uses print (I/O)"),
    ("import os\nurl = os.environ['DATABASE_URL']", "uses os.environ (the environment)"),
    ("now = datetime.now", "uses datetime.now (a clock)"),  # a reference is as bad as a call
    ("from time import monotonic", "uses time.monotonic (a clock)"),
    ("from os import environ", "uses os.environ (the environment)"),
])
def test_the_check_catches(source: str, complaint: str):
    assert any(complaint in problem for problem in impurities(source)), impurities(source)


@pytest.mark.parametrize("source", [
    "from .model import Request",
    "from . import lifecycle",
    "from collections import defaultdict\nimport heapq",
    "from datetime import datetime, timedelta\nlater = now + timedelta(seconds=30)",
    "from decimal import Decimal",
    "class Ledger:\n    def open_holds(self): return self.holds",
    "def show(self): return self.print()",
])
def test_the_check_accepts(source: str):
    assert impurities(source) == []
