"""``cdc version``: TiCDC's ``Release Version:`` line, then the runtime versions in place of Go's."""

from __future__ import annotations

import importlib.metadata
import platform

from click.testing import CliRunner

from sparkcdc import __version__
from sparkcdc.cli.main import cli


def test_version_lines() -> None:
    r = CliRunner().invoke(cli, ["version"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        f"Release Version: v{__version__}",
        f"Python Version: {platform.python_version()}",
        f"PySpark Version: {importlib.metadata.version('pyspark')}",
    ]
