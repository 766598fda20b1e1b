"""MySQL column types -> Arrow types both lake formats hold exactly, and row images -> Arrow columns.

Delta and Iceberg share Arrow as their write path (delta-rs and pyiceberg both take Arrow tables), so one mapping
serves both. A value is never narrowed: where a format has no exact type the column is mapped to one that holds
every value (UNSIGNED BIGINT -> DECIMAL(20,0), DECIMAL(M>38) -> its exact text). Temporal values stay the strings
the capture carries (``sparkcdc.model.column_type``): MySQL's zero dates, ``TIME`` beyond 24 h and fsp-exact
fractions fit no Arrow temporal type. The README's lake section lists the mapping; keep the two in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from sparkcdc.model import TableInfo
from sparkcdc.model.column_type import BLOB_TYPES, TEMPORAL_TYPES, TEXT_TYPES
from sparkcdc.model.table import ColumnInfo

MAX_DECIMAL_PRECISION = 38  # Delta's and Iceberg's DECIMAL
_INT32 = frozenset({"tinyint", "smallint", "mediumint"})


def arrow_type(c: ColumnInfo) -> pa.DataType:
    """The Arrow type of column ``c`` (one rule for both formats)."""
    t = c.type
    if t in _INT32 or (t == "int" and not c.unsigned) or t == "year":
        return pa.int32()  # Iceberg has no 8/16-bit integers; int32 holds every TINYINT..MEDIUMINT UNSIGNED
    if t == "int" or (t == "bigint" and not c.unsigned):
        return pa.int64()
    if t == "bigint" or (t == "bit" and c.flen > 63):
        return pa.decimal128(20, 0)  # up to 2**64-1: no 64-bit unsigned type in either format
    if t == "bit":
        return pa.int64()
    if t == "float":
        return pa.float32()
    if t == "double":
        return pa.float64()
    if t == "decimal":
        precision, scale = max(c.flen, 1), max(c.flen_decimal, 0)
        if precision > MAX_DECIMAL_PRECISION:
            return pa.string()  # DECIMAL(39..65): the exact decimal text
        return pa.decimal128(precision, scale)
    if t in BLOB_TYPES or t == "geometry":
        return pa.binary()
    if t in TEXT_TYPES or t in TEMPORAL_TYPES or t in ("enum", "set", "json", "vector"):
        return pa.string()
    raise ValueError(f"column {c.name!r}: no lake type for MySQL type {t!r}")


def arrow_schema(info: TableInfo) -> pa.Schema:
    """The lake table's schema: every column of ``info`` in order; key columns NOT NULL, the others nullable (a
    MERGE's delete rows carry only the key, and a later ALTER may drop a NOT NULL)."""
    return pa.schema([pa.field(c.name, arrow_type(c), nullable=not c.handle_key)
                      for c in info.columns])  # fmt: skip


def _converter(c: ColumnInfo) -> Any:
    """Capture value -> the value the column's Arrow type takes (None stays None)."""
    t = c.type
    if t == "enum":
        names = ("", *c.elements)
        return lambda v: names[v] if isinstance(v, int) and 0 <= v < len(names) else str(v)
    if t == "set":
        elements = c.elements
        return lambda v: ",".join(e for i, e in enumerate(elements) if v >> i & 1) if isinstance(v, int) else str(v)
    typ = arrow_type(c)
    if pa.types.is_decimal(typ):
        return lambda v: v if isinstance(v, Decimal) else Decimal(v)
    if pa.types.is_string(typ):
        return _text
    return None


