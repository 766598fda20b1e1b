"""Per-table image functions generated as Python source: the simple encoder's whole-transaction path.

The generic path (``values.EncodePlan.image``) loops over the columns calling one formatter each, and Avro then
walks fastavro's schema for every message (~20 µs a row). The generated function unpacks the row tuple into
locals and builds the image in one expression whose values are inline: a dict display for JSON (serialized by
the caller with orjson), and for Avro the ``data``/``old`` union member itself, written as Avro binary directly
(``spec/simple.md`` §7: zig-zag varints, length-prefixed UTF-8, one map block of every column).

The generated code never decides anything the generic path would decide differently: a JSON value of an
unexpected class goes through the plan's own formatter, and any exception (a wrong value class, a wrong row
width, an int beyond 64 bits, text that is not UTF-8) makes the caller encode the rows one by one, which either
writes what TiCDC writes or raises EncodeError.
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from sparkcdc.model import TableInfo

from .message import INT64_MAX, INT64_MIN
from .values import EncodePlan, column_kind, decimal_text, float32_text, float64_text

Row = tuple[Any, ...]
JsonImage = Callable[[Row], dict[str, Any]]
AvroImage = Callable[[Row], bytes]

# exceptions the generated code raises for input the generic path must handle (struct.error: FLOAT of a str)
ERRORS: Final = (TypeError, ValueError, AttributeError, OverflowError, IndexError, struct.error)

_SMALL: Final = 1 << 12  # ints in [-_SMALL, _SMALL) are written from a table, without a call
_BYTES: Final = [bytes((i,)) for i in range(0x80)]


def zigzag(n: int) -> bytes:
    """Avro ``long``: zig-zag varint of a 64-bit int, as fastavro writes it. Raises OverflowError beyond 64 bits
    and TypeError for a non-int (fastavro refuses both)."""
    if not INT64_MIN <= n <= INT64_MAX:
        raise OverflowError(f"{n} is out of the Avro long range")
    u = (n << 1) ^ (n >> 63)
    if u < 0x80:
        return _BYTES[u]
    if u < 0x4000:
        return bytes((u & 0x7F | 0x80, u >> 7))
    if u < 0x200000:
        return bytes((u & 0x7F | 0x80, u >> 7 & 0x7F | 0x80, u >> 14))
    if u < 0x10000000:
        return bytes((u & 0x7F | 0x80, u >> 7 & 0x7F | 0x80, u >> 14 & 0x7F | 0x80, u >> 21))
    out = bytearray()
    while u > 0x7F:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


# _ZIGZAG[n] for -_SMALL <= n < _SMALL: negative indexes count from the end
_ZIGZAG: Final = [zigzag(n) for n in range(_SMALL)] + [zigzag(n) for n in range(-_SMALL, 0)]


def _unsigned(n: int) -> bytes:
    """An unsigned column as Avro ``long``: two's complement above INT64_MAX (``values._to_int64``)."""
    return zigzag(n - (1 << 64) if n > INT64_MAX else n)


def _text(s: str) -> bytes:
    """Avro ``string``: length and UTF-8 (UnicodeEncodeError for lone surrogates: the generic path cleans them)."""
    b = s.encode()
    n = len(b)
    return (_ZIGZAG[n] if n < _SMALL else zigzag(n)) + b


def _binary(v: Any) -> bytes:
    """Avro ``bytes`` of a binary column's value (``values._avro_encoder("bin")``)."""
    b = v if isinstance(v, bytes) else str(v).encode()
    n = len(b)
    return (_ZIGZAG[n] if n < _SMALL else zigzag(n)) + b


def _columns(table: TableInfo, plan: EncodePlan) -> list[tuple[str, int, str, Callable[[Any], Any]]] | None:
    """(name, position, kind, generic formatter) in wire order, or None when there is nothing to compile."""
    if not plan.full:
        return None  # an empty image is left out of the message: the generic path knows the rule
    return [(name, pos, column_kind(table.columns[pos]), fmt) for name, pos, fmt in plan.full]


def _unpack(table: TableInfo, positions: set[int]) -> str:
    names = [f"a{i}" if i in positions else "_" for i in range(len(table.columns))]
    return f" {', '.join(names)}, = v"


