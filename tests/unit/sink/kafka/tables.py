"""Building blocks for the Kafka sink unit tests: tables and rows in the project's model."""

from __future__ import annotations

from typing import Any

from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys


def table(
    schema: str,
    name: str,
    columns: list[str | ColumnInfo],
    *,
    pk: tuple[str, ...] = (),
    unique: dict[str, tuple[str, ...]] | None = None,
    not_null: tuple[str, ...] = (),
) -> TableInfo:
    """A table of INT columns (or given ColumnInfos) with an optional primary key and named unique indexes."""
    cols = tuple(
        c if isinstance(c, ColumnInfo) else ColumnInfo(c, "int", nullable=c not in not_null and c not in pk)
        for c in columns
    )
    indexes = []
    if pk:
        indexes.append(IndexInfo("PRIMARY", pk, primary=True, unique=True))
    for index_name, index_columns in (unique or {}).items():
        indexes.append(IndexInfo(index_name, index_columns, unique=True))
    return TableInfo(schema, name, 1, with_handle_keys(cols, tuple(indexes)), tuple(indexes))


def insert(info: TableInfo, *values: Any, commit_ts: int = 1) -> RowChange:
    return RowChange(commit_ts, info, RowOp.INSERT, None, tuple(values))


def delete(info: TableInfo, *values: Any, commit_ts: int = 1) -> RowChange:
    return RowChange(commit_ts, info, RowOp.DELETE, tuple(values), None)
