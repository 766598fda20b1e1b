"""Stopping a changefeed's query lets its running micro-batch commit instead of aborting it (real MariaDB, relay
log and Spark local[2])."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.pipeline.query import start_query, stop_between_batches
from sparkcdc.pipeline.spec import FeedSpec
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.conftest import PullerThread, wait_for

pytestmark = pytest.mark.integration

_DATA = re.compile(r"CDC(\d+)\.json$")


def unindexed_data_files(sink: Path) -> list[str]:
    """Data files that no CDC.index covers (an aborted batch's leftovers)."""
    out = []
    for f in sink.rglob("CDC*.json"):
        m = _DATA.search(f.name)
        if m is None:
            continue
        index = f.parent / "meta" / "CDC.index"
        indexed = _DATA.search(index.read_text().strip()) if index.exists() else None
        if indexed is None or int(m.group(1)) > int(indexed.group(1)):
            out.append(str(f.relative_to(sink)))
    return out


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
        wait_for(lambda: query.status["isTriggerActive"] and query.lastProgress is None, 60, "first batch", 0.01)
        stop_between_batches(query)
    finally:
        if query.isActive:
            query.stop()
    assert query.exception() is None
    assert json.loads((sink / "metadata").read_bytes())["checkpoint-ts"] >= end
    assert unindexed_data_files(sink) == []
