"""A snapshot chunk read on a real MariaDB: where its snapshot sits in the binlog, and a table changed under it."""

from __future__ import annotations

from datetime import UTC
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pytest

from sparkcdc.capture import snapshot_reader
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


def test_a_read_after_a_ddl_reads_the_start_ts_columns_exactly_as_they_are_now(
    fresh_db: FreshDatabase, tmp_path: Path
) -> None:
    """A charset, fsp or precision changed since start-ts: the copy's values are the upstream's now, not its bytes
    read as the column was (latin1 bytes decoded as utf8mb4, fractions cut)."""
    db = fresh_db
    inserts = _captured(db, tmp_path, ["CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10), ts TIMESTAMP NULL, "
                                       "amount DECIMAL(6,2)) DEFAULT CHARSET=utf8mb4",
                                       "INSERT INTO t VALUES (1, 'caf\u00e9', '2024-01-02 03:04:05', 1)"])  # fmt: skip
    table = inserts[0].table
    db.execute(
        "SET SESSION time_zone = '+00:00'",
        "ALTER TABLE t CONVERT TO CHARACTER SET latin1",
        "ALTER TABLE t MODIFY ts TIMESTAMP(3) NULL, MODIFY amount DECIMAL(10,4), ADD COLUMN region VARCHAR(8)",
        "UPDATE t SET ts = '2024-01-02 03:04:05.250', name = 'na\u00efve', region = 'apac'",
    )
    rows, _ = _read(db, Chunk(0, db.name, "t", table.table_id, ("id",), None, None, 1), table)
    assert [r.after for r in rows] == [(1, "na\u00efve", "2024-01-02 03:04:05.250", Decimal("1.0000"))]
    assert rows[0].table is table  # the copy carries the columns of start-ts


def test_a_column_that_now_holds_another_kind_of_value_fails_clearly(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    inserts = _captured(db, tmp_path, ["CREATE TABLE t (id INT PRIMARY KEY, amount DECIMAL(6,2))",
                                       "INSERT INTO t VALUES (1, 1.5)"])  # fmt: skip
    table = inserts[0].table
    db.execute("ALTER TABLE t MODIFY amount VARCHAR(20)", "UPDATE t SET amount = 'n/a'")
    with pytest.raises(UpstreamError) as e:
        _read(db, Chunk(0, db.name, "t", table.table_id, ("id",), None, None, 1), table)
    assert not e.value.retryable and e.value.code == "CDC:ErrSnapshotTableChanged"
    assert f"snapshot of {db.name}.t: the table changed while it was being copied (column 'amount' changed from " \
           "DECIMAL to VARCHAR)" in e.value.message  # fmt: skip


def test_a_table_rebuilt_after_the_snapshot_began_is_read_again(
    fresh_db: FreshDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """InnoDB refuses a consistent read of a table a DDL rebuilt after the snapshot began (1412): the read starts
    again with a new snapshot. The DDL is run right after the first snapshot is taken, before the table is opened."""
    db = fresh_db
    inserts = _captured(db, tmp_path, ["CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
                                       "INSERT INTO t VALUES (1, 'a'), (2, 'b')"])  # fmt: skip
    table = inserts[0].table
    begin = snapshot_reader._begin
    began: list[Any] = []

    def begin_then_rebuild(*args: Any) -> Any:
        at = begin(*args)
        if not began:
            other = pymysql.connect(**db.server.connect_kwargs("root", autocommit=True))
            with other.cursor() as cur:
                cur.execute(f"ALTER TABLE `{db.name}`.t MODIFY v VARCHAR(20), FORCE")
            other.close()
        began.append(at)
        return at

    monkeypatch.setattr(snapshot_reader, "_begin", begin_then_rebuild)
    rows, at = _read(db, Chunk(0, db.name, "t", table.table_id, ("id",), None, None, 2), table)
    assert [r.after for r in rows] == [(1, "a"), (2, "b")]
    assert len(began) == 2 and at == began[1] == _binlog_end(db)  # the second snapshot is after the DDL
