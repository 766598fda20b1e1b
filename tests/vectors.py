"""Loads the spec's test vectors from ``../shared/spec/vectors`` so new vectors need no code change."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

VECTOR_DIR = Path(os.environ.get("SPARKCDC_VECTORS", Path(__file__).resolve().parents[2] / "shared/spec/vectors"))


def load(name: str) -> list[dict[str, Any]]:
    """All vectors of ``<name>.json``; fails loudly when the spec directory is missing."""
    path = VECTOR_DIR / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"spec vectors not found at {path}; set SPARKCDC_VECTORS")
    return list(json.loads(path.read_text(encoding="utf-8"))["vectors"])


def params(name: str, prefix: str = "") -> list[Any]:
    """``pytest.param`` per vector whose id starts with ``prefix``, with the vector id as test id."""
    return [pytest.param(v, id=v["id"]) for v in load(name) if v["id"].startswith(prefix)]
