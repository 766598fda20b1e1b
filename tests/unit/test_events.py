from __future__ import annotations

from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.events import split_key_updates
from sparkcdc.model.table import with_handle_keys

COLUMNS = (ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "varchar"))
TABLE = TableInfo("db", "t", 1, with_handle_keys(COLUMNS, (IndexInfo("PRIMARY", ("id",), primary=True),)))


def _ins(i: int, v: str) -> RowChange:
    return RowChange(10, TABLE, RowOp.INSERT, None, (i, v))


def _upd(old: tuple[int, str], new: tuple[int, str]) -> RowChange:
    return RowChange(10, TABLE, RowOp.UPDATE, old, new)


def test_non_key_update_is_kept() -> None:
    rows = [_upd((1, "a"), (1, "b"))]
    assert split_key_updates(rows) == rows


def test_key_update_is_split_and_reordered_like_ticdc() -> None:
    rows = [_ins(5, "x"), _upd((1, "a"), (2, "a"))]
    out = split_key_updates(rows)
    assert [(r.op, r.values[0]) for r in out] == [(RowOp.DELETE, 1), (RowOp.INSERT, 5), (RowOp.INSERT, 2)]


def test_same_key_changed_twice_keeps_binlog_order() -> None:
    # INSERT id=1 then UPDATE id 1->2: reordering would give D(1), I(1), I(2) and leave both rows behind.
    rows = [_ins(1, "a"), _upd((1, "a"), (2, "a"))]
    out = split_key_updates(rows)
    assert [(r.op, r.values[0]) for r in out] == [(RowOp.INSERT, 1), (RowOp.DELETE, 1), (RowOp.INSERT, 2)]


def test_null_to_value_counts_as_key_change() -> None:
    cols = (ColumnInfo("id", "int", nullable=False), ColumnInfo("u", "int"))
    table = TableInfo(
        "db", "t", 1,
        with_handle_keys(cols, (IndexInfo("PRIMARY", ("id",), primary=True), IndexInfo("u", ("u",), unique=True))),
    )
    row = RowChange(1, table, RowOp.UPDATE, (1, None), (1, 3))
    assert row.handle_key_changed()
