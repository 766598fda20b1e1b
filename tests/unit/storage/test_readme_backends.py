"""The README's table of storage URI parameters and environment variables covers everything the code accepts:
every backend key of every scheme (``BACKEND_PARAMS``), every sink key, and every variable ``external.py`` reads."""

from __future__ import annotations

import re
from pathlib import Path

from sparkcdc.storage import external
from sparkcdc.storage.sink_config import _SINK_PARAMS, BACKEND_PARAMS
from sparkcdc.storage.sink_uri import SCHEMES

README = Path(__file__).resolve().parents[3] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("### Storage URIs: where, and with which credentials")
    return text[start : text.index("\n### ", start + 1)]


def _row(section: str, scheme: str) -> str:
    for line in section.splitlines():
        if line.startswith(f"| `{scheme}:"):
            return line
    raise AssertionError(f"the README's storage table has no row for {scheme}://")


def test_every_backend_parameter_is_documented_in_its_schemes_row() -> None:
    section = _section()
    for scheme, params in BACKEND_PARAMS.items():
        if scheme == "noop":
            continue
        row = _row(section, scheme)
        missing = sorted(p for p in params if f"`{p}`" not in row)
        assert not missing, f"{scheme}: {missing} not in the README's row"
    aliases = [alias for alias, canonical in SCHEMES.items() if canonical != "noop" and alias != canonical]
    assert all(f"`{a}://`" in section for a in aliases), aliases


def test_every_sink_parameter_and_environment_variable_is_documented() -> None:
    section = _section()
    assert not sorted(p for p in _SINK_PARAMS if f"`{p}`" not in section)
    source = Path(external.__file__).read_text(encoding="utf-8")
    read = set(re.findall(r"os\.environ\.get\(\"(\w+)\"", source))
    assert read, "external.py reads no variable: this test would check nothing"
    assert not sorted(v for v in read if f"`{v}`" not in section)
