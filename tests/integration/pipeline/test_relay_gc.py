"""Relay log GC in the Spark runner: real MariaDB, the runner's own capture thread with tiny segments, Spark local[2].

GC below a bound deletes exactly the segments wholly below it, what is above still decodes, the runner refuses
older start-ts from then on (also after a restart), and a running query's replay floor caps the bound.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.capture import RelayLog, SchemaHistory, decode_chunk
from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.changefeed.info import ChangefeedInfo
from sparkcdc.changefeed.runner import RunnerContext
from sparkcdc.errors import SparkcdcError
from sparkcdc.model import tso
from sparkcdc.model.events import RowChange
from sparkcdc.pipeline.progress import read_progress
from sparkcdc.pipeline.relay_gc import read_gc_ts, replay_floor
from sparkcdc.pipeline.runner import SparkRunner
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.conftest import wait_relay_caught_up
from tests.integration.pipeline.replay import replay
from tests.support import wait_for

pytestmark = pytest.mark.integration

SEGMENT_BYTES = 2048  # a 600-byte row per transaction: a few transactions per segment


def upstream_uri(db: FreshDatabase) -> str:
    kw = db.puller_kwargs()
    return f"mysql://{kw['user']}:{kw['password']}@{kw['host']}:{kw['port']}"


@pytest.fixture
def runner(spark: Any, fresh_db: FreshDatabase, tmp_path: Path) -> Iterator[SparkRunner]:
    fresh_db.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(700))")
    ctx = RunnerContext(data_dir=tmp_path / "data", upstream_uri=upstream_uri(fresh_db),
                        relay_segment_bytes=SEGMENT_BYTES)  # fmt: skip
    r = SparkRunner(ctx, spark=spark, trigger_seconds=0.2)
    try:
        yield r
    finally:
        r.close()


def insert(db: FreshDatabase, ids: range) -> None:
    for i in ids:  # one transaction each
        db.execute(f"INSERT INTO t VALUES ({i}, REPEAT('x', 600))")


def caught_up(db: FreshDatabase, runner: SparkRunner) -> int:
    """Wait until the runner's relay log holds everything written upstream so far; its resolved ts."""

    def healthy() -> None:
        assert runner.capture is not None and runner.capture.error is None

    wait_relay_caught_up(db, runner.capture_dir, healthy, 60)
    assert runner.capture is not None
    return runner.capture.resolved_ts()


def segments(runner: SparkRunner) -> set[str]:
    return {p.name for p in (runner.capture_dir / "relay").glob("*.seg")}


def inserted_ids(runner: SparkRunner, db: FreshDatabase, after: int) -> list[int]:
    relay = RelayLog(runner.capture_dir)
    history = SchemaHistory.load(runner.capture_dir)
    try:
        events = [e for ref in relay.chunks(after, 1 << 62) for e in decode_chunk(ref, history)]
    finally:
        relay.close()
    return [e.after[0] for e in events if isinstance(e, RowChange) and e.table.schema == db.name and e.after]


