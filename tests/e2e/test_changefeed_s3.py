"""``cdc server`` (Spark runner) + ``cdc cli changefeed`` against a real MariaDB, s3:// sink on a moto server."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.devtools.mariadb import MariaDB
from tests.e2e.test_changefeed_file import run_changefeed_e2e
from tests.fixtures.mariadb import FreshDatabase
from tests.fixtures.object_stores import add_params, backend_uri

pytestmark = pytest.mark.e2e


def test_changefeed_to_s3(
    fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    uri = add_params(backend_uri("s3", request, "cf-e2e"), protocol="canal-json", worker_count=4, flush_interval="2s")
    run_changefeed_e2e(fresh_db, mariadb, tmp_path, uri, steps=80)
