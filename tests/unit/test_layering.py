"""Dependencies point down (DESIGN.md): the packages that a sink and the consumers share import neither of them, and
the sinks never import the consumers, so no two packages import each other (issue 28, item 4). The bottom layer
(STYLE.md: codec, storage, filter) imports none of the layers above it: what a sink and ``storage/`` both read
lives in a module at the package root (``sink_options.py``, ``uri_query.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sparkcdc

ROOT = Path(sparkcdc.__file__).parent

# package -> packages it must never import (at module level or inside a function)
FORBIDDEN = {
    "mysql": ("capture", "consumer", "sink", "redo", "pipeline", "server", "cli"),  # capture parses its URI here
    "model": ("consumer", "sink", "redo", "mysql", "pipeline", "server", "cli", "storage", "capture"),
    "redo": ("consumer", "sink", "pipeline", "server", "cli"),
    "sink": ("consumer", "pipeline", "server", "cli"),
    "consumer": ("pipeline", "server", "cli"),
    "lake": ("consumer", "sink", "redo", "mysql", "pipeline", "server", "cli"),
    **dict.fromkeys(
        ("codec", "storage", "filter"),
        ("consumer", "sink", "redo", "mysql", "lake", "capture", "schema_registry", "pipeline", "server", "cli"),
    ),
}


def imported(path: Path) -> set[str]:
    """The ``sparkcdc`` packages ``path`` imports (``sparkcdc.x.y`` -> ``x``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "sparkcdc" and len(parts) > 1:
                out.add(parts[1])
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_point_down(package: str) -> None:
    wrong = {
        str(path.relative_to(ROOT)): sorted(imported(path) & set(FORBIDDEN[package]))
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    assert {k: v for k, v in wrong.items() if v} == {}
