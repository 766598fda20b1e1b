"""TableSchema (``spec/simple.md`` §2.1): a TableInfo as the simple protocol writes it, and back.

TiDB facts the layout reflects:

* columns are sorted by column ID (stable), all columns including generated ones;
* numeric, temporal, JSON and binary columns have charset/collation ``binary``; BIT and YEAR carry the
  UNSIGNED flag and YEAR also ZEROFILL;
* an integer single-column primary key is the row handle and is not in TiDB's index list, so TiCDC appends
  a synthetic ``primary`` index last; other primary keys stay in place as ``PRIMARY``.

What the protocol does not carry (so a decoded TableInfo lacks it): generated-column kind, column ids,
partitions, table charset/collation, multiple-key flags beyond index membership.
"""

from __future__ import annotations

from typing import Any, Final

from sparkcdc.errors import ConfigError, DecodeError
from sparkcdc.model import ColumnInfo, IndexInfo, TableInfo
from sparkcdc.model.column_type import ALL_TYPES, INTEGER_TYPES, TEXT_TYPES
from sparkcdc.model.table import with_handle_keys

from .message import (
    COLUMN_MEMBERS,
    DATA_TYPE_MEMBERS,
    INDEX_MEMBERS,
    TABLE_SCHEMA_MEMBERS,
    UINT64_MAX,
    as_bool,
    as_int,
    as_list,
    as_object,
    as_str,
    check_members,
    clean_text,
    member,
    path,
)

_CHARSET_TYPES: Final = TEXT_TYPES | {"enum", "set"}
# Avro writes unsigned/zerofill for these (avro.go); decimal only for DECIMAL, elements for ENUM/SET.
_AVRO_FLAG_TYPES: Final = INTEGER_TYPES | {"float", "double", "bit", "year", "decimal"}
_SYNTHETIC_PRIMARY: Final = "primary"


def charset_collate(col: ColumnInfo) -> tuple[str, str]:
    """TiDB's charset and collation of a column (JSON columns are ``binary`` in TiDB)."""
    if col.type in _CHARSET_TYPES:
        charset = col.charset or "utf8mb4"
        if charset == "binary":
            return "binary", "binary"
        return charset, col.collation or ("utf8mb4_bin" if charset == "utf8mb4" else f"{charset}_bin")
    return "binary", "binary"


def column_length(col: ColumnInfo) -> int:
    """TiDB flen; ENUM/SET default to the longest element / the total length with commas."""
    if col.length is None and col.type in ("enum", "set"):
        if not col.elements:
            return 0
        if col.type == "enum":
            return max(len(e) for e in col.elements)
        return sum(len(e) for e in col.elements) + len(col.elements) - 1
    return col.flen


def column_flags(col: ColumnInfo) -> tuple[bool, bool]:
    """(unsigned, zerofill) as TiDB sets them: BIT and YEAR are UNSIGNED, YEAR is ZEROFILL."""
    return col.unsigned or col.type in ("bit", "year"), col.zerofill or col.type == "year"


def column_decimal(col: ColumnInfo) -> int:
    """TiDB decimal; FLOAT/DOUBLE never write it (TiCDC skips their -1)."""
    if col.type in ("float", "double"):
        return 0
    return col.flen_decimal


def bit_default_to_int(default: str | bytes) -> int:
    """TiDB stores a BIT default as its binary literal; the protocol writes its unsigned integer."""
    if isinstance(default, bytes):
        return int.from_bytes(default, "big") if default else 0
    text = default.strip()
    if len(text) > 3 and text[:2] in ("b'", "B'") and text.endswith("'") and set(text[2:-1]) <= {"0", "1"}:
        return int(text[2:-1], 2)
    if text.isdigit():
        return int(text)
    raw = default.encode("latin-1", "replace")
    return int.from_bytes(raw, "big") if raw else 0


def bit_default_from_int(value: int, length: int) -> bytes:
    size = max((length + 7) >> 3, (value.bit_length() + 7) >> 3, 1)
    return value.to_bytes(size, "big")


def _sorted_columns(table: TableInfo) -> list[ColumnInfo]:
    return sorted(table.columns, key=lambda c: c.column_id)


def _indexes(table: TableInfo) -> list[tuple[str, bool, bool, bool, tuple[str, ...]]]:
    """(name, unique, primary, nullable, columns) in TiDB order, with the synthetic handle PK last."""
    by_name = {c.name.lower(): c for c in table.columns}

    def nullable(cols: tuple[str, ...]) -> bool:
        return any(by_name[n.lower()].nullable for n in cols if n.lower() in by_name)

    out = []
    handle_pk: tuple[str, ...] = ()
    for idx in table.indexes:
        if idx.primary and len(idx.columns) == 1:
            col = by_name.get(idx.columns[0].lower())
            if col is not None and col.type in INTEGER_TYPES:
                handle_pk = (col.name,)
                continue
        out.append((idx.name, idx.unique or idx.primary, idx.primary, nullable(idx.columns), idx.columns))
    if not any(primary for _, _, primary, _, _ in out):
        pk = handle_pk or tuple(c.name for c in table.columns if c.primary_key)
        if pk:
            out.append((_SYNTHETIC_PRIMARY, True, True, False, pk))
    return out


