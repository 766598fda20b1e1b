"""A big transaction streams through the source in bounded parts when the sink allows it (storage, TiCDC's
transaction-atomicity "none"), and whole when it does not."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sparkcdc.model import ColumnInfo, DDLEvent, RowChange, RowOp, TableInfo
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.stage_row import Ddl, Dml
from sparkcdc.pipeline.transform import PART_BYTES, ChunkTransform

COLS = (
    ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True),
    ColumnInfo("v", "varchar", length=20),
)
T = TableInfo("db", "t", 7, COLS, version=100)
U = TableInfo("db", "u", 8, COLS, version=100)
WALL_TS = re.compile(rb'"ts":\d+')


def transform(tmp_path: Path, atomicity: str | None = None) -> ChunkTransform:
    config: dict[str, Any] = {"filter": {"rules": ["db.*"]}}
    if atomicity is not None:
        config["sink"] = {"transaction-atomicity": atomicity}
    return ChunkTransform(FeedSpec(
        changefeed="default/unit", capture_dir=str(tmp_path / "capture"), state_dir=str(tmp_path / "state"),
        sink_uri=f"file://{tmp_path / 'sink'}?protocol=canal-json", config=config, start_ts=100, sink_start_ts=100,
    ))  # fmt: skip


def big_txn(rows: int) -> list[Any]:
    """One transaction writing ``rows`` rows to t with a few rows of u among them, then a DDL."""
    events: list[Any] = [RowChange(200, T, RowOp.INSERT, None, (i, f"v{i}")) for i in range(rows)]
    events[rows // 2 : rows // 2] = [RowChange(200, U, RowOp.INSERT, None, (i, "u")) for i in range(3)]
    events.append(DDLEvent(300, DDLAction.ADD_COLUMN, "ALTER TABLE t ADD COLUMN w INT", "db", "t",
                           T.with_version(300), T))  # fmt: skip
    return events


def test_a_big_transaction_is_encoded_in_parts_that_add_up_to_it(tmp_path: Path) -> None:
    rows = 10_000
    parts = list(transform(tmp_path).rows(big_txn(rows)))
    whole = list(transform(tmp_path / "whole", "table").rows(big_txn(rows)))
    t_parts = [r for r in parts if isinstance(r, Dml) and r.table == "t"]
    per_part = PART_BYTES // 64
    assert [r.nrows for r in t_parts] == [per_part] * (rows // per_part) + [rows % per_part]
    assert len({r.commit_ts for r in t_parts}) == 1  # one transaction's commit-ts
    assert [r.seq for r in parts] == sorted(r.seq for r in parts) and isinstance(parts[-1], Ddl)
    assert [r.info is not None for r in t_parts] == [True] + [False] * (len(t_parts) - 1)  # the table info once
    t_whole = [r for r in whole if isinstance(r, Dml) and r.table == "t"]
    assert len(t_whole) == 1 and t_whole[0].nrows == rows  # transaction-atomicity "table": one payload
    # the same bytes in the same order (but canal-json's "ts", the time of encoding)
    assert WALL_TS.sub(b'"ts":0', b"".join(r.payload for r in t_parts)) == WALL_TS.sub(b'"ts":0', t_whole[0].payload)
    assert [r.nrows for r in parts if isinstance(r, Dml) and r.table == "u"] == [3]


def test_a_writer_task_reading_its_own_rows_writes_them_as_they_come(tmp_path: Path) -> None:
    """With ``writer_tasks`` (no shuffle) the task's rows come in commit order and stream into data files: the
    first files are written before its last rows are even read, so a big transaction is never whole in memory."""
    from dataclasses import replace

    from sparkcdc.pipeline.sink_writer import write_partition

    t = transform(tmp_path)
    rows = list(t.rows(big_txn(20_000)))
    sink = tmp_path / "sink"
    files_before_last: list[int] = []

    def read() -> Any:
        for i, row in enumerate(rows):
            if i == len(rows) - 1:
                files_before_last.append(sum(1 for p in sink.rglob("*.json") if p.parent.name != "meta"))
            yield row

    spec = replace(t.spec, sink_uri=f"file://{sink}?protocol=canal-json&file-size=1048576", writer_tasks=1)
    msg = write_partition(spec, read())
    assert files_before_last[0] >= 1 and len(msg.result) > files_before_last[0]
    assert msg.rows == 20_003 and len(msg.ddls) == 1
    data = b"".join((sink / f.path).read_bytes() for f in msg.result if "/t/" in f.path)
    assert data.count(b'"type":"INSERT"') == 20_000