def _text(v: Any) -> str:
    if isinstance(v, Decimal):
        return format(v, "f")  # str() would give 0E-30 for DECIMAL(65,30) zero
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def to_arrow(info: TableInfo, rows: Sequence[Sequence[Any]], extra: dict[str, pa.Array] | None = None) -> pa.Table:
    """Row images of ``info`` as an Arrow table in :func:`arrow_schema`, plus ``extra`` columns (the merge's
    operation column). Raises pyarrow.ArrowInvalid for a value the type cannot hold (never truncates)."""
    arrays = []
    for i, c in enumerate(info.columns):
        conv, typ = _converter(c), arrow_type(c)
        values = [r[i] for r in rows]
        if conv is not None and c.type not in ("enum", "set"):
            try:  # most columns hold values pyarrow takes as they are (str, Decimal): no Python call per value
                arrays.append(pa.array(values, type=typ))
                continue
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                pass  # bytes not UTF-8, numbers or decimals in a text column, text in a DECIMAL one: converted below
        if conv is not None:
            values = [None if v is None else conv(v) for v in values]
        arrays.append(pa.array(values, type=typ))
    schema = arrow_schema(info)
    table = pa.Table.from_arrays(arrays, schema=schema)
    for name, array in (extra or {}).items():
        table = table.append_column(name, array)
    return table


def pad(table: pa.Table, lake: pa.Schema) -> pa.Table:
    """``table`` with a NULL column for each column the lake table has and ``table`` lacks (rows of an older
    definition replayed after a crash into a table that already followed a later ADD COLUMN), its columns in the
    lake table's order (a column MySQL moved keeps its lake place), then the columns the lake table lacks."""
    have = {name.lower(): name for name in table.column_names}
    for f in lake:
        if f.name.lower() not in have:
            table = table.append_column(pa.field(f.name, f.type), pa.nulls(table.num_rows, f.type))
            have[f.name.lower()] = f.name
    first = [have[f.name.lower()] for f in lake]
    return table.select([*first, *(n for n in table.column_names if n not in set(first))])


_IMPLICIT_ZERO = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "year", "decimal", "float", "double"})


def added_value(c: ColumnInfo) -> Any:
    """The value MySQL gives existing rows for a column added with ``ADD COLUMN``: its constant default, else NULL
    when nullable, else the type's implicit default (0, '', the first ENUM element), converted as the rows are.
    Raises ValueError when that value cannot be known exactly here (an expression default such as
    CURRENT_TIMESTAMP is evaluated by the upstream at ALTER time; temporal, BIT and binary defaults are not
    converted yet)."""
    text = c.default.decode("utf-8", "replace") if isinstance(c.default, bytes) else c.default
    if text is None:
        if c.nullable:
            return None
        if c.type in _IMPLICIT_ZERO:
            text = "0"
        elif c.type in TEXT_TYPES or c.type == "set":
            text = ""
        elif c.type == "enum" and c.elements:
            text = c.elements[0]
        else:
            raise ValueError(f"column {c.name!r}: NOT NULL {c.type} without a default (MySQL's implicit value)")
    if text.startswith("(") or text.upper().startswith("CURRENT_TIMESTAMP") or "(" in text:
        raise ValueError(f"column {c.name!r}: default {text} is computed by the upstream")
    if c.type in TEMPORAL_TYPES - {"year"} or c.type in BLOB_TYPES or c.type in ("bit", "geometry", "json"):
        raise ValueError(f"column {c.name!r}: a {c.type} default is not converted by lake sinks yet")
    value: Any = text
    if c.type in _IMPLICIT_ZERO - {"decimal", "float", "double"}:
        value = int(Decimal(text))
    elif c.type == "decimal":
        value = Decimal(text).quantize(Decimal(1).scaleb(-max(c.flen_decimal, 0)))
    elif c.type in ("float", "double"):
        value = float(text)
    typ = arrow_type(c)
    if pa.types.is_decimal(typ) and not isinstance(value, Decimal):
        value = Decimal(value)
    if pa.types.is_string(typ) and not isinstance(value, str):
        value = _text(value)
    return pa.array([value], type=typ).to_pylist()[0]  # raises ArrowInvalid rather than truncate


def key_table(info: TableInfo, keys: Sequence[Sequence[Any]]) -> pa.Table:
    """The key columns of the given keys, converted as the rows are (:func:`to_arrow`: ENUM keys as their names)."""
    positions = info.handle_key_positions
    images: list[list[Any]] = []
    for key in keys:
        image: list[Any] = [None] * len(info.columns)
        for pos, v in zip(positions, key):
            image[pos] = v
        images.append(image)
    return to_arrow(info, images).select([info.columns[p].name for p in positions])