def _default_json(col: ColumnInfo) -> Any:
    if col.default is None:
        return None
    if col.type == "bit":
        return bit_default_to_int(col.default)
    if isinstance(col.default, bytes):
        return col.default.decode("utf-8", "replace")
    return col.default


def to_json(table: TableInfo) -> dict[str, Any]:
    """The JSON ``tableSchema`` object (member order = Go struct order)."""
    columns = []
    for col in _sorted_columns(table):
        charset, collate = charset_collate(col)
        data_type: dict[str, Any] = {"mysqlType": col.type, "charset": charset, "collate": collate}
        length = column_length(col)
        if length:
            data_type["length"] = length
        decimal = column_decimal(col)
        if decimal:
            data_type["decimal"] = decimal
        if col.elements:
            data_type["elements"] = list(col.elements)
        unsigned, zerofill = column_flags(col)
        if unsigned:
            data_type["unsigned"] = True
        if zerofill:
            data_type["zerofill"] = True
        columns.append(
            {"name": col.name, "dataType": data_type, "nullable": col.nullable, "default": _default_json(col)}
        )
    indexes = [
        {"name": name, "unique": unique, "primary": primary, "nullable": nullable, "columns": list(cols)}
        for name, unique, primary, nullable, cols in _indexes(table)
    ]
    return {
        "schema": table.schema,
        "table": table.table,
        "tableID": table.table_id,
        "version": table.version,
        "columns": columns,
        "indexes": indexes,
    }


def to_avro(table: TableInfo) -> dict[str, Any]:
    """The Avro ``TableSchema`` record (``database``, not ``schema``; flags per avro.go)."""
    columns = []
    for col in _sorted_columns(table):
        charset, collate = charset_collate(col)
        unsigned, zerofill = column_flags(col)
        flags = col.type in _AVRO_FLAG_TYPES
        default = col.default
        if default is not None and col.type == "bit":
            # Go writes the raw binary-literal string; Avro strings must be text, so bytes map 1:1 to
            # code points (identical to Go for bytes < 0x80).
            default = bit_default_from_int(bit_default_to_int(default), col.flen).decode("latin-1")
        elif isinstance(default, bytes):
            default = default.decode("utf-8", "replace")
        columns.append(
            {
                "name": clean_text(col.name),
                "dataType": {
                    "mysqlType": col.type,
                    "charset": charset,
                    "collate": collate,
                    "length": column_length(col),
                    "decimal": col.flen_decimal if col.type == "decimal" else None,
                    "elements": [clean_text(e) for e in col.elements] if col.type in ("enum", "set") else None,
                    "unsigned": unsigned if flags else None,
                    "zerofill": zerofill if flags else None,
                },
                "nullable": col.nullable,
                "default": clean_text(default) if isinstance(default, str) else None,
            }
        )
    indexes = [
        {
            "name": clean_text(name),
            "unique": unique,
            "primary": primary,
            "nullable": nullable,
            "columns": [clean_text(c) for c in cols],
        }
        for name, unique, primary, nullable, cols in _indexes(table)
    ]
    return {
        "database": clean_text(table.schema),
        "table": clean_text(table.table),
        "tableID": table.table_id,
        "version": to_int64(table.version),
        "columns": columns,
        "indexes": indexes,
    }


def to_int64(value: int) -> int:
    """Go's ``int64(uint64)``: the two's-complement reinterpretation Avro ``long`` members carry."""
    return value - (1 << 64) if value >= 1 << 63 else value


def from_int64(value: int) -> int:
    return value + (1 << 64) if value < 0 else value


# --- decoding ----------------------------------------------------------------------------------------


def from_json(raw: Any, where: str) -> TableInfo:
    """TableInfo from a JSON ``tableSchema``; raises DecodeError naming the bad member."""
    obj = as_object(raw, where)
    check_members(obj, TABLE_SCHEMA_MEMBERS, where)
    return _build(obj, "schema", where, avro=False)


def from_avro(raw: Any, where: str) -> TableInfo:
    obj = as_object(raw, where)
    return _build(obj, "database", where, avro=True)