def compile_json_image(table: TableInfo, plan: EncodePlan, location: str) -> JsonImage | None:
    """``plan.image`` for JSON (equal dicts, in the same key order), or None for a table without columns."""
    columns = _columns(table, plan)
    if columns is None:
        return None
    namespace: dict[str, Any] = {
        "_Decimal": Decimal,
        "_b2a": binascii.b2a_base64,
        "_f32": float32_text,
        "_f64": float64_text,
        "_loc": location,
    }
    items = []
    for i, (name, pos, kind, fmt) in enumerate(columns):
        a = f"a{pos}"
        namespace[f"_g{i}"] = fmt  # the generic formatter, for values of an unexpected class
        if kind in ("int", "uint", "u64"):
            expr = f"str({a})"
        elif kind == "f32":
            expr = f"_f32({a})"
        elif kind == "f64":  # float64_text inline
            expr = f'(_f64({a}) if "e" in (_t := repr({a})) or "n" in _t else (_t[:-2] if _t[-2:] == ".0" else _t))'
        elif kind == "dec":  # str() is format(x, "f") unless it has an exponent, and 4x faster
            expr = f'((_t if "E" not in (_t := str({a})) else _g{i}({a})) if {a}.__class__ is _Decimal else _g{i}({a}))'
        elif kind == "ts":
            expr = f'{{"location": _loc, "value": {a}}}'
        elif kind == "bin":  # base64.b64encode without its Python frame
            expr = f'(_b2a({a}, newline=False).decode("ascii") if {a}.__class__ is bytes else _g{i}({a}))'
        else:
            expr = f"({a} if {a}.__class__ is str else _g{i}({a}))"
        items.append(f"  {name!r}: None if {a} is None else {expr},")
    src = ["def image(v):", _unpack(table, {pos for _, pos, _, _ in columns}), " return {", *items, " }"]
    exec(compile("\n".join(src), "<simple json image>", "exec"), namespace)  # names are repr() literals
    image: JsonImage = namespace["image"]
    return image


# Avro union branch of each value kind in the DML ``data``/``old`` map values (avro_schema._VALUE)
_BRANCH: Final = {"int": 1, "uint": 1, "u64": 7, "f32": 2, "f64": 3, "dec": 4, "ts": 6, "bin": 5, "str": 4}


def compile_avro_image(table: TableInfo, plan: EncodePlan, location: str) -> AvroImage | None:
    """The Avro bytes of the ``data``/``old`` member holding ``plan.image`` (the union's map branch, one block of
    every column, the end block), byte-identical to fastavro's; None for a table without columns."""
    columns = _columns(table, plan)
    if columns is None:
        return None
    namespace: dict[str, Any] = {
        "_join": b"".join,
        "_Decimal": Decimal,
        "_Z": _ZIGZAG,
        "_M": _SMALL,
        "_zz": zigzag,
        "_uzz": _unsigned,
        "_s": _text,
        "_bin": _binary,
        "_dec": decimal_text,
        "_pf": struct.Struct("<f").pack,
        "_pd": struct.Struct("<d").pack,
        "_loc": _text(location),
        "_head": b"\x02" + zigzag(len(columns)),  # map branch of the union, then the block's count
    }
    items = []
    for i, (name, pos, kind, _) in enumerate(columns):
        a = f"a{pos}"
        key = _text(name)
        namespace[f"_n{i}"] = key + b"\x00"  # null branch
        namespace[f"_x{i}"] = key + zigzag(_BRANCH[kind])
        if kind == "int":
            expr = f"(_Z[{a}] if -_M <= {a} < _M else _zz({a}))"
        elif kind in ("uint", "u64"):  # u64: UnsignedBigint{value: long} is the long alone
            expr = f"(_Z[{a}] if 0 <= {a} < _M else _uzz({a}))"
        elif kind == "f32":
            expr = f"_pf({a})"
        elif kind == "f64":
            expr = f"_pd({a})"
        elif kind == "dec":
            expr = f'_s((_t if "E" not in (_t := str({a})) else _dec({a})) if {a}.__class__ is _Decimal else _dec({a}))'
        elif kind == "ts":  # Timestamp{location, value}
            expr = f"_loc + _s({a})"
        elif kind == "bin":
            expr = f"_bin({a})"
        else:  # _text inline
            expr = f"(_Z[_k] if (_k := len(_b := {a}.encode())) < _M else _zz(_k)) + _b"
        items.append(f"  _n{i} if {a} is None else _x{i} + {expr},")
    src = ["def image(v):", _unpack(table, {pos for _, pos, _, _ in columns}), " return _join((_head,", *items,
           ' b"\\x00"))']  # fmt: skip
    exec(compile("\n".join(src), "<simple avro image>", "exec"), namespace)  # names are repr() literals
    image: AvroImage = namespace["image"]
    return image
