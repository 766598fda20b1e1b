"""A snapshot chunk read on a real MariaDB: where its snapshot sits in the binlog, and a table changed under it."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.capture.snapshot_plan import Chunk
from sparkcdc.capture.snapshot_reader import read_chunk
from sparkcdc.errors import UpstreamError
from sparkcdc.model.events import RowChange
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.capture.test_snapshot_values import _captured

pytestmark = pytest.mark.integration


def _read(db: FreshDatabase, chunk: Chunk, table: Any) -> tuple[list[RowChange], tuple[str, int] | None]:
    rows: list[RowChange] = []
    reader = read_chunk(db.server.connect_kwargs("root"), chunk, table, 7, UTC)
    while True:
        try:
            rows.append(next(reader))
        except StopIteration as stop:
            return rows, stop.value


def _binlog_end(db: FreshDatabase) -> tuple[str, int]:
    file, pos, *_ = db.query("SHOW MASTER STATUS")[0]
    return str(file), int(pos)


def test_a_read_says_where_its_snapshot_is_in_the_binlog(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    inserts = _captured(db, tmp_path, ["CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
                                       "INSERT INTO t VALUES (1, 'a'), (2, 'b')"])  # fmt: skip
    table = inserts[0].table
    chunk = Chunk(0, db.name, "t", table.table_id, ("id",), None, None, 2)
    rows, at = _read(db, chunk, table)
    assert [r.after for r in rows] == [(1, "a"), (2, "b")] and {r.commit_ts for r in rows} == {7}
    assert at == _binlog_end(db)  # nothing else is being written: the snapshot holds everything
    db.execute("INSERT INTO t VALUES (3, 'c')")
    rows, later = _read(db, chunk, table)
    assert len(rows) == 3 and later == _binlog_end(db) and later is not None and later[1] > at[1]


def test_a_column_dropped_during_the_copy_fails_clearly(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    inserts = _captured(db, tmp_path, ["CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
                                       "INSERT INTO t VALUES (1, 'a')"])  # fmt: skip
    table = inserts[0].table
    chunk = Chunk(0, db.name, "t", table.table_id, ("id",), None, None, 1)
    db.execute("ALTER TABLE t DROP COLUMN v")
    with pytest.raises(UpstreamError) as e:
        _read(db, chunk, table)
    assert not e.value.retryable and e.value.code == "CDC:ErrSnapshotTableChanged"
    assert e.value.message.startswith("[CDC:ErrSnapshotTableChanged] snapshot of ")  # the code crosses Spark
    assert "changed while it was being copied" in e.value.message and "re-create the changefeed" in e.value.message
    db.execute("RENAME TABLE t TO t2")
    with pytest.raises(UpstreamError) as e:
        _read(db, chunk, table)
    assert not e.value.retryable and "changed while it was being copied" in e.value.message
