"""Schema files (``schema_<TableVersion>_<checksum>.json``): exact bytes, checksum, and parsing back.

Byte layout follows Go ``json.MarshalIndent(v, "", "    ")`` over TiCDC's structs (``spec/storage-layout.md``
§7.2-§7.4). Dict order is byte order, so the serializer is written out by hand rather than via a JSON library.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.codec.gofmt import go_json_float, go_json_string
from sparkcdc.errors import ConfigError, CorruptDataError
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, TableInfo
from sparkcdc.model.column_type import DEFAULT_FLEN_DECIMAL
from sparkcdc.storage.layout import SchemaFilePath

FORMAT_VERSION = 1

_SCALE_IF_NON_DEFAULT = frozenset({"timestamp", "datetime", "time", "float", "double"})
_PRECISION_TYPES = frozenset(
    {
        "tinyint", "smallint", "mediumint", "int", "bigint", "bit", "year", "float", "double", "decimal",
        "char", "varchar", "var_string", "binary", "varbinary",
        "tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob",
    }
)  # fmt: skip
_DEFAULTS = {**DEFAULT_FLEN_DECIMAL, "var_string": (5, 0)}

Default = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class TableCol:
    """One ``TableColumns`` element; empty strings (and ``default is None``) are omitted, as Go ``omitempty``."""

    name: str
    type: str
    default: Default = None
    precision: str = ""
    scale: str = ""
    nullable: str = ""
    is_pk: str = ""
    column_id: str = ""

    def members(self) -> list[tuple[str, str]]:
        """``(key, JSON value text)`` pairs in Go struct order."""
        out: list[tuple[str, str]] = []
        if self.column_id:
            out.append(("ColumnId", go_json_string(self.column_id)))
        out.append(("ColumnName", go_json_string(self.name)))
        out.append(("ColumnType", go_json_string(self.type)))
        if self.default is not None:
            out.append(("ColumnDefault", _json_scalar(self.default)))
        for key, value in (
            ("ColumnPrecision", self.precision),
            ("ColumnScale", self.scale),
            ("ColumnNullable", self.nullable),
            ("ColumnIsPk", self.is_pk),
        ):
            if value:
                out.append((key, go_json_string(value)))
        return out

    def compact_json(self) -> str:
        """Go ``json.Marshal`` of the column (no spaces), as ``TestTableCol`` compares."""
        return "{" + ",".join(f'"{k}":{v}' for k, v in self.members()) + "}"

    @classmethod
    def from_column(cls, column: ColumnInfo, *, output_column_id: bool = False) -> TableCol:
        default: Default
        default = column.default.decode("utf-8", "replace") if isinstance(column.default, bytes) else column.default
        return table_col(
            column.name,
            column.type,
            flen=column.flen,
            decimal=column.flen_decimal,
            unsigned=column.unsigned,
            nullable=column.nullable,
            primary_key=column.primary_key,
            default=default,
            column_id=str(column.column_id) if output_column_id else "",
        )


def table_col(
    name: str,
    tidb_type: str,
    *,
    flen: int = -1,
    decimal: int = -1,
    unsigned: bool = False,
    nullable: bool = True,
    primary_key: bool = False,
    default: Default = None,
    column_id: str = "",
) -> TableCol:
    """A column from TiDB-level facts: ``tidb_type`` is the lower-case type name with the charset applied
    (``varbinary``, ``blob``; ``var_string`` too); ``flen``/``decimal`` of ``-1`` take TiDB's defaults."""
    default_flen, default_decimal = _DEFAULTS.get(tidb_type, (-1, 0))
    if flen == -1:
        flen = default_flen
    if decimal == -1:
        decimal = default_decimal
    non_default_decimal = decimal not in (default_decimal, 0, -1)
    precision = scale = ""
    if tidb_type in _PRECISION_TYPES and tidb_type not in ("timestamp", "datetime", "time"):
        precision = str(flen)
    if tidb_type == "decimal" or (tidb_type in _SCALE_IF_NON_DEFAULT and non_default_decimal):
        scale = str(decimal)
    return TableCol(
        name=name,
        type=tidb_type.upper() + (" UNSIGNED" if unsigned else ""),
        default=default,
        precision=precision,
        scale=scale,
        nullable="" if nullable else "false",
        is_pk="true" if primary_key else "",
        column_id=column_id,
    )


