"""Column values on the wire (``spec/simple.md`` §2.2 and §7) and back to the model's Python types.

Model value per type (``model/column_type.py``) -> JSON value / Avro union branch:

====================================  ===============================  ========================================
column                                JSON                             Avro
====================================  ===============================  ========================================
signed ints, YEAR (int64)             ``"-128"``                       long
unsigned ints, BIT, ENUM, SET         ``"255"``                        long (int64 two's complement)
BIGINT UNSIGNED                       ``"18446744073709551615"``       UnsignedBigint{value: long} (two's c.)
FLOAT / DOUBLE                        Go ``FormatFloat('f', -1)``      float / double
DECIMAL (``Decimal``)                 ``"-12.50"``                     string
DATE, DATETIME, TIME, JSON, VECTOR    as is                            string
TIMESTAMP                             ``{"location":tz,"value":…}``    Timestamp{location, value}
CHAR/VARCHAR/TEXT (``str``)           raw string                       string
BINARY/VARBINARY/BLOB (``bytes``)     padded base64                    bytes
NULL                                  ``null``                         null
====================================  ===============================  ========================================

Decoding drops the TIMESTAMP ``location`` (the model keeps the text in the capture server's zone).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import numpy as np

from sparkcdc.codec.gofmt import float32, go_float_f
from sparkcdc.errors import DecodeError
from sparkcdc.model import ColumnInfo, TableInfo
from sparkcdc.model.column_type import INTEGER_TYPES

from .message import INT64_MAX, INT64_MIN, TIMESTAMP_MEMBERS, UINT64_MAX

AVRO_TIMESTAMP: Final = "com.pingcap.simple.avro.Timestamp"
AVRO_UNSIGNED_BIGINT: Final = "com.pingcap.simple.avro.UnsignedBigint"

_DEC_RE: Final = re.compile(r"-?[0-9]+(\.[0-9]+)?")
_FLOAT_RE: Final = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[Ii]nf(?:inity)?|NaN)")


def column_kind(col: ColumnInfo) -> str:
    """Value kind of a column: int, uint, u64, f32, f64, dec, ts, bin or str."""
    t = col.type
    if t in INTEGER_TYPES:
        if not col.unsigned:
            return "int"
        return "u64" if t == "bigint" else "uint"
    if t == "year":
        return "int"
    if t in ("bit", "enum", "set"):
        return "uint"
    if t == "float":
        return "f32"
    if t == "double":
        return "f64"
    if t == "decimal":
        return "dec"
    if t == "timestamp":
        return "ts"
    if col.is_binary:
        return "bin"
    return "str"


def _to_int64(v: int) -> int:
    return v - (1 << 64) if v > INT64_MAX else v


# --- encoding ----------------------------------------------------------------------------------------


def float64_text(value: float) -> str:
    """``go_float_f(value, 64)``; ``repr`` already has the shortest digits when it is positional."""
    text = repr(value)
    if "e" in text or "n" in text:  # exponent, inf, nan
        return go_float_f(value, 64)
    return text[:-2] if text.endswith(".0") else text


def float32_text(value: float) -> str:
    """``go_float_f(value, 32)``, through numpy's shortest-digit formatter (5x faster) for finite values.

    Both print the shortest float32 round-trip digits positionally; tests check they agree.
    """
    if math.isfinite(value):
        return np.format_float_positional(np.float32(value), unique=True, trim="-")
    return go_float_f(value, 32)


def decimal_text(value: Any) -> str:
    """A DECIMAL value's wire text: the model's ``Decimal`` positionally, text as it is."""
    return value if isinstance(value, str) else format(value, "f")


def _json_encoder(kind: str, location: str) -> Callable[[Any], Any]:
    if kind in ("int", "uint", "u64"):
        return str
    if kind == "f32":
        return float32_text
    if kind == "f64":
        return float64_text
    if kind == "dec":
        return decimal_text
    if kind == "ts":
        return lambda v: {"location": location, "value": v}
    if kind == "bin":
        return lambda v: base64.b64encode(v if isinstance(v, bytes) else str(v).encode()).decode("ascii")
    return lambda v: v if isinstance(v, str) else bytes(v).decode("utf-8", "replace")


def _avro_encoder(kind: str, location: str) -> Callable[[Any], Any]:
    if kind == "int":
        return lambda v: ("long", v)
    if kind == "uint":
        return lambda v: ("long", _to_int64(v))
    if kind == "u64":
        return lambda v: (AVRO_UNSIGNED_BIGINT, {"value": _to_int64(v)})
    if kind == "f32":
        return lambda v: ("float", v)
    if kind == "f64":
        return lambda v: ("double", v)
    if kind == "dec":
        return lambda v: ("string", decimal_text(v))
    if kind == "ts":
        return lambda v: (AVRO_TIMESTAMP, {"location": location, "value": v})
    if kind == "bin":
        return lambda v: ("bytes", v if isinstance(v, bytes) else str(v).encode())
    return lambda v: ("string", v if isinstance(v, str) else bytes(v).decode("utf-8", "replace"))


@dataclass(frozen=True, slots=True)
class EncodePlan:
    """Columns of one table in wire order (sorted names, virtual columns dropped) with their formatters."""

    table: TableInfo
    full: tuple[tuple[str, int, Callable[[Any], Any]], ...]
    keys: tuple[tuple[str, int, Callable[[Any], Any]], ...]

    def image(self, row: tuple[Any, ...], handle_key_only: bool = False) -> dict[str, Any]:
        cols = self.keys if handle_key_only else self.full
        try:
            return {name: None if (v := row[pos]) is None else fmt(v) for name, pos, fmt in cols}
        except IndexError:
            raise ValueError(
                f"row has {len(row)} values but table {self.table.qualified_name} has {len(self.table.columns)} columns"
            ) from None


def encode_plan(table: TableInfo, *, avro: bool, location: str) -> EncodePlan:
    make = _avro_encoder if avro else _json_encoder
    entries = sorted(
        (col.name, pos, make(column_kind(col), location), col.handle_key)
        for pos, col in table.iter_columns(include_virtual=False)
    )
    full = tuple((name, pos, fmt) for name, pos, fmt, _ in entries)
    keys = tuple((name, pos, fmt) for name, pos, fmt, handle in entries if handle)
    return EncodePlan(table, full, keys)


# --- decoding ----------------------------------------------------------------------------------------
#
# Value decoders take the wire value only and raise _Bad; DecodePlan.image adds the member path, so the
# common path builds no strings.


class _Bad(Exception):
    def __init__(self, what: str, value: Any, suffix: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.value = value
        self.suffix = suffix

    def error(self, where: str) -> DecodeError:
        if self.what.startswith("is "):
            return DecodeError(f"simple: {where}{self.suffix} {self.what}: {self.value}")
        shown = repr(self.value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return DecodeError(f"simple: {where}{self.suffix} must be {self.what}, got {shown}")


def _int_text(v: Any) -> int:
    if not isinstance(v, str) or not v.isascii():
        raise _Bad("a decimal integer string", v)
    digits = v[1:] if v[:1] in ("-", "+") else v
    if not digits.isdigit():
        raise _Bad("a decimal integer string", v)
    return int(v)


def _json_int(v: Any) -> int:
    value = _int_text(v)
    if not INT64_MIN <= value <= INT64_MAX:
        raise _Bad("is out of range", v)
    return value


def _json_uint(v: Any) -> int:
    value = _int_text(v)
    if not 0 <= value <= UINT64_MAX:
        raise _Bad("is out of range", v)
    return value


def _json_decoder(kind: str) -> Callable[[Any], Any]:
    if kind == "int":
        return _json_int
    if kind in ("uint", "u64"):
        return _json_uint
    if kind == "f32":
        return _json_float32
    if kind == "f64":
        return _json_float64
    if kind == "dec":
        return _json_decimal
    if kind == "ts":
        return _json_timestamp
    if kind == "bin":
        return _json_binary
    return _text


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise _Bad("a string", v)
    return v


def _json_float64(v: Any) -> float:
    if not isinstance(v, str) or not _FLOAT_RE.fullmatch(v):
        raise _Bad("a decimal number string", v)
    return float(v)


def _json_float32(v: Any) -> float:
    value = _json_float64(v)
    try:
        return float32(value)
    except OverflowError:
        raise _Bad("is out of FLOAT range", v) from None


def _json_decimal(v: Any) -> Decimal:
    if not isinstance(v, str) or not _DEC_RE.fullmatch(v):
        raise _Bad("a DECIMAL string", v)
    try:
        return Decimal(v)
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid literals
        raise _Bad("a DECIMAL string", v) from None


def _json_binary(v: Any) -> bytes:
    if not isinstance(v, str):
        raise _Bad("a base64 string", v)
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise _Bad("a padded base64 string", v) from None


def _json_timestamp(v: Any) -> str:
    if not isinstance(v, dict):
        raise _Bad('an object {"location", "value"}', v)
    for key in v:
        if key not in TIMESTAMP_MEMBERS:
            raise _Bad("is an unknown member", key, f".{key}")
    location = v.get("location")
    if not isinstance(location, str):
        raise _Bad("a string", location, ".location")
    value = v.get("value")
    if not isinstance(value, str):
        raise _Bad("a string", value, ".value")
    return value


def _avro_int(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise _Bad("a long", v)
    return v


def _avro_uint(v: Any) -> int:
    value = _avro_int(v)
    return value + (1 << 64) if value < 0 else value


def _avro_float(v: Any) -> float:
    if not isinstance(v, float):
        raise _Bad("a float", v)
    return v


def _avro_bytes(v: Any) -> bytes:
    if not isinstance(v, bytes):
        raise _Bad("bytes", v)
    return v


def _avro_record(v: Any, name: str) -> dict[str, Any]:
    if isinstance(v, tuple) and len(v) == 2 and v[0] == name and isinstance(v[1], dict):
        return v[1]
    raise _Bad(f"a {name.rsplit('.', 1)[-1]} record", v)


def _avro_unsigned_bigint(v: Any) -> int:
    value = _avro_record(v, AVRO_UNSIGNED_BIGINT).get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Bad("a long", value, ".value")
    return value + (1 << 64) if value < 0 else value


def _avro_timestamp(v: Any) -> str:
    value = _avro_record(v, AVRO_TIMESTAMP).get("value")
    if not isinstance(value, str):
        raise _Bad("a string", value, ".value")
    return value


def _avro_decoder(kind: str) -> Callable[[Any], Any]:
    if kind == "int":
        return _avro_int
    if kind == "uint":
        return _avro_uint
    if kind == "u64":
        return _avro_unsigned_bigint
    if kind in ("f32", "f64"):
        return _avro_float
    if kind == "dec":
        return _json_decimal
    if kind == "ts":
        return _avro_timestamp
    if kind == "bin":
        return _avro_bytes
    return _text


@dataclass(frozen=True, slots=True)
class DecodePlan:
    """Column name -> (position, typed decoder) for one table version."""

    table: TableInfo
    columns: Mapping[str, tuple[int, Callable[[Any], Any]]]

    def image(self, raw: Mapping[str, Any], where: str) -> tuple[Any, ...]:
        """A row tuple aligned with ``table.columns``; absent columns (virtual, or not sent) are None.

        Raises DecodeError naming ``<where>.<column>`` for a value of the wrong shape or an unknown column.
        """
        values: list[Any] = [None] * len(self.table.columns)
        columns = self.columns
        name = ""
        try:
            for name, value in raw.items():
                pos, dec = columns[name]
                if value is not None:
                    values[pos] = dec(value)
        except KeyError:
            raise DecodeError(
                f"simple: {where}.{name}: unknown column of {self.table.qualified_name} version {self.table.version}"
            ) from None
        except _Bad as e:
            raise e.error(f"{where}.{name}") from None
        return tuple(values)


def decode_plan(table: TableInfo, *, avro: bool) -> DecodePlan:
    make = _avro_decoder if avro else _json_decoder
    return DecodePlan(table, {col.name: (pos, make(column_kind(col))) for pos, col in enumerate(table.columns)})
