"""``cdc server`` relay log GC end to end (Spark runner, real MariaDB, tiny gc-ttl, segments and GC interval).

A changefeed paused longer than gc-ttl stops holding the relay log: the server collects past its checkpoint and
refuses to resume it with one ``CDC:ErrStartTsBeforeGC`` line, while a running changefeed keeps every row.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.pipeline.relay_gc import read_gc_ts
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.replay import replay
from tests.integration.pipeline.server import CheckpointWatch, SparkServer, now_tso
from tests.support import wait_for

pytestmark = pytest.mark.e2e

GC_ARGS = ("--gc-ttl", "1", "--gc-interval", "0.5", "--gc-life-time", "0", "--relay-segment-bytes", "4096")


def insert(db: FreshDatabase, ids: range) -> None:
    for i in ids:  # one transaction each, 600 bytes: several segments
        db.execute(f"INSERT INTO t VALUES ({i}, REPEAT('x', 600))")


def test_paused_past_gc_ttl_cannot_resume_while_running_keeps_its_data(
    fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path
) -> None:
    db = fresh_db
    db.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(700))")
    server = SparkServer(tmp_path, mariadb.port or 0, args=GC_ARGS).start()
    relay = server.data_dir / "capture" / "relay"
    try:
        cfg = tmp_path / "cf.toml"
        cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n')
        sinks = {cf: f"file://{tmp_path / cf}?protocol=canal-json&flush-interval=2s" for cf in ("keep", "old")}
        for cf, uri in sinks.items():  # one by one: queries starting at once race (DATA_SOURCE_ALREADY_EXISTS)
            r = server.cli("create", "--sink-uri", uri, "--changefeed-id", cf, "--config", str(cfg))
            assert r.returncode == 0, r.stderr + r.stdout
            CheckpointWatch(ExternalStorage.from_uri(uri)).wait(now_tso(db), 120)
        keep = CheckpointWatch(ExternalStorage.from_uri(sinks["keep"]))
        r = server.cli("pause", "--changefeed-id", "old")
        assert r.returncode == 0, r.stderr
        paused_at = server.changefeed("old")["checkpoint_ts"]

        insert(db, range(40))
        keep.wait(now_tso(db), 120)
        # the paused changefeed expires after 1 s; the next safepoint passes its checkpoint and segments go
        wait_for(lambda: read_gc_ts(server.data_dir / "capture") > paused_at, 60, "the GC to pass 'old'", 0.2)
        wait_for(lambda: not (relay / "000000000001.seg").exists(), 30, "the first segment to be collected", 0.2)

        r = server.cli("resume", "--changefeed-id", "old", "--no-confirm")
        assert r.returncode == 1, (r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in r.stderr, r.stderr
        assert "CDC:ErrStartTsBeforeGC" in lines[0] and "gc-ttl" in lines[0]
        assert server.changefeed("old")["state"] == "stopped"

        insert(db, range(40, 50))
        end = now_tso(db)
        keep.wait(end, 120)
        assert server.changefeed("keep")["state"] == "normal"
    finally:
        server.stop()
    checkpoint, rows = replay(sinks["keep"])
    assert checkpoint >= end
    assert sorted(int(k) for k in rows[f"{db.name}.t"]) == list(range(50))
