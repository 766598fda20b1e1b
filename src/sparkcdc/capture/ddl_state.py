"""Schema state shared by the DDL parser modules: databases, tables, DDL changes and table building."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sparkcdc.capture.ddl_columns import fill_charsets
from sparkcdc.errors import CorruptDataError
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo, IndexInfo, TableInfo, with_handle_keys

DEFAULT_CHARSET = "utf8mb4"
DEFAULT_COLLATION = {"utf8mb4": "utf8mb4_general_ci", "utf8mb3": "utf8mb3_general_ci", "latin1": "latin1_swedish_ci",
                     "utf8": "utf8mb3_general_ci", "binary": "binary", "ascii": "ascii_general_ci"}  # fmt: skip


class UnsupportedDDL(CorruptDataError):
    """A DDL that changes a table in a way this parser cannot reproduce."""


@dataclass
class SchemaState:
    """Databases (name -> default charset) and tables ((db, name) -> TableInfo) at one point of the binlog."""

    databases: dict[str, str] = field(default_factory=dict)
    tables: dict[tuple[str, str], TableInfo] = field(default_factory=dict)
    next_table_id: int = 100

    def new_table_id(self) -> int:
        self.next_table_id += 1
        return self.next_table_id


@dataclass(frozen=True)
class DDLChange:
    """One DDL event's worth of change. ``pre``/``post`` are the table before/after (None when absent)."""

    action: DDLAction
    schema: str
    table: str
    pre: TableInfo | None
    post: TableInfo | None
    query: str


def collation_for(charset: str) -> str:
    return DEFAULT_COLLATION.get(charset, f"{charset}_general_ci")


def build_table(
    schema: str,
    name: str,
    table_id: int,
    columns: list[ColumnInfo],
    indexes: list[IndexInfo],
    version: int,
    charset: str,
    collation: str,
) -> TableInfo:
    cols = fill_charsets(columns, charset, collation)
    cols = [replace(col, column_id=i + 1) for i, col in enumerate(cols)]
    return TableInfo(
        schema=schema,
        table=name,
        table_id=table_id,
        columns=with_handle_keys(tuple(cols), tuple(indexes)),
        indexes=tuple(indexes),
        version=version,
        charset=charset,
        collation=collation,
    )


def rebuild_table(pre: TableInfo, columns: list[ColumnInfo], indexes: list[IndexInfo], ts: int) -> TableInfo:
    # Reset derived key flags, then let with_handle_keys recompute them from the indexes.
    inline_pk = [col.name for col in columns if col.primary_key and not any(i.primary for i in indexes)]
    if inline_pk:
        indexes = [IndexInfo("PRIMARY", tuple(inline_pk), primary=True, unique=True), *indexes]
    pk_names = {n.lower() for i in indexes if i.primary for n in i.columns}
    cleared = [
        replace(col, primary_key=False, unique_key=False, multiple_key=False, handle_key=False,
                nullable=col.nullable and col.name.lower() not in pk_names)
        for col in columns
    ]
    return build_table(pre.schema, pre.table, pre.table_id, cleared, indexes, ts, pre.charset, pre.collation)
