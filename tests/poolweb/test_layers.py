"""Imports inside poolweb/ go one way (decision 21): the entry points (api, realtime, console,
management, admin) → services → selectors → the base (models, sql, env, ports) and reconcile;
never back up, and the entry points never into each other. Parsed with ast, like the engine's
purity test, so a module that would fail to import is still read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "poolweb"
# Layer of each part of poolweb/, lowest first; a module may import its own part or a lower layer.
LAYERS = {
    "env": 0, "ports": 0, "apps": 0, "logs": 0, "collector": 0, "addresses": 0, "private_files": 0, "json_input": 0,
    "django_internals": 0, "instruments": 0,
    "directory_config": 0.5,  # reads env for settings
    "settings": 1, "models": 1, "migrations": 1, "sqlite": 1,
    "sql": 2,
    "selectors": 3,
    "services": 4,
    "api": 5, "realtime": 5, "console": 5, "management": 5, "admin": 5, "accounts": 5, "content_policy": 5,
    "metrics": 5, "directory": 5,
    "urls": 6, "asgi": 6, "wsgi": 6, "error_views": 6, "http_protocol": 6,
}
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


def part(module: str) -> str:
    """``poolweb.api.config`` → ``api``."""
    return module.split(".")[1]


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def poolweb_imports(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """(line, module) of every import of another poolweb module, relative ones resolved."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("poolweb.")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(module.split(".")[:-node.level] + ([base] if base else []))
            if base == "poolweb":
                found += [(node.lineno, f"poolweb.{alias.name}") for alias in node.names]
            elif base.startswith("poolweb."):
                found.append((node.lineno, base))
    return found


def upward(source: str, module: str) -> list[str]:
    """Every import in ``source`` (the text of ``module``) that goes up or sideways."""
    here = part(module)
    found = []
    for line, target in poolweb_imports(ast.parse(source), module):
        there = part(target)
        if there != here and LAYERS[there] >= LAYERS[here]:
            found.append(f"line {line}: {module} ({here}) imports {target} ({there})")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_one_way(path):
    assert upward(path.read_text(), module_name(path)) == []


def test_every_part_of_poolweb_has_a_layer():
    parts = {part(module_name(path)) for path in MODULES}
    assert parts <= LAYERS.keys(), parts - LAYERS.keys()


@pytest.mark.parametrize("source, module, expected", [
    ("from poolweb.api.representations import request_data", "poolweb.services.events",
     ["line 1: poolweb.services.events (services) imports poolweb.api.representations (api)"]),
    ("from poolweb.services.state import live_config", "poolweb.selectors.live",
     ["line 1: poolweb.selectors.live (selectors) imports poolweb.services.state (services)"]),
    ("from poolweb.api.auth import token_issue", "poolweb.realtime.auth",
     ["line 1: poolweb.realtime.auth (realtime) imports poolweb.api.auth (api)"]),
    ("from ..services import events", "poolweb.selectors.live",
     ["line 1: poolweb.selectors.live (selectors) imports poolweb.services (services)"]),
    ("from poolweb.selectors.live import pool_states\nfrom . import payloads", "poolweb.services.events", []),
], ids=["service to api", "selector to service", "entry point to entry point", "relative", "downward"])
def test_the_check_finds_an_import_that_goes_up(source, module, expected):
    assert upward(source, module) == expected
