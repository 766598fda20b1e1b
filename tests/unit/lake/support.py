"""Table definitions and row changes for the lake tests."""

from __future__ import annotations

from typing import Any

from sparkcdc.lake.as_of import read_as_of
from sparkcdc.lake.keyless import fold
from sparkcdc.lake.location import LakeLocation
from sparkcdc.lake.target import LakeTables, open_tables
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


def lake(uri: str) -> LakeTables:
    where, _ = LakeLocation.from_uri(uri)
    return open_tables(where, "cf")


def apply(tables: LakeTables, rows: list[RowChange]) -> int:
    """One batch of one table committed as the sink's writer does."""
    info = rows[-1].table
    applied = tables.applied_ts(info.schema, info.table)
    return tables.merge(info, fold(rows, info, applied), applied)


def rows_of(uri: str, ts: int, name: str = "db.t") -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in read_as_of(uri, name, ts).to_pylist())
