"""The pipeline's executor and driver pieces without Spark, on real local files: transform, write, commit."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sparkcdc.changefeed.runner import SinkTotals
from sparkcdc.model import ColumnInfo, DDLEvent, RowChange, RowOp, TableInfo
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.pipeline.progress import read_progress
from sparkcdc.pipeline.sink_writer import commit_batch, write_partition
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.stage_row import Ddl, Dml, Mark
from sparkcdc.pipeline.transform import ChunkTransform
from sparkcdc.sink.base import Payload

COLS = (
    ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True),
    ColumnInfo("v", "varchar", length=20),
)
T = TableInfo("db", "t", 7, COLS, version=100)
OTHER = TableInfo("skip", "x", 8, COLS, version=100)


def spec(tmp_path: Path) -> FeedSpec:
    return FeedSpec(
        changefeed="default/unit",
        capture_dir=str(tmp_path / "capture"),
        state_dir=str(tmp_path / "state"),
        sink_uri=f"file://{tmp_path / 'sink'}?protocol=canal-json&worker-count=4",
        config={"filter": {"rules": ["db.*"]}},
        start_ts=100,
        sink_start_ts=100,
    )


def test_transform_filters_splits_and_orders(tmp_path: Path) -> None:
    t2 = T.with_version(300)
    events = [
        RowChange(200, T, RowOp.INSERT, None, (1, "a")),
        RowChange(200, OTHER, RowOp.INSERT, None, (1, "a")),  # filtered out by the rule
        RowChange(250, T, RowOp.UPDATE, (1, "a"), (2, "a")),  # key change: DELETE + INSERT
        DDLEvent(300, DDLAction.ADD_COLUMN, "ALTER TABLE t ADD COLUMN w INT", "db", "t", t2, T),
    ]
    rows = list(ChunkTransform(spec(tmp_path)).rows(events))
    dml = [r for r in rows if isinstance(r, Dml)]
    assert [(type(r), r.commit_ts) for r in rows] == [(Dml, 200), (Dml, 250), (Ddl, 300)]
    assert {r.schema for r in dml} == {"db"}
    assert [r.seq for r in rows] == sorted(r.seq for r in rows)  # seq increases
    split = dml[1].payload.decode()
    assert split.index('"DELETE"') < split.index('"INSERT"') and dml[1].nrows == 2
    assert dml[0].info is not None and dml[1].info is None  # table info sent once per chunk


class SplitRoutes:
    """The file sink's encoder, but each row on route ``id % 2``: one table's payloads on two routes (two writer
    tasks), as Kafka sends a table's partitions to several writers."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def encode(self, rows: Sequence[RowChange]) -> Iterator[Payload]:
        for row in rows:
            assert row.after is not None
            for p in self.inner.encode([row]):
                yield dataclasses.replace(p, route=row.after[0] % 2)


def test_table_info_reaches_every_route_of_a_table(tmp_path: Path) -> None:
    s = spec(tmp_path)
    transform = ChunkTransform(s)
    transform.encoder = SplitRoutes(transform.encoder)
    events = [RowChange(200 + i, T, RowOp.INSERT, None, (i, "a")) for i in range(5)]
    rows = list(transform.rows(events))
    for route in (0, 1):
        mine = [r for r in rows if isinstance(r, Dml) and r.route == route]
        # the writer task of this route gets the table's definition with its first row, and once only
        assert [r.info is not None for r in mine] == [True] + [False] * (len(mine) - 1), route
        assert write_partition(s, iter(mine)).result is not None


def test_commit_publishes_index_ddl_then_checkpoint_and_never_goes_back(tmp_path: Path) -> None:
    s = spec(tmp_path)
    transform = ChunkTransform(s)
    t2 = T.with_version(300)
    events = [
        RowChange(200, T, RowOp.INSERT, None, (1, "a")),
        DDLEvent(300, DDLAction.ADD_COLUMN, "ALTER TABLE t ADD COLUMN w INT", "db", "t", t2, T),
    ]
    planned = time.time_ns() // 1_000_000 - 2000  # the batch was planned 2 s ago
    rows = [*transform.rows(events), Mark(100, 300, planned)]
    msg = write_partition(s, iter(rows))
    assert len(msg.result) == 1 and msg.mark == (100, 300, planned) and len(msg.ddls) == 1
    first = rows[0]
    assert isinstance(first, Dml) and msg.rows == 1 and msg.size == len(first.payload)  # the sink got it: /metrics
    sink = tmp_path / "sink"
    assert not (sink / "metadata").exists()  # executors never publish
    assert commit_batch(s, [msg], 0) == 300
    assert json.loads((sink / "metadata").read_bytes()) == {"checkpoint-ts": 300}
    data = Path(msg.result[0].path)
    index = sink / data.parent / "meta" / "CDC.index"
    assert index.read_text() == data.name + "\n"
    assert (sink / "db/t/meta").is_dir() and any("schema_300_" in p.name for p in (sink / "db/t/meta").iterdir())
    progress = read_progress(Path(s.state_dir) / "progress.json")
    assert progress is not None and progress.checkpoint_ts == 300
    assert progress.batch_start_ts == 100  # Spark may replay this batch until it records it: the relay GC floor
    assert progress.totals == SinkTotals(rows=1, size=msg.size, batches=1, last_synced_ts=200)
    assert progress.last is not None and progress.last.rows == 1 and 2.0 <= progress.last.batch_seconds < 60
    # a replayed older batch (restart before Spark recorded its commit) must not move the checkpoint back
    old = write_partition(s, iter([Mark(100, 250, planned)]))
    assert commit_batch(s, [old], 1) is None
    assert json.loads((sink / "metadata").read_bytes()) == {"checkpoint-ts": 300}
    again = read_progress(Path(s.state_dir) / "progress.json")
    assert again is not None and again.totals == progress.totals  # nor is it counted again
