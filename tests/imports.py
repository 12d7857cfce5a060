"""What a module imports, read with ast: a module that would fail to import is still read. The
engine's purity test and the two stand-alone distributions' tests (poolctl, poolweb-slurm) use it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def imported_roots(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level module) of every absolute import; relative imports stay in the package."""
    roots = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.append((node.lineno, node.module.split(".")[0]))
    return roots


def third_party_imports(path: Path, allowed: set[str]) -> list[str]:
    """The top-level modules ``path`` imports that are neither the standard library nor ``allowed``."""
    roots = imported_roots(ast.parse(path.read_text(encoding="utf-8")))
    return [root for _, root in roots if root not in sys.stdlib_module_names and root not in allowed]