def test_gc_deletes_exactly_the_segments_below_the_bound(
    spark: Any, runner: SparkRunner, fresh_db: FreshDatabase
) -> None:
    start = caught_up(fresh_db, runner)
    insert(fresh_db, range(30))
    caught_up(fresh_db, runner)
    relay = RelayLog(runner.capture_dir)
    txns = relay.transactions(start)
    relay.close()
    by_segment: dict[int, list[int]] = {}
    for t in txns:
        by_segment.setdefault(t.segment, []).append(t.commit_ts)
    assert len(by_segment) >= 5, "the workload must span several segments"
    middle = sorted(by_segment)[len(by_segment) // 2]
    bound = min(by_segment[middle]) + 1  # inside the middle segment: it stays, everything wholly below goes
    before = segments(runner)
    expected_gone = {p for p in before if int(p.split(".")[0]) < middle}
    assert expected_gone and runner.oldest_retained_tso() < bound
    ids_above = inserted_ids(runner, fresh_db, min(by_segment[middle]) - 1)  # the middle segment and later
    assert 0 < len(ids_above) < 30 and ids_above[-1] == 29

    runner.gc(bound)

    assert segments(runner) == before - expected_gone
    assert runner.oldest_retained_tso() >= bound and read_gc_ts(runner.capture_dir) == bound
    assert inserted_ids(runner, fresh_db, min(by_segment[middle]) - 1) == ids_above
    runner.gc(bound - 1000)  # the bound never moves back
    assert read_gc_ts(runner.capture_dir) == bound
    insert(fresh_db, range(30, 33))  # capture goes on after the GC
    caught_up(fresh_db, runner)
    assert inserted_ids(runner, fresh_db, bound - 1)[-3:] == [30, 31, 32]
    restarted = SparkRunner(runner.ctx, spark=spark, capture=False)
    assert restarted.oldest_retained_tso() >= bound  # the bound survives a restart
    with pytest.raises(SparkcdcError) as e:  # a start below the bound fails instead of skipping data
        runner.start(ChangefeedInfo(id="too-old", sink_uri="file:///nowhere", start_ts=bound - 1), bound - 1)
    assert e.value.code == "CDC:ErrStartTsBeforeGC"


def test_a_running_query_caps_the_bound_at_its_replay_floor(
    runner: SparkRunner, fresh_db: FreshDatabase, tmp_path: Path
) -> None:
    start = caught_up(fresh_db, runner)
    sink = f"file://{tmp_path / 'sink'}?protocol=canal-json&flush-interval=2s"
    config = ReplicaConfig.from_toml({"filter": {"rules": [f"{fresh_db.name}.*"]}})
    info = ChangefeedInfo(id="gc-floor", sink_uri=sink, start_ts=start, config=config)
    runner.start(info, start)
    insert(fresh_db, range(20))
    end = caught_up(fresh_db, runner)
    status = wait_for(lambda: (s := runner.status("default", "gc-floor")) and s.checkpoint_ts >= end and s, 120,
                      "the changefeed to replicate the inserts", 0.1)  # fmt: skip
    assert status.error is None
    progress_file = runner.ctx.changefeed_dir("default", "gc-floor") / "progress.json"
    # heartbeats keep the resolved ts and so the batches moving: wait for a batch after the first one
    wait_for(lambda: replay_floor(read_progress(progress_file), start) > start, 60, "a later batch", 0.1)
    floor = replay_floor(read_progress(progress_file), start)
    safepoint = tso.compose(tso.physical(end) + 3_600_000)  # far ahead of the query

    runner.gc(safepoint)

    bound = read_gc_ts(runner.capture_dir)  # the query's replay floor when gc ran (its progress only moves on)
    assert floor <= bound <= replay_floor(read_progress(progress_file), start) < safepoint
    assert runner.oldest_retained_tso() == bound
    insert(fresh_db, range(20, 30))
    end = caught_up(fresh_db, runner)
    wait_for(lambda: (s := runner.status("default", "gc-floor")) and s.checkpoint_ts >= end, 120,
             "the changefeed to go on after the GC", 0.1)  # fmt: skip
    runner.stop("default", "gc-floor")
    checkpoint, rows = replay(sink)
    assert checkpoint >= end
    assert sorted(int(k) for k in rows[f"{fresh_db.name}.t"]) == list(range(30))


def test_a_checkpoint_before_this_servers_relay_log_is_refused(runner: SparkRunner) -> None:
    """A changefeed another server ran (ownership moved) cannot resume here from before this relay log began:
    it would skip what only the other server captured."""
    start = runner.bootstrap_ts()
    assert start > 0
    info = ChangefeedInfo(id="moved", sink_uri="file:///nowhere", start_ts=start - 10)
    with pytest.raises(SparkcdcError) as e:
        runner.start(info, start - 10)
    assert e.value.code == "CDC:ErrStartTsBeforeGC"
    assert "before this server's relay log starts" in e.value.message and "--overwrite-checkpoint-ts" in e.value.message
