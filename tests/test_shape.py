"""Sizes (style "Size, names, comments"): no function over 40 lines and no module over 400 in the
packages of ``SIZED``. Parsed with ast, in the manner of tests/reconcile/test_purity.py; to hold
another package to the sizes, add it to ``SIZED``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIZED = ("reconcile", "poolweb")  # packages, relative to the repository
MAX_FUNCTION_LINES, MAX_MODULE_LINES = 40, 400


def modules(package: str) -> list[Path]:
    """The package's modules; migrations are generated, not written, and are left out."""
    return sorted(path for path in (ROOT / package).rglob("*.py") if "migrations" not in path.parts)


def oversized(source: str) -> list[str]:
    """The module when it is longer than MAX_MODULE_LINES, and every function (or method) longer
    than MAX_FUNCTION_LINES, counted from its ``def`` to its last line, decorators aside."""
    found = []
    if (length := len(source.splitlines())) > MAX_MODULE_LINES:
        found.append(f"the module has {length} lines, more than {MAX_MODULE_LINES}")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if (length := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                found.append(f"line {node.lineno}: {node.name} has {length} lines, more than {MAX_FUNCTION_LINES}")
    return found


@pytest.mark.parametrize("path", [path for package in SIZED for path in modules(package)],
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_the_module_and_its_functions_are_small(path: Path):
    assert oversized(path.read_text(encoding="utf-8")) == []


def test_every_sized_package_has_modules_to_check():
    assert all(len(modules(package)) >= 10 for package in SIZED)


def _function(lines: int, indent: str = "") -> str:
    """A function of exactly ``lines`` lines: its def, then a body."""
    return f"{indent}def f():\n" + f"{indent}    x = 1\n" * (lines - 1)


@pytest.mark.parametrize("source, complaint", [
    (_function(41), "line 1: f has 41 lines, more than 40"),
    ("class C:\n" + _function(41, indent="    "), "line 2: f has 41 lines, more than 40"),  # a method
    ("def outer():\n" + _function(41, indent="    "), "line 2: f has 41 lines, more than 40"),  # nested
    ("async " + _function(41), "line 1: f has 41 lines, more than 40"),
    ("x = 1\n" * 401, "the module has 401 lines, more than 400"),
])
def test_the_check_catches(source: str, complaint: str):
    assert complaint in oversized(source)


@pytest.mark.parametrize("source", [
    _function(40),
    "@decorated\n" + _function(40),  # the decorator line is not the function's
    "x = 1\n" * 400,
])
def test_the_check_accepts(source: str):
    assert oversized(source) == []
