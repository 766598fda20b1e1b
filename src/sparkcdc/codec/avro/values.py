"""Each MySQL column as TiCDC's avro protocol carries it: its Avro type (with ``connect.parameters``), the datum of
a value, the schema default, and the way back from a datum to the model's value.

TiCDC's table (``columnToAvroSchema``/``columnToAvroData``): integers are ``int`` (INT UNSIGNED ``long``), BIGINT is
``long`` (UNSIGNED wraps to a negative long above 2^63-1, or is a ``string`` with
``avro-bigint-unsigned-handling-mode=string``), FLOAT ``float``, DOUBLE ``double``, BIT ``bytes`` (big-endian, leading
zero bytes dropped), DECIMAL ``bytes`` with logical type ``decimal`` (two's complement of the unscaled value, the
fewest bytes) or a ``string`` with ``avro-decimal-handling-mode=string``, text ``string`` and binary ``bytes``,
ENUM/SET ``string`` (the element names; ``allowed`` lists them), JSON/DATE/DATETIME/TIMESTAMP/TIME ``string``, YEAR
``int``, VECTOR ``string``. ``tidb_type`` names TiDB's type (``INT UNSIGNED``, ``BLOB`` for binary text).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, ROUND_FLOOR, Context, Decimal, InvalidOperation
from typing import Any, Final

import orjson

from sparkcdc.codec.avro.config import AvroConfig
from sparkcdc.codec.avro.message import escape_element
from sparkcdc.codec.gofmt import float32, go_json_float
from sparkcdc.errors import DecodeError, EncodeError
from sparkcdc.model.column_type import BLOB_TYPES, TEXT_TYPES
from sparkcdc.model.table import ColumnInfo

INT64_MAX: Final = (1 << 63) - 1
UINT64: Final = 1 << 64
# Exact decimal arithmetic: scaling by 10^scale and flooring never round, whatever the value's digits.
_EXACT: Final = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, rounding=ROUND_FLOOR)

_TIDB_TYPE: Final = {
    "tinyint": "INT",
    "smallint": "INT",
    "mediumint": "INT",
    "int": "INT",
    "bigint": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "bit": "BIT",
    "decimal": "DECIMAL",
    **{t: "TEXT" for t in TEXT_TYPES | BLOB_TYPES},
    "enum": "ENUM",
    "set": "SET",
    "json": "JSON",
    "date": "DATE",
    "datetime": "DATETIME",
    "timestamp": "TIMESTAMP",
    "time": "TIME",
    "year": "YEAR",
    "vector": "TiDBVECTORFloat32",
}
_STRING_TYPES: Final = frozenset({"json", "date", "datetime", "timestamp", "time", "vector"})


def tidb_type(col: ColumnInfo) -> str:
    """TiCDC's ``getTiDBTypeFromColumn``. Raises EncodeError for a type TiDB does not have (GEOMETRY)."""
    tt = _TIDB_TYPE.get(col.type)
    if tt is None:
        raise EncodeError(
            f"avro: column {col.name!r} has type {col.type.upper()}, which TiCDC's avro protocol cannot carry; "
            "leave the table out with a filter rule or use another protocol",
            code="CDC:ErrAvroEncodeFailed",
        )
    if col.unsigned and tt in ("INT", "BIGINT"):
        return tt + " UNSIGNED"
    if col.is_binary and tt == "TEXT":
        return "BLOB"
    return tt


def is_logical(col: ColumnInfo, cfg: AvroConfig) -> bool:
    """A precise DECIMAL: TiCDC gives it no default (goavro cannot hold one for a logical type)."""
    return col.type == "decimal" and cfg.decimal_handling_mode == "precise"


