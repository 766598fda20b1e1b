"""Crash safety: kill -9 of ``cdc server`` (and its Spark JVM) at random moments during a running workload,
restart, continue. The final replay equals the upstream, no non-empty data file was ever overwritten and the
sink's checkpoint never went backwards."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.replay import layout_violations, replay
from tests.integration.pipeline.server import (
    Background,
    CheckpointWatch,
    FileTracker,
    SparkServer,
    Workload,
    now_tso,
)

pytestmark = pytest.mark.e2e

KILLS = 5


def test_kill_9_during_workload(
    fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    rng = random.Random(2026)
    work = Workload(fresh_db, tables=3, seed=11, ddl_every=300)
    work.create()
    sink_uri = f"file://{tmp_path / 'sink'}?protocol=canal-json&worker-count=2&flush-interval=2s"
    storage = ExternalStorage.from_uri(sink_uri)
    watch = CheckpointWatch(storage)
    files = FileTracker(storage)
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    request.addfinalizer(server.kill)  # a failure before the last stop must not leave it running
    cfg = tmp_path / "cf.toml"
    cfg.write_text(f'[filter]\nrules = ["{fresh_db.name}.*"]\n')
    created = server.cli("create", "--sink-uri", sink_uri, "--changefeed-id", "cf-crash", "--config", str(cfg))
    assert created.returncode == 0, created.stderr
    start_ts = server.changefeed("cf-crash")["checkpoint_ts"]
    watch.wait(start_ts + 1, 240)
    bg = Background(work)
    bg.thread.start()
    try:
        for _ in range(KILLS):
            # a random moment: after the checkpoint moved at least once since the (re)start, plus 0..40 polls
            base = watch.poll()
            watch.wait(base + 1, 240, files.poll)
            for _ in range(rng.randint(0, 40)):
                files.poll()
                watch.poll()
            server.kill()
            files.poll()
            watch.poll()
            server.start()
            assert bg.error is None, bg.error
    finally:
        bg.stop.set()
        bg.thread.join(60)
    try:
        assert bg.error is None, bg.error
        end = now_tso(fresh_db)
        watch.wait(end, 300, files.poll)
        assert server.changefeed("cf-crash")["state"] == "normal"
    finally:
        server.stop()
    files.poll()
    assert files.overwritten == []
    assert watch.monotonic, watch.seen
    checkpoint, got = replay(sink_uri)
    assert checkpoint >= end
    want = work.expected()
    assert bg.steps > 50
    for name, rows in want.items():
        assert got.get(name, {}) == rows, name
    assert layout_violations(storage) == []
