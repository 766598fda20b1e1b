"""Schema-file table definitions -> model ``TableInfo`` for decoding, and CREATE TABLE for a missing table.

A schema file carries less than a TableInfo (``spec/consumer.md`` §3.6): type name (+ `` UNSIGNED``),
precision, scale, NOT NULL and PK flags. It does not carry ENUM/SET elements, so ENUM and SET columns are
decoded as their *text* (``varchar``): the downstream accepts the element names, and CSV writes names.
It carries no charset or collation either: binary columns are typed ``BINARY``/``VARBINARY``/``*BLOB``, every
other text column is utf8mb4 (TiCDC's consumer rebuilds them so too), so created tables say utf8mb4 instead of
taking the downstream database's default (latin1 would turn ``好`` into ``?``).
"""

from __future__ import annotations

from sparkcdc.errors import CorruptDataError
from sparkcdc.model import ColumnInfo, TableInfo
from sparkcdc.model.column_type import ALL_TYPES
from sparkcdc.mysql.target import CHARSET_CLAUSE, quote_ident, quote_table
from sparkcdc.storage.schema_file import TableCol, TableDefinition

_ALIASES = {"var_string": "varchar", "numeric": "decimal", "integer": "int", "bool": "tinyint", "boolean": "tinyint"}
_AS_TEXT = frozenset({"enum", "set"})


def _int_or_none(text: str, source: str, what: str) -> int | None:
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise CorruptDataError(f"{source}: {what} {text!r} is not a number; repair or delete the file") from None


def column_from_col(col: TableCol, *, source: str) -> ColumnInfo:
    """One column. Raises CorruptDataError naming ``source`` for an unknown type or a bad number."""
    words = col.type.strip().lower().split()
    unsigned = "unsigned" in words[1:]
    base = _ALIASES.get(words[0], words[0]) if words else ""
    if base in _AS_TEXT:
        base = "varchar"
    if base not in ALL_TYPES:
        raise CorruptDataError(f"{source}: column {col.name!r} has unknown ColumnType {col.type!r}")
    pk = col.is_pk == "true"
    return ColumnInfo(
        name=col.name,
        type=base,
        unsigned=unsigned,
        nullable=col.nullable != "false" and not pk,
        primary_key=pk,
        handle_key=pk,
        length=_int_or_none(col.precision, source, "ColumnPrecision"),
        decimal=_int_or_none(col.scale, source, "ColumnScale"),
    )


def table_info(defn: TableDefinition, *, source: str, table_id: int = 0) -> TableInfo:
    """The TableInfo a data file of this table version decodes with (``version`` = TableVersion)."""
    cols = tuple(column_from_col(c, source=source) for c in defn.columns or ())
    return TableInfo(defn.schema, defn.table, table_id, cols, version=defn.table_version)


_SIZED = frozenset({"char", "varchar", "binary", "varbinary", "bit"})
_FSP = frozenset({"datetime", "timestamp", "time"})
_INTS = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})


def create_table_sql(defn: TableDefinition, *, source: str) -> str:
    """A ``CREATE TABLE IF NOT EXISTS`` rebuilt from the schema file's columns.

    Raises CorruptDataError when the file cannot describe the table (ENUM/SET elements are not recorded).
    """
    parts = []
    for col in defn.columns or ():
        words = col.type.strip().upper().split()
        base = words[0] if words else ""
        lower = _ALIASES.get(base.lower(), base.lower())
        if lower in _AS_TEXT or lower not in ALL_TYPES:
            raise CorruptDataError(
                f"{source}: cannot create table {defn.schema}.{defn.table} downstream from a schema file with a "
                f"{col.type} column; create the table in the downstream first"
            )
        sql_type = lower.upper()
        if lower == "decimal":
            sql_type += f"({col.precision or 10},{col.scale or 0})"
        elif lower in _SIZED and col.precision:
            sql_type += f"({col.precision})"
        elif lower in _FSP and col.scale:
            sql_type += f"({col.scale})"
        elif lower in ("float", "double") and col.precision and col.scale:
            sql_type += f"({col.precision},{col.scale})"
        if "UNSIGNED" in words[1:] and (lower in _INTS or lower in ("decimal", "float", "double")):
            sql_type += " UNSIGNED"
        null = " NOT NULL" if col.nullable == "false" or col.is_pk == "true" else " NULL"
        parts.append(f"{quote_ident(col.name)} {sql_type}{null}")
    pk = [quote_ident(c.name) for c in defn.columns or () if c.is_pk == "true"]
    if pk:
        parts.append(f"PRIMARY KEY ({','.join(pk)})")
    return f"CREATE TABLE IF NOT EXISTS {quote_table(defn.schema, defn.table)} ({', '.join(parts)}) {CHARSET_CLAUSE}"


def create_database_sql(schema: str) -> str:
    """``CREATE DATABASE IF NOT EXISTS`` for a missing database, utf8mb4 like the tables created in it."""
    return f"CREATE DATABASE IF NOT EXISTS {quote_ident(schema)} {CHARSET_CLAUSE}"