def avro_type(col: ColumnInfo, cfg: AvroConfig) -> dict[str, Any]:
    """The column's Avro type, its members in the order Go's ``json.Marshal`` writes TiCDC's structs (``type``,
    ``connect.parameters`` with its keys sorted, then a logical type's ``logicalType``/``precision``/``scale``)."""
    params: dict[str, str] = {"tidb_type": tidb_type(col)}
    t = col.type
    if t in ("tinyint", "smallint", "mediumint", "year"):
        kind = "int"
    elif t == "int":
        kind = "long" if col.unsigned else "int"
    elif t == "bigint":
        kind = "string" if col.unsigned and cfg.bigint_unsigned_handling_mode == "string" else "long"
    elif t in ("float", "double"):
        kind = t
    elif t == "bit":
        kind = "bytes"
        params = {"length": str(col.flen), **params}
    elif t == "decimal":
        if is_logical(col, cfg):
            return {"type": "bytes", "connect.parameters": params, "logicalType": "decimal",
                    "precision": col.flen, "scale": col.flen_decimal}  # fmt: skip
        kind = "string"
    elif t in ("enum", "set"):
        kind = "string"
        params = {"allowed": ",".join(escape_element(e) for e in col.elements), **params}
    elif col.is_binary:
        kind = "bytes"
    else:  # text types and the _STRING_TYPES
        kind = "string"
    return {"type": kind, "connect.parameters": params}


def datum_writer(col: ColumnInfo, cfg: AvroConfig) -> Callable[[Any], Any]:
    """A function from the model's value of ``col`` (never None) to the Avro datum TiCDC writes."""
    t = col.type
    if t == "bigint" and col.unsigned:
        if cfg.bigint_unsigned_handling_mode == "string":
            return str
        return _wrap_uint64
    if t in ("tinyint", "smallint", "mediumint", "int", "bigint", "year", "float", "double"):
        return _same
    if t == "bit":
        return _bit_bytes
    if t == "decimal":
        if is_logical(col, cfg):
            scale = col.flen_decimal
            return lambda v: decimal_bytes(v, scale)
        return _decimal_text
    if t == "enum":
        elements = col.elements
        return lambda v: enum_name(elements, v, col.name)
    if t == "set":
        elements = col.elements
        return lambda v: set_names(elements, v, col.name)
    if col.is_binary:
        return _as_bytes
    return _as_text


