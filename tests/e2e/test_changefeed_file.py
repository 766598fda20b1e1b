"""``cdc server`` (Spark runner, local[2]) + ``cdc cli changefeed`` against a real MariaDB, file:// sink."""

from __future__ import annotations

import stat
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
        assert_private_state(server.data_dir, "cf-e2e")
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


def assert_private_state(data_dir: Path, changefeed: str) -> None:
    """What holds the sink URI and its secrets is this user's only (issue 26, item 6): the data dir 0700, the metadata
    store 0600, the changefeed's state dir 0700 and its spec 0600; Spark's checkpoint holds no copy of the URI, and its
    scratch space is inside the data dir."""

    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    state = data_dir / "changefeeds" / "default" / changefeed
    assert mode(data_dir) == 0o700 and mode(state) == 0o700
    stores = [p for p in data_dir.iterdir() if p.name.startswith("meta.sqlite3")]
    assert stores and {p.name: mode(p) for p in stores} == {p.name: 0o600 for p in stores}
    assert mode(state / "spec.json") == 0o600 and b"protocol=" in (state / "spec.json").read_bytes()
    checkpoint = [p for p in (state / "spark").rglob("*") if p.is_file()]
    assert checkpoint and not [p for p in checkpoint if b"protocol=" in p.read_bytes()]
    scratch = data_dir / "spark-local"  # Spark's block manager files hold the changefeed's rows
    assert mode(scratch) == 0o700 and [p for p in scratch.iterdir() if p.name.startswith("blockmgr-")]


def _healthy(server: SparkServer) -> None:
    state = server.changefeed("cf-e2e")
    assert state["state"] == "normal", state


def test_changefeed_to_local_files(fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path) -> None:
    run_changefeed_e2e(fresh_db, mariadb, tmp_path, f"file://{tmp_path / 'sink'}?protocol=canal-json&worker-count=4"
                       "&flush-interval=2s")
