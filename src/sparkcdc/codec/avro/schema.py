"""The key and value schemas of a table as TiCDC builds and registers them (``columns2AvroSchema``).

A record named after the table in the namespace ``<changefeed namespace>.<schema>``; one field per column (virtual
generated columns are not in TiCDC's rows, so not here either), in table order: the value holds every column,
the key only the handle-key columns (the primary key, else the first NOT NULL unique key). A nullable column is a
union: ``["null", T]`` with default null, or ``[T, "null"]`` with the column's default when it has one (Avro wants a
union's default to match its first branch); a NOT NULL column with a default carries it. A precise DECIMAL never
has a default but null (goavro cannot hold one). With ``enable-tidb-extension`` the value ends with ``_tidb_op``,
``_tidb_commit_ts`` and ``_tidb_commit_physical_time``.

The JSON text is byte for byte what TiCDC registers: Go's ``json.Marshal`` of its structs and maps (struct members
in declaration order, map keys sorted, ``< > &`` escaped), so registering ours and TiCDC's for the same table
gives one schema version, not two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkcdc.codec.avro.config import AvroConfig
from sparkcdc.codec.avro.message import TIDB_COMMIT_TS, TIDB_OP, TIDB_PHYSICAL_TIME, avro_namespace, sanitize_name
from sparkcdc.codec.avro.values import avro_type, default_datum, is_logical
from sparkcdc.codec.simple.message import go_json_dumps
from sparkcdc.model import TableInfo
from sparkcdc.model.table import ColumnInfo


@dataclass(frozen=True, slots=True)
class TableSchemas:
    """A table version's schemas: the JSON texts to register and the columns each one carries (positions in
    ``table.columns``). ``key`` is None for a table without a handle key (its messages have no key)."""

    key: str | None
    value: str
    key_positions: tuple[int, ...]
    value_positions: tuple[int, ...]


def table_schemas(table: TableInfo, cfg: AvroConfig) -> TableSchemas:
    """Both schemas of ``table``. Raises EncodeError for a column type the protocol cannot carry."""
    value_positions = tuple(i for i, c in table.iter_columns(include_virtual=False))
    key_positions = tuple(i for i in table.handle_key_positions if not table.columns[i].is_virtual)
    value = _record(table, value_positions, cfg)
    if cfg.enable_tidb_extension:
        value["fields"].extend(
            [
                {"default": "", "name": TIDB_OP, "type": "string"},
                {"default": 0, "name": TIDB_COMMIT_TS, "type": "long"},
                {"default": 0, "name": TIDB_PHYSICAL_TIME, "type": "long"},
            ]
        )
    key = go_json_dumps(_record(table, key_positions, cfg)).decode() if key_positions else None
    return TableSchemas(key, go_json_dumps(value).decode(), key_positions, value_positions)


def _record(table: TableInfo, positions: tuple[int, ...], cfg: AvroConfig) -> dict[str, Any]:
    return {
        "type": "record",
        "name": sanitize_name(table.table),
        "namespace": avro_namespace(cfg.namespace, table.schema),
        "fields": [field(table.columns[i], cfg) for i in positions],
    }


def field(col: ColumnInfo, cfg: AvroConfig) -> dict[str, Any]:
    """One column's field (a Go map: its keys sorted, so ``default`` comes first)."""
    t = avro_type(col, cfg)
    default = default_datum(col, cfg)
    if is_logical(col, cfg):
        return {"default": None, "name": sanitize_name(col.name), "type": ["null", t]} if col.nullable else {
            "name": sanitize_name(col.name), "type": t}  # fmt: skip
    if col.nullable:
        union = ["null", t] if default is None else [t, "null"]
        return {"default": default, "name": sanitize_name(col.name), "type": union}
    if default is None:
        return {"name": sanitize_name(col.name), "type": t}
    return {"default": default, "name": sanitize_name(col.name), "type": t}