@dataclass(frozen=True, slots=True)
class TableDefinition:
    """A schema file's content. ``columns is None`` for database-level files."""

    schema: str
    table: str
    table_version: int
    query: str = ""
    type: int = 0
    columns: tuple[TableCol, ...] | None = None
    version: int = FORMAT_VERSION

    @property
    def total(self) -> int:
        return len(self.columns) if self.columns else 0

    @property
    def is_database_level(self) -> bool:
        return self.columns is None

    @classmethod
    def from_table(
        cls, table: TableInfo, table_version: int, *, query: str = "", ddl_type: int = 0, output_column_id: bool = False
    ) -> TableDefinition:
        """Table-level definition of ``table`` (all columns, virtual ones included).

        Raises ConfigError for a table without columns (TiCDC rejects it too).
        """
        if not table.columns:
            raise ConfigError(f"table {table.schema}.{table.table} has no columns; cannot write its schema file")
        cols = tuple(TableCol.from_column(c, output_column_id=output_column_id) for c in table.columns)
        return cls(table.schema, table.table, table_version, query, int(ddl_type), cols)

    @classmethod
    def for_database(cls, schema: str, table_version: int, *, query: str = "", ddl_type: int = 0) -> TableDefinition:
        return cls(schema, "", table_version, query, int(ddl_type), None)

    @classmethod
    def from_ddl(cls, ddl: DDLEvent, *, output_column_id: bool = False) -> list[TableDefinition]:
        """The schema files a DDL produces (§7.1): one, or two for EXCHANGE PARTITION (the partitioned table
        with the query, then the other table with ``Query ""`` and ``Type 0``)."""
        if ddl.table_info is None:
            return [cls.for_database(ddl.schema, ddl.commit_ts, query=ddl.query, ddl_type=int(ddl.action))]
        out = [
            cls.from_table(
                ddl.table_info, ddl.commit_ts, query=ddl.query, ddl_type=int(ddl.action),
                output_column_id=output_column_id,
            )
        ]  # fmt: skip
        if ddl.action is DDLAction.EXCHANGE_TABLE_PARTITION and ddl.pre_table_info is not None:
            out.append(cls.from_table(ddl.pre_table_info, ddl.commit_ts, output_column_id=output_column_id))
        return out

    def to_json(self) -> bytes:
        """Exact schema-file bytes (MarshalIndent, no trailing newline)."""
        cols = "null" if self.columns is None else _indent_array(self.columns)
        members = [
            ("Table", go_json_string(self.table)),
            ("Schema", go_json_string(self.schema)),
            ("Version", str(self.version)),
            ("TableVersion", str(self.table_version)),
            ("Query", go_json_string(self.query)),
            ("Type", str(self.type)),
            ("TableColumns", cols),
            ("TableColumnsTotal", str(self.total)),
        ]
        return _indent_object(members, "").encode()

    def checksum_input(self) -> bytes:
        """The bytes fed to CRC-32 (§7.4): name-sorted columns, ``Version 0``, ``[]`` for no columns."""
        cols = sorted(self.columns or (), key=lambda c: c.name.encode())
        members = [
            ("Table", go_json_string(self.table)),
            ("Schema", go_json_string(self.schema)),
            ("Version", "0"),
            ("TableColumns", _indent_array(cols) if cols else "[]"),
            ("TableColumnsTotal", str(self.total)),
        ]
        return _indent_object(members, "").encode()

    def checksum(self) -> int:
        return zlib.crc32(self.checksum_input())

    def path(self) -> str:
        """Path relative to the sink root (names encoded by ``layout.encode_name``)."""
        return SchemaFilePath(self.schema, self.table, self.table_version, self.checksum()).format()

    @classmethod
    def from_json(cls, data: bytes, *, source: str = "schema file") -> TableDefinition:
        """Parse a schema file written by TiCDC or by us.

        Raises CorruptDataError naming ``source`` and the bad member.
        """
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise CorruptDataError(f"{source}: not valid JSON ({e}); repair or delete it") from None
        if not isinstance(doc, dict):
            raise CorruptDataError(f"{source}: top level is not an object; repair or delete it")
        table = _member(doc, "Table", str, source)
        schema = _member(doc, "Schema", str, source)
        version = _member(doc, "Version", int, source)
        table_version = _member(doc, "TableVersion", int, source)
        query = doc.get("Query", "")
        ddl_type = doc.get("Type", 0)
        if not isinstance(query, str) or not isinstance(ddl_type, int):
            raise CorruptDataError(f"{source}: Query must be a string and Type a number; repair or delete it")
        raw_cols = doc.get("TableColumns")
        columns: tuple[TableCol, ...] | None = None
        if raw_cols is not None:
            if not isinstance(raw_cols, list):
                raise CorruptDataError(f"{source}: TableColumns is not an array; repair or delete it")
            columns = tuple(_parse_col(c, source) for c in raw_cols)
        return cls(schema, table, table_version, query, ddl_type, columns, version)


def _parse_col(raw: Any, source: str) -> TableCol:
    if not isinstance(raw, dict):
        raise CorruptDataError(f"{source}: a TableColumns element is not an object; repair or delete it")
    texts = {}
    for key in ("ColumnId", "ColumnName", "ColumnType", "ColumnPrecision", "ColumnScale", "ColumnNullable",
                "ColumnIsPk"):  # fmt: skip
        value = raw.get(key, "")
        if not isinstance(value, str):
            raise CorruptDataError(f"{source}: {key} is not a string; repair or delete it")
        texts[key] = value
    default = raw.get("ColumnDefault")
    if default is not None and not isinstance(default, str | int | float | bool):
        raise CorruptDataError(f"{source}: ColumnDefault is not a scalar; repair or delete it")
    return TableCol(
        texts["ColumnName"], texts["ColumnType"], default, texts["ColumnPrecision"], texts["ColumnScale"],
        texts["ColumnNullable"], texts["ColumnIsPk"], texts["ColumnId"],
    )  # fmt: skip


def _member(doc: dict[str, Any], key: str, kind: type, source: str) -> Any:
    value = doc.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CorruptDataError(f"{source}: {key} is missing or not a {kind.__name__}; repair or delete it")
    return value


def _json_scalar(value: Default) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_json_float(value)
    return go_json_string(str(value))


def _indent_object(members: Sequence[tuple[str, str]], indent: str) -> str:
    inner = indent + "    "
    body = ",\n".join(f'{inner}"{k}": {v}' for k, v in members)
    return "{\n" + body + "\n" + indent + "}"


def _indent_array(cols: Sequence[TableCol]) -> str:
    """A column array as the value of a top-level member (elements at depth 2)."""
    if not cols:
        return "[]"
    inner = "        "
    return "[\n" + ",\n".join(inner + _indent_object(c.members(), inner) for c in cols) + "\n    ]"