def _build(obj: dict[str, Any], schema_key: str, where: str, *, avro: bool) -> TableInfo:
    schema = as_str(member(obj, schema_key, where), path(where, schema_key))
    table = as_str(member(obj, "table", where), path(where, "table"))
    table_id = as_int(member(obj, "tableID", where), path(where, "tableID"))
    version = as_int(member(obj, "version", where), path(where, "version"), lo=0 if not avro else -(1 << 63))
    if avro:
        version = from_int64(version)
    raw_columns = as_list(member(obj, "columns", where), path(where, "columns"))
    raw_indexes = as_list(member(obj, "indexes", where), path(where, "indexes"))
    columns = [_column(c, f"{where}.columns[{i}]", avro=avro) for i, c in enumerate(raw_columns)]
    indexes = tuple(_index(x, f"{where}.indexes[{i}]", avro=avro) for i, x in enumerate(raw_indexes))
    names = {c.name.lower() for c in columns}
    for i, idx in enumerate(indexes):
        for name in idx.columns:
            if name.lower() not in names:
                raise DecodeError(f"simple: {where}.indexes[{i}] names unknown column {name!r}")
    try:
        return TableInfo(
            schema=schema,
            table=table,
            table_id=table_id,
            columns=with_handle_keys(tuple(columns), indexes),
            indexes=indexes,
            version=version,
        )
    except ConfigError as e:
        raise DecodeError(f"simple: {where}: {e.message}") from e


def _column(raw: Any, where: str, *, avro: bool) -> ColumnInfo:
    obj = as_object(raw, where)
    if not avro:
        check_members(obj, COLUMN_MEMBERS, where)
    name = as_str(member(obj, "name", where), path(where, "name"))
    dt_where = path(where, "dataType")
    dt = as_object(member(obj, "dataType", where), dt_where)
    if not avro:
        check_members(dt, DATA_TYPE_MEMBERS, dt_where)
    mysql_type = as_str(member(dt, "mysqlType", dt_where), path(dt_where, "mysqlType"))
    if mysql_type not in ALL_TYPES:
        raise DecodeError(f"simple: {dt_where}.mysqlType: unknown MySQL type {mysql_type!r}")
    charset = as_str(member(dt, "charset", dt_where), path(dt_where, "charset"))
    collate = as_str(member(dt, "collate", dt_where), path(dt_where, "collate"))

    def optional(key: str, kind: str) -> Any:
        value = dt.get(key)
        if value is None:
            return None
        where_key = path(dt_where, key)
        if kind == "int":
            return as_int(value, where_key, lo=-(1 << 31), hi=UINT64_MAX)
        if kind == "bool":
            return as_bool(value, where_key)
        return tuple(as_str(e, f"{where_key}[{i}]") for i, e in enumerate(as_list(value, where_key)))

    length = optional("length", "int")
    decimal = optional("decimal", "int")
    elements = optional("elements", "list") or ()
    unsigned = bool(optional("unsigned", "bool"))
    zerofill = bool(optional("zerofill", "bool"))
    nullable = as_bool(member(obj, "nullable", where), path(where, "nullable"))
    default: str | bytes | None
    raw_default = obj.get("default")
    if raw_default is None:
        default = None
    elif mysql_type == "bit" and not avro and isinstance(raw_default, int) and not isinstance(raw_default, bool):
        value = as_int(raw_default, path(where, "default"), lo=0)
        default = bit_default_from_int(value, length or 1)
    elif mysql_type == "bit" and avro:
        text = as_str(raw_default, path(where, "default"))
        try:
            default = text.encode("latin-1")
        except UnicodeEncodeError:
            default = text.encode("utf-8")
    else:
        default = as_str(raw_default, path(where, "default"))
    text_like = mysql_type in _CHARSET_TYPES
    try:
        return ColumnInfo(
            name=name,
            type=mysql_type,
            unsigned=unsigned,
            zerofill=zerofill,
            nullable=nullable,
            charset=charset if text_like else None,
            collation=collate if text_like else None,
            length=length if length is not None else (0 if not avro else None),
            decimal=decimal,
            elements=elements,
            default=default,
        )
    except ConfigError as e:
        raise DecodeError(f"simple: {where}: {e.message}") from e


def _index(raw: Any, where: str, *, avro: bool) -> IndexInfo:
    obj = as_object(raw, where)
    if not avro:
        check_members(obj, INDEX_MEMBERS, where)
    name = as_str(member(obj, "name", where), path(where, "name"))
    unique = as_bool(member(obj, "unique", where), path(where, "unique"))
    primary = as_bool(member(obj, "primary", where), path(where, "primary"))
    as_bool(member(obj, "nullable", where), path(where, "nullable"))
    cols_where = path(where, "columns")
    columns = tuple(
        as_str(c, f"{cols_where}[{i}]") for i, c in enumerate(as_list(member(obj, "columns", where), cols_where))
    )
    return IndexInfo(name=name, columns=columns, primary=primary, unique=unique)
