"""MysqlApplier and `check` against real MariaDB servers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from sparkcdc.consumer.check import compare
from sparkcdc.errors import SparkcdcError
from sparkcdc.model import ColumnInfo, DDLAction, RowChange, RowOp, TableInfo
from sparkcdc.mysql.applier import Checkpoint, MysqlApplier
from sparkcdc.mysql.target import MysqlTarget
from tests.integration.consumer.servers import run_sql

pytestmark = pytest.mark.integration

CREATE = (
    "CREATE TABLE {db}.t (id INT PRIMARY KEY, u BIGINT UNSIGNED, f FLOAT, d DOUBLE, dec1 DECIMAL(10,2), "
    "dt DATETIME(3), ts TIMESTAMP(6) NULL, tm TIME, y YEAR, b BIT(10), e ENUM('a','b','c'), s SET('x','y','z'), "
    "j JSON, v VARCHAR(20), bl BLOB, bin BINARY(4), z DATE, uk INT, UNIQUE KEY(uk))"
)

TABLE = TableInfo(
    "appdb",
    "t",
    1,
    (
        ColumnInfo("id", "int", primary_key=True, handle_key=True, nullable=False),
        ColumnInfo("u", "bigint", unsigned=True),
        ColumnInfo("f", "float"),
        ColumnInfo("d", "double"),
        ColumnInfo("dec1", "decimal", length=10, decimal=2),
        ColumnInfo("dt", "datetime", decimal=3),
        ColumnInfo("ts", "timestamp", decimal=6),
        ColumnInfo("tm", "time"),
        ColumnInfo("y", "year"),
        ColumnInfo("b", "bit", length=10),
        ColumnInfo("e", "enum", elements=("a", "b", "c")),
        ColumnInfo("s", "set", elements=("x", "y", "z")),
        ColumnInfo("j", "json"),
        ColumnInfo("v", "varchar", length=20),
        ColumnInfo("bl", "blob"),
        ColumnInfo("bin", "binary", length=4),
        ColumnInfo("z", "date"),
        ColumnInfo("uk", "int", unique_key=True),
    ),
)

ROW1 = (
    1,
    2**64 - 1,
    0.10000000149011612,
    1e300,
    Decimal("-12.50"),
    "2024-02-29 23:59:59.123",
    "2024-01-01 00:00:00.000001",
    "-838:59:59",
    2155,
    1023,
    2,
    5,
    '{"a": [1, null]}',
    'it\'s \\ "q"\n',
    b"\x00\xff'\\",
    b"ab\x00\x00",
    "0000-00-00",
    7,
)
ROW2 = (2, None, None, None, None, None, None, None, None, None, None, None, None, "", b"", None, None, 8)


def _ins(ts: int, row: tuple[object, ...]) -> RowChange:
    return RowChange(ts, TABLE, RowOp.INSERT, None, row)


def _upd(ts: int, before: tuple[object, ...], after: tuple[object, ...]) -> RowChange:
    return RowChange(ts, TABLE, RowOp.UPDATE, before, after)


def _del(ts: int, row: tuple[object, ...]) -> RowChange:
    return RowChange(ts, TABLE, RowOp.DELETE, row, None)


@pytest.fixture()
def fresh(source: MysqlTarget, target: MysqlTarget) -> None:
    for t in (source, target):
        run_sql(
            t,
            "DROP DATABASE IF EXISTS appdb",
            "CREATE DATABASE appdb",
            CREATE.format(db="appdb"),
            "DROP DATABASE IF EXISTS sparkcdc_consumer",
        )


def test_apply_all_types_and_checksum_matches(fresh: None, source: MysqlTarget, target: MysqlTarget) -> None:
    # the source gets the same logical rows through plain SQL, the target through the applier
    run_sql(
        source,
        "SET time_zone='+00:00'",
        "INSERT INTO appdb.t VALUES (1, 18446744073709551615, 0.1, 1e300, -12.50, '2024-02-29 23:59:59.123', "
        "'2024-01-01 00:00:00.000001', '-838:59:59', 2155, 1023, 'b', 'x,z', '{\"a\": [1, null]}', "
        "'it''s \\\\ \"q\"\\n', 0x00ff275c, 'ab', '0000-00-00', 7)",
        "INSERT INTO appdb.t (id, v, bl, uk) VALUES (2, '', '', 8)",
    )
    applier = MysqlApplier(target, time_zone="UTC")
    cp = Checkpoint("appdb", "t", 0, 5, "", 1, 3, 300)
    stats = applier.apply(
        [_ins(100, ROW1), _ins(200, (3, *ROW2[1:-1], 9)), _ins(300, ROW2), _del(300, (3, *ROW2[1:]))], cp
    )
    assert (stats.upserts, stats.deletes) == (2, 1)
    assert applier.load_checkpoints()[cp.key] == cp
    results = compare(source, target, [("appdb", "t")])
    assert [r.matches for r in results] == [True], results
    assert results[0].source is not None and results[0].source.rows == 2
    # a single different value (NULL vs empty string) is detected
    run_sql(target, "UPDATE appdb.t SET v=NULL WHERE id=2")
    assert not compare(source, target, [("appdb", "t")])[0].matches
    applier.close()


def test_updates_key_change_and_unique_conflicts_are_idempotent(fresh: None, target: MysqlTarget) -> None:
    applier = MysqlApplier(target)
    a = (10, *ROW2[1:-1], 1)
    b = (11, *ROW2[1:-1], 2)
    batch = [
        _ins(1, a),
        _ins(1, b),
        _upd(2, a, (12, *a[1:])),  # key change 10 -> 12
        _del(3, b),  # frees uk=2
        _ins(4, (13, *ROW2[1:-1], 2)),  # takes uk=2
        _upd(5, (13, *ROW2[1:-1], 2), (13, *ROW2[1:-1], 3)),
    ]
    cp = Checkpoint("appdb", "t", 0, 1, "", 1, len(batch), 5)
    for _ in range(2):  # replaying the same batch changes nothing
        applier.apply(batch, cp)
        rows = run_sql(target, "SELECT id, uk FROM appdb.t ORDER BY id")
        assert [tuple(r) for r in rows] == [(12, 1), (13, 3)]
    applier.close()


def test_failed_batch_leaves_checkpoint_and_rows_untouched(fresh: None, target: MysqlTarget) -> None:
    applier = MysqlApplier(target)
    first = Checkpoint("appdb", "t", 0, 1, "", 1, 1, 1)
    applier.apply([_ins(1, (1, *ROW2[1:-1], 1))], first)
    bad_table = TableInfo("appdb", "missing", 2, TABLE.columns)
    with pytest.raises(SparkcdcError, match=r"appdb\.t"):
        applier.apply(
            [_ins(2, (2, *ROW2[1:-1], 2)), RowChange(2, bad_table, RowOp.INSERT, None, ROW2)],
            first.advanced(row_offset=3, commit_ts=2),
        )
    assert applier.load_checkpoints()[first.key] == first
    assert run_sql(target, "SELECT COUNT(*) FROM appdb.t")[0][0] == 1
    applier.close()


def test_ddl_pending_then_replayed(fresh: None, target: MysqlTarget) -> None:
    applier = MysqlApplier(target)
    cp = Checkpoint("appdb", "t", -1, 50)
    assert applier.execute_ddl("appdb", "ALTER TABLE t ADD COLUMN extra INT", DDLAction.ADD_COLUMN, cp, replay=False)
    # running it again is ignorable (duplicate column), and a replayed rename of a gone table too
    assert not applier.execute_ddl(
        "appdb", "ALTER TABLE t ADD COLUMN extra INT", DDLAction.ADD_COLUMN, cp, replay=False
    )
    assert not applier.execute_ddl("appdb", "RENAME TABLE gone TO t2", DDLAction.RENAME_TABLE, cp, replay=True)
    with pytest.raises(SparkcdcError, match="RENAME TABLE gone"):
        applier.execute_ddl("appdb", "RENAME TABLE gone TO t2", DDLAction.RENAME_TABLE, cp, replay=False)
    got = applier.load_checkpoints()[cp.key]
    assert got.table_version == 50
    applier.close()


def test_check_reports_missing_table_and_column_difference(
    fresh: None, source: MysqlTarget, target: MysqlTarget
) -> None:
    run_sql(source, "CREATE TABLE appdb.only_src (id INT PRIMARY KEY)")
    run_sql(target, "ALTER TABLE appdb.t DROP COLUMN uk")
    results = {r.table: r for r in compare(source, target, [("appdb", "*")])}
    assert results["only_src"].note == "missing on target"
    assert "uk" in results["t"].note and not results["t"].matches
