"""Table definitions and row changes for the lake tests."""

from __future__ import annotations

from typing import Any

from sparkcdc.model import RowChange, RowOp, TableInfo
from sparkcdc.model.table import ColumnInfo


def key_col(name: str, typ: str = "int", **kw: Any) -> ColumnInfo:
    return ColumnInfo(name, typ, nullable=False, primary_key=True, handle_key=True, **kw)


def table(*columns: ColumnInfo, schema: str = "db", name: str = "t", version: int = 1) -> TableInfo:
    return TableInfo(schema, name, 1, tuple(columns), version=version)


T = table(key_col("id"), ColumnInfo("v", "varchar"))


def ins(ts: int, *after: Any, t: TableInfo = T) -> RowChange:
    return RowChange(ts, t, RowOp.INSERT, None, tuple(after))


def upd(ts: int, before: tuple[Any, ...], after: tuple[Any, ...], t: TableInfo = T) -> RowChange:
    return RowChange(ts, t, RowOp.UPDATE, before, after)


def dele(ts: int, *before: Any, t: TableInfo = T) -> RowChange:
    return RowChange(ts, t, RowOp.DELETE, tuple(before), None)
