from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["delta", "iceberg"])
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A lake sink URI of each format on a temporary directory: the suites run against both."""
    return f"{request.param}://{tmp_path}/lake"
