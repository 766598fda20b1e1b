# ruff: noqa: UP031  (printf-style formatting is the fastest option on this hot path)
"""MySQL 5.7+/8 binary JSON (``JSON`` columns, binlog type 245) to the JSON text MySQL prints.

MariaDB's JSON is a LONGTEXT alias and arrives as text, so this is only used for MySQL upstreams. Layout:
a type byte then the value; objects/arrays hold element counts and sizes (2-byte offsets in the "small"
form, 4-byte in the "large" one), key entries, then value entries that inline small scalars.
"""

from __future__ import annotations

import base64
import struct

from sparkcdc.errors import CorruptDataError

_SMALL_OBJ, _LARGE_OBJ, _SMALL_ARR, _LARGE_ARR, _LITERAL = 0, 1, 2, 3, 4
_INT16, _UINT16, _INT32, _UINT32, _INT64, _UINT64, _DOUBLE, _STRING, _OPAQUE = 5, 6, 7, 8, 9, 10, 11, 12, 15

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def decode_json_binary(data: bytes) -> str:
    """Render a binary JSON document; an empty value (possible for NULL-ish partial images) is ``null``.
    Raises CorruptDataError on malformed input."""
    if not data:
        return "null"
    try:
        return _value(data[0], data, 1, len(data))
    except (IndexError, struct.error, UnicodeDecodeError) as e:
        raise CorruptDataError(f"malformed MySQL binary JSON: {e}") from e


def _quote(s: str) -> str:
    out = []
    for ch in s:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _varlen(data: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _double(d: float) -> str:
    text = repr(d)
    if "e" in text:
        mant, exp = text.split("e")
        return f"{mant.removesuffix('.0')}e{int(exp)}"
    return text


def _value(typ: int, data: bytes, pos: int, end: int) -> str:
    if typ in (_SMALL_OBJ, _LARGE_OBJ, _SMALL_ARR, _LARGE_ARR):
        return _container(typ, data, pos)
    if typ == _LITERAL:
        return {0: "null", 1: "true", 2: "false"}[data[pos]]
    if typ == _INT16:
        return str(struct.unpack_from("<h", data, pos)[0])
    if typ == _UINT16:
        return str(struct.unpack_from("<H", data, pos)[0])
    if typ == _INT32:
        return str(struct.unpack_from("<i", data, pos)[0])
    if typ == _UINT32:
        return str(struct.unpack_from("<I", data, pos)[0])
    if typ == _INT64:
        return str(struct.unpack_from("<q", data, pos)[0])
    if typ == _UINT64:
        return str(struct.unpack_from("<Q", data, pos)[0])
    if typ == _DOUBLE:
        return _double(struct.unpack_from("<d", data, pos)[0])
    if typ == _STRING:
        n, pos = _varlen(data, pos)
        return _quote(data[pos : pos + n].decode("utf-8"))
    if typ == _OPAQUE:
        return _opaque(data, pos)
    raise CorruptDataError(f"unknown MySQL binary JSON type {typ}")


def _opaque(data: bytes, pos: int) -> str:
    field_type = data[pos]
    n, pos = _varlen(data, pos + 1)
    raw = data[pos : pos + n]
    if field_type == 246:  # DECIMAL: precision, scale, binary decimal
        from sparkcdc.capture.values import decimal_size, read_decimal

        prec, scale = raw[0], raw[1]
        return str(read_decimal(raw, 2, prec, scale, decimal_size(prec, scale)))
    if field_type in (7, 10, 12, 11):  # TIMESTAMP, DATE, DATETIME, TIME as packed int64
        (packed,) = struct.unpack_from("<q", raw, 0)
        neg = packed < 0
        packed = -packed if neg else packed
        frac = packed & 0xFFFFFF
        whole = packed >> 24
        frac_text = ".%06d" % frac if frac else ""
        if field_type == 11:
            hms = whole
            sign = "-" if neg else ""
            return '"%s%02d:%02d:%02d%s"' % (sign, (hms >> 12) % 1024, (hms >> 6) % 64, hms % 64, frac_text)
        ymd = whole >> 17
        ym = ymd >> 5
        hms = whole % (1 << 17)
        date = "%04d-%02d-%02d" % (ym // 13, ym % 13, ymd % 32)
        if field_type == 10:
            return f'"{date}"'
        return '"%s %02d:%02d:%02d%s"' % (date, hms >> 12, (hms >> 6) % 64, hms % 64, frac_text)
    return '"base64:type%d:%s"' % (field_type, base64.b64encode(raw).decode())


def _container(typ: int, data: bytes, start: int) -> str:
    large = typ in (_LARGE_OBJ, _LARGE_ARR)
    is_obj = typ in (_SMALL_OBJ, _LARGE_OBJ)
    off_fmt, off_size = ("<I", 4) if large else ("<H", 2)
    count = struct.unpack_from(off_fmt, data, start)[0]
    pos = start + 2 * off_size
    keys: list[str] = []
    if is_obj:
        for _ in range(count):
            koff = struct.unpack_from(off_fmt, data, pos)[0]
            klen = struct.unpack_from("<H", data, pos + off_size)[0]
            keys.append(data[start + koff : start + koff + klen].decode("utf-8"))
            pos += off_size + 2
    values: list[str] = []
    for _ in range(count):
        vtype = data[pos]
        if vtype == _LITERAL or vtype in (_INT16, _UINT16) or (large and vtype in (_INT32, _UINT32)):
            values.append(_value(vtype, data, pos + 1, len(data)))
        else:
            voff = struct.unpack_from(off_fmt, data, pos + 1)[0]
            values.append(_value(vtype, data, start + voff, len(data)))
        pos += 1 + off_size
    if is_obj:
        return "{" + ", ".join(f"{_quote(k)}: {v}" for k, v in zip(keys, values)) + "}"
    return "[" + ", ".join(values) + "]"
