"""The MySQL sink's executor-side encoding: rows travel without their TableInfo and come back equal; a table's
route is stable and tables with similar names spread over the writer tasks."""

from __future__ import annotations

from decimal import Decimal

from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo
from sparkcdc.sink.mysql.config import MysqlSinkConfig
from sparkcdc.sink.mysql.encoder import MysqlEncoder
from sparkcdc.sink.row_payload import table_route, unpack

T = TableInfo("db", "t", 5, (ColumnInfo("id", "bigint", unsigned=True, primary_key=True, handle_key=True),
                             ColumnInfo("v", "varbinary"), ColumnInfo("d", "decimal")), version=9)  # fmt: skip


def test_rows_round_trip_through_a_payload() -> None:
    rows = [
        RowChange(10, T, RowOp.INSERT, None, (2**64 - 1, b"\x00\xff", Decimal("-1.50")), 5, 3),
        RowChange(10, T, RowOp.UPDATE, (1, b"", None), (2, b"x", Decimal("0")), 5, 3),
        RowChange(10, T, RowOp.DELETE, (3, None, None), None, 5, 3),
    ]
    [payload] = MysqlEncoder(MysqlSinkConfig.from_uri("mysql://root@h:3306/")).encode(rows)
    assert payload.nrows == 3 and payload.route == table_route("db", "t") and payload.physical_table_id == 5
    assert unpack(payload.data, T) == rows


def test_routes_are_stable_and_spread_similar_names_over_two_tasks() -> None:
    assert table_route("db", "t") == table_route("db", "t") >= 0
    assert table_route("a", "bc") != table_route("ab", "c")  # schema and table are separated
    for schema in ("bench", "mysql_r0", "mysql_r1", "lat", "app"):
        tasks = {table_route(schema, f"t{i}") % 2 for i in range(4)}
        assert tasks == {0, 1}, schema
