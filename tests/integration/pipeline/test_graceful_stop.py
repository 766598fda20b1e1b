"""Stopping a changefeed's query lets its running micro-batch commit instead of aborting it (real MariaDB, relay
log and Spark local[2])."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.pipeline.query import start_query, stop_between_batches
from sparkcdc.pipeline.spec import FeedSpec
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.conftest import PullerThread
from tests.integration.pipeline.replay import unindexed_data_files
from tests.support import wait_for

pytestmark = pytest.mark.integration


def test_stop_waits_for_the_running_batch(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, tmp_path: Path
) -> None:
    db = fresh_db
    db.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))")
    start = puller_thread.caught_up()
    db.execute("INSERT INTO t SELECT seq, CONCAT('value-', seq) FROM seq_1_to_60000")
    end = puller_thread.caught_up()
    sink = tmp_path / "sink"
    spec = FeedSpec(
        changefeed="default/stop",
        capture_dir=str(puller_thread.data_dir),
        state_dir=str(tmp_path / "state"),
        sink_uri=f"file://{sink}?protocol=canal-json&worker-count=2",
        config={"filter": {"rules": [f"{db.name}.*"]}},
        start_ts=start,
        sink_start_ts=start,
    )
    query = start_query(spark, spec, trigger_seconds=0.5)
    try:
        # the first batch holds the whole insert; stop while it runs
        wait_for(lambda: query.status["message"] == "Processing new data", 60, "first batch", 0.01)
        stop_between_batches(query, spec)
    finally:
        if query.isActive:
            query.stop()
    assert query.exception() is None
    assert json.loads((sink / "metadata").read_bytes())["checkpoint-ts"] >= end
    assert unindexed_data_files(sink) == []


def test_stop_under_a_backlog_ends_after_the_running_batch(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, tmp_path: Path
) -> None:
    """Behind a backlog the next batch starts the moment the last one ends, so the query is never between
    batches: the drained source plans no new one, and the stop comes after the running batch commits."""
    db = fresh_db
    db.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))")
    start = puller_thread.caught_up()
    for k in range(80):  # 80 transactions; max_batch_bytes=1 makes each its own batch, longer than the trigger
        db.execute(f"INSERT INTO t SELECT {k * 100} + seq, 'v' FROM seq_1_to_100")
    end = puller_thread.caught_up()
    sink = tmp_path / "sink"
    spec = FeedSpec(
        changefeed="default/backlog",
        capture_dir=str(puller_thread.data_dir),
        state_dir=str(tmp_path / "state"),
        sink_uri=f"file://{sink}?protocol=canal-json&worker-count=2",
        config={"filter": {"rules": [f"{db.name}.*"]}},
        start_ts=start,
        sink_start_ts=start,
        max_batch_bytes=1,
    )
    spec.drain_path.parent.mkdir(parents=True)
    spec.drain_path.touch()  # left by an unfinished stop: a new run must not start drained
    query = start_query(spark, spec, trigger_seconds=0.1)
    try:
        wait_for(lambda: query.lastProgress is not None and query.status["isTriggerActive"], 120, "second batch", 0.01)
        began = time.monotonic()
        stop_between_batches(query, spec, timeout=60)
        took = time.monotonic() - began
    finally:
        if query.isActive:
            query.stop()
    assert query.exception() is None
    assert took < 30, took
    checkpoint = json.loads((sink / "metadata").read_bytes())["checkpoint-ts"]
    assert start < checkpoint < end  # stopped between two batches of the backlog, not after catching up
    assert unindexed_data_files(sink) == []
    assert not spec.drain_path.exists()
