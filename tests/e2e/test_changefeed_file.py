"""``cdc server`` (Spark runner, local[2]) + ``cdc cli changefeed`` against a real MariaDB, file:// sink."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.replay import layout_violations, replay
from tests.integration.pipeline.server import CheckpointWatch, SparkServer, Workload, now_tso

pytestmark = pytest.mark.e2e


def run_changefeed_e2e(db: FreshDatabase, mariadb: MariaDB, root: Path, sink_uri: str, steps: int = 120) -> None:
    """Create a changefeed, run a mixed workload with DDLs, wait for the checkpoint, replay and compare."""
    work = Workload(db)
    work.create()
    server = SparkServer(root, mariadb.port or 0).start()
    try:
        cfg = root / "cf.toml"
        cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n')
        created = server.cli("create", "--sink-uri", sink_uri, "--changefeed-id", "cf-e2e", "--config", str(cfg))
        assert created.returncode == 0, created.stderr + created.stdout
        assert created.stdout.startswith("Create changefeed successfully!")
        start_ts = server.changefeed("cf-e2e")["checkpoint_ts"]
        watch = CheckpointWatch(ExternalStorage.from_uri(sink_uri))
        watch.wait(start_ts + 1, 180, lambda: _healthy(server))
        for i in range(steps):
            work.step(i)
        end = now_tso(db)
        watch.wait(end, 180, lambda: _healthy(server))
        listed = server.cli("list")
        assert listed.returncode == 0 and '"cf-e2e"' in listed.stdout
    finally:
        server.stop()
    checkpoint, got = replay(sink_uri)
    assert checkpoint >= end
    assert watch.monotonic and len(watch.seen) >= 2
    want = work.expected()
    for name, rows in want.items():
        assert got.get(name, {}) == rows, name
    assert layout_violations(ExternalStorage.from_uri(sink_uri)) == []


def _healthy(server: SparkServer) -> None:
    state = server.changefeed("cf-e2e")
    assert state["state"] == "normal", state


def test_changefeed_to_local_files(fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path) -> None:
    run_changefeed_e2e(fresh_db, mariadb, tmp_path, f"file://{tmp_path / 'sink'}?protocol=canal-json&worker-count=4")