def default_datum(col: ColumnInfo, cfg: AvroConfig) -> Any:
    """The schema's ``default`` for ``col`` as Go's JSON writes TiCDC's default value (None: no default). BIT and
    binary defaults are base64 text (Go marshals ``[]byte`` so); a default TiCDC could not parse is left out."""
    raw = col.default
    if raw is None or is_logical(col, cfg):
        return None
    t = col.type
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        if t in ("tinyint", "smallint", "mediumint", "int", "year"):
            return int(text)
        if t == "bigint":
            if col.unsigned and cfg.bigint_unsigned_handling_mode == "string":
                return text
            return _wrap_uint64(int(text)) if col.unsigned else int(text)
        if t in ("float", "double"):
            value = float(text)
            value = float32(value) if t == "float" else value
            return orjson.Fragment(go_json_float(value).encode()) if math.isfinite(value) else None
        if t == "bit":
            from sparkcdc.codec.simple.table_schema import bit_default_from_int, bit_default_to_int

            return base64.b64encode(bit_default_from_int(bit_default_to_int(raw), col.flen)).decode()
    except (ValueError, OverflowError):
        return None
    if col.is_binary:
        return base64.b64encode(raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")).decode()
    return text


def datum_reader(col: ColumnInfo, cfg: AvroConfig) -> Callable[[Any], Any]:
    """The way back: an Avro datum of ``col`` (never None) to the model's value. Raises DecodeError."""
    t = col.type
    if t == "bigint" and col.unsigned:
        return _read_uint64
    if t in ("tinyint", "smallint", "mediumint", "int", "bigint", "year"):
        return _read_int
    if t == "float":
        return lambda v: float32(float(v))
    if t == "double":
        return float
    if t == "bit":
        return lambda v: int.from_bytes(_bytes(v), "big")
    if t == "decimal":
        scale = col.decimal
        return lambda v: _read_decimal(v, scale)
    if t == "enum":
        index = {e: i for i, e in enumerate(col.elements, 1)}
        return lambda v: _read_enum(index, v, col.name)
    if t == "set":
        bits = {e: 1 << i for i, e in enumerate(col.elements)}
        return lambda v: _read_set(bits, v, col.name)
    if col.is_binary:
        return _bytes
    return _text


# --- writers ----------------------------------------------------------------------------------------


def _same(v: Any) -> Any:
    return v


def _wrap_uint64(v: int) -> int:
    """TiCDC's ``int64(uint64)``: values above 2^63-1 become negative longs."""
    return v - UINT64 if v > INT64_MAX else v


def _bit_bytes(v: int) -> bytes:
    """TiDB's ``NewBinaryLiteralFromUint(v, -1)``: big-endian with leading zero bytes trimmed, at least one byte."""
    return int(v).to_bytes(max(1, (int(v).bit_length() + 7) // 8), "big")


def decimal_bytes(value: Any, scale: int) -> bytes:
    """goavro's ``bytes.decimal``: the value times 10^scale, floored (Go's Euclidean ``big.Int.Div``), as the
    fewest bytes of big-endian two's complement (``0`` is one zero byte)."""
    d = value if isinstance(value, Decimal) else Decimal(str(value))
    if not d.is_finite():
        raise EncodeError(f"avro: decimal value {d} cannot be encoded", code="CDC:ErrAvroEncodeFailed")
    # decimal's own scaling (4x faster than rebuilding the unscaled integer from the digit tuple)
    n = int(d.scaleb(scale, _EXACT).to_integral_value(ROUND_FLOOR, _EXACT))
    return n.to_bytes((n if n >= 0 else ~n).bit_length() // 8 + 1, "big", signed=True)


def _decimal_text(v: Any) -> str:
    return v if isinstance(v, str) else format(v, "f")


def enum_name(elements: tuple[str, ...], v: int, column: str) -> str:
    """TiDB's ``ParseEnumValue``: the 1-based element; the empty error value 0 is ``""``."""
    if v == 0:
        return ""
    if not 1 <= v <= len(elements):
        raise EncodeError(f"avro: ENUM column {column!r} has index {v}, beyond its {len(elements)} elements",
                          code="CDC:ErrAvroEncodeFailed")  # fmt: skip
    return elements[v - 1]


def set_names(elements: tuple[str, ...], v: int, column: str) -> str:
    """TiDB's ``ParseSetValue``: the names of the set bits, in element order, joined by ``,``."""
    if v >> len(elements):
        raise EncodeError(f"avro: SET column {column!r} has bits {v:#x} beyond its {len(elements)} elements",
                          code="CDC:ErrAvroEncodeFailed")  # fmt: skip
    return ",".join(e for i, e in enumerate(elements) if v >> i & 1)


def _as_bytes(v: Any) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode("utf-8", "surrogatepass")


def _as_text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            return v.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        return v
    return str(v)


# --- readers ----------------------------------------------------------------------------------------


def _bytes(v: Any) -> bytes:
    if isinstance(v, bytes):
        return v
    raise DecodeError(f"avro: expected bytes, got {type(v).__name__}")


def _text(v: Any) -> str:
    if isinstance(v, str):
        return v
    raise DecodeError(f"avro: expected a string, got {type(v).__name__}")


def _read_int(v: Any) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            pass
    raise DecodeError(f"avro: expected an integer, got {v!r}")


def _read_uint64(v: Any) -> int:
    """BIGINT UNSIGNED in either mode: a long wrapped below zero comes back above 2^63-1."""
    n = _read_int(v)
    return n + UINT64 if n < 0 else n


def _read_decimal(v: Any, scale: int | None) -> Decimal:
    if isinstance(v, Decimal):
        return v
    if isinstance(v, bytes):
        n = int.from_bytes(v, "big", signed=True)
        return Decimal(n).scaleb(-(scale or 0))
    if isinstance(v, str):
        try:
            return Decimal(v)
        except InvalidOperation:
            pass
    raise DecodeError(f"avro: expected a decimal, got {v!r}")


def _read_enum(index: dict[str, int], v: Any, column: str) -> int:
    name = _text(v)
    if name == "":
        return 0
    found = index.get(name)
    if found is None:
        raise DecodeError(f"avro: ENUM column {column!r} has value {name!r}, not one of its elements")
    return found


def _read_set(bits: dict[str, int], v: Any, column: str) -> int:
    text = _text(v)
    mask = 0
    for name in text.split(",") if text else ():
        bit = bits.get(name)
        if bit is None:
            raise DecodeError(f"avro: SET column {column!r} has value {name!r}, not one of its elements")
        mask |= bit
    return mask
