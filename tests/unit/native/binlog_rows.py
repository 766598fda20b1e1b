"""Binlog rows events built from a TableInfo and rows of model values (the inverse of the capture's decoder).

``rows_events(table, rows)`` returns the ``RowsEvent`` objects the capture would yield with ``raw_rows=True`` for a
transaction holding ``rows``: a table map derived from the column types (MySQL's binlog types and metadata, with
collations), and one rows event per run of rows with the same op. Decoding them in Python gives ``rows`` back, which
the tests check, so both paths start from the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, tzinfo
from decimal import Decimal
from typing import Any

from sparkcdc.capture import table_map as tm
from sparkcdc.capture.row_decoder import RowDecoder
from sparkcdc.capture.rows_layout import Layout
from sparkcdc.capture.values import decimal_size
from sparkcdc.model import ColumnInfo, RowChange, RowOp, RowsEvent, TableInfo

# one collation id per charset the capture decodes (charsets._RANGES)
COLLATIONS = {
    "utf8mb4": 45, "utf8mb3": 33, "latin1": 8, "binary": 63, "big5": 1, "latin2": 9, "dec8": 3, "cp850": 4,
    "hp8": 6, "koi8r": 7, "swe7": 10, "ascii": 11, "ujis": 12, "sjis": 13, "cp1251": 14, "hebrew": 16,
    "tis620": 18, "euckr": 19, "latin7": 20, "koi8u": 22, "gb2312": 24, "greek": 25, "cp1250": 26, "gbk": 28,
    "cp1257": 29, "latin5": 30, "armscii8": 32, "ucs2": 35, "cp866": 36, "keybcs2": 37, "macce": 38,
    "macroman": 39, "cp852": 40, "utf16": 54, "utf16le": 56, "cp1256": 57, "utf32": 60, "geostd8": 92,
    "cp932": 95, "eucjpms": 97,
}  # fmt: skip
PY_CODECS = {"utf8mb4": "utf-8", "utf8mb3": "utf-8", "latin1": "cp1252", "ascii": "ascii", "gbk": "gbk",
             "big5": "big5", "ujis": "euc_jp", "sjis": "shift_jis", "cp1251": "cp1251", "utf16": "utf-16-be",
             "utf32": "utf-32-be", "ucs2": "utf-16-be", "latin2": "iso8859-2"}  # fmt: skip

_INT = {"tinyint": (tm.T_TINY, 1), "smallint": (tm.T_SHORT, 2), "mediumint": (tm.T_INT24, 3),
        "int": (tm.T_LONG, 4), "bigint": (tm.T_LONGLONG, 8)}  # fmt: skip
_TEXT_BLOB = {"tinytext": 1, "text": 2, "mediumtext": 3, "longtext": 4, "tinyblob": 1, "blob": 2, "mediumblob": 3,
              "longblob": 4}  # fmt: skip


def fit_table(rows: Sequence[RowChange]) -> list[RowChange]:
    """``rows`` with a table whose DECIMAL and fractional-second columns without a declared scale get the one
    their values have (vector tables often leave them out; the binlog needs them)."""
    table = rows[0].table
    columns = list(table.columns)
    changed = False
    for i, c in enumerate(columns):
        values = [v for r in rows for image in (r.before, r.after) if image is not None and (v := image[i]) is not None]
        if c.type == "decimal" and c.decimal is None and values and all(isinstance(v, Decimal) for v in values):
            scale = max(max(0, -int(v.as_tuple().exponent)) for v in values)
            digits = max(len(v.as_tuple().digits) + max(0, int(v.as_tuple().exponent)) for v in values)
            columns[i] = replace(c, length=min(65, max(digits, scale) + 10), decimal=scale)
            changed = True
        elif c.type in ("datetime", "timestamp", "time") and c.decimal is None and values:
            fsp = max(len(str(v).partition(".")[2]) for v in values)
            if fsp:
                columns[i] = replace(c, decimal=min(fsp, 6))
                changed = True
    if not changed:
        return list(rows)
    fitted = TableInfo(table.schema, table.table, table.table_id, tuple(columns), table.indexes, table.version,
                       table.partitions, table.charset, table.collation)  # fmt: skip
    return [RowChange(r.commit_ts, fitted, r.op, r.before, r.after, r.physical_table_id, r.start_ts) for r in rows]


def column_map(col: ColumnInfo, json_binary: bool = False) -> tuple[int, int | tuple[int, int], int]:
    """(binlog type, table-map metadata, collation id) of a column."""
    t = col.type
    charset = "binary" if col.is_binary else (col.charset or "utf8mb4")
    coll = COLLATIONS[charset] if t in ("char", "varchar", "binary", "varbinary") or t in _TEXT_BLOB else 0
    if t in _INT:
        return _INT[t][0], 0, 0
    if t == "float":
        return tm.T_FLOAT, 4, 0
    if t == "double":
        return tm.T_DOUBLE, 8, 0
    if t == "decimal":
        return tm.T_NEWDECIMAL, (col.length or 10, col.decimal or 0), 0
    if t == "date":
        return tm.T_DATE, 0, 0
    if t == "datetime":
        return tm.T_DATETIME2, col.fsp, 0
    if t == "timestamp":
        return tm.T_TIMESTAMP2, col.fsp, 0
    if t == "time":
        return tm.T_TIME2, col.fsp, 0
    if t == "year":
        return tm.T_YEAR, 0, 0
    if t == "bit":
        bits = col.length or 64
        return tm.T_BIT, (bits % 8, bits // 8), 0
    if t == "enum":
        return tm.T_ENUM, 1 if len(col.elements) < 256 else 2, COLLATIONS["utf8mb4"]
    if t == "set":
        n = max(1, (len(col.elements) + 7) // 8)
        return tm.T_SET, n if n <= 4 else 8, COLLATIONS["utf8mb4"]
    if t in ("char", "binary"):
        return tm.T_STRING, max_bytes(col), coll
    if t in ("varchar", "varbinary"):
        return tm.T_VARCHAR, max_bytes(col), coll
    if t in _TEXT_BLOB:
        return tm.T_BLOB, _TEXT_BLOB[t], coll
    if t == "json":
        if json_binary:
            return tm.T_JSON, 4, 0
        return tm.T_BLOB, 4, COLLATIONS["utf8mb4"]
    if t == "geometry":
        return tm.T_GEOMETRY, 4, 0
    raise ValueError(f"no binlog type for {t}")


def max_bytes(col: ColumnInfo) -> int:
    per_char = 1 if col.is_binary else {"utf8mb4": 4, "utf8mb3": 3, "utf16": 4, "utf32": 4, "ucs2": 2}.get(
        col.charset or "utf8mb4", 2)  # fmt: skip
    return (col.length or (255 if col.type in ("char", "binary") else 1000)) * per_char


def table_map(table: TableInfo, json_binary: bool = False) -> tm.TableMap:
    types, metas, unsigned, collations = [], [], [], []
    for c in table.columns:
        typ, meta, coll = column_map(c, json_binary)
        types.append(typ)
        metas.append(meta)
        unsigned.append(c.unsigned and typ in tm.SIGNEDNESS_TYPES)
        collations.append(coll)
    return tm.TableMap(
        table_id=table.table_id,
        schema=table.schema,
        table=table.table,
        types=tuple(types),
        meta=tuple(metas),
        nullable=tuple(c.nullable for c in table.columns),
        unsigned=tuple(unsigned),
        collations=tuple(collations),
        names=tuple(c.name for c in table.columns),
        enum_values={i: c.elements for i, c in enumerate(table.columns) if c.type == "enum"},
        set_values={i: c.elements for i, c in enumerate(table.columns) if c.type == "set"},
        primary_key=tuple(i for i, c in enumerate(table.columns) if c.primary_key),
    )


def _frac(fsp: int, micro: int) -> bytes:
    fb = (fsp + 1) // 2
    if fb == 0:
        return b""
    scale = 10000 if fb == 1 else 100 if fb == 2 else 1
    return (micro // scale).to_bytes(fb, "big")


def _micro(text: str, fsp: int) -> tuple[str, int]:
    whole, _, frac = text.partition(".")
    return whole, int((frac + "000000")[:6]) if fsp else 0


def encode_decimal(value: Decimal, precision: int, scale: int) -> bytes:
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int) or exponent < -scale:
        raise ValueError(f"{value} has more than {scale} fraction digits")
    text = ("".join(map(str, digits)) + "0" * (exponent + scale)).rjust(precision, "0")
    if len(text) > precision:
        raise ValueError(f"{value} has more than {precision} digits")
    intg = precision - scale
    int_digits, frac_digits = text[:intg], text[intg:]
    dig2bytes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    out = bytearray()
    lead = intg % 9
    if lead:
        out += int(int_digits[:lead]).to_bytes(dig2bytes[lead], "big")
    for k in range(lead, intg, 9):
        out += int(int_digits[k : k + 9]).to_bytes(4, "big")
    for k in range(0, scale - scale % 9, 9):
        out += int(frac_digits[k : k + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(frac_digits[scale - scale % 9 :]).to_bytes(dig2bytes[scale % 9], "big")
    assert len(out) == decimal_size(precision, scale)
    out[0] |= 0x80
    if sign:
        out = bytearray(b ^ 0xFF for b in out)
    return bytes(out)


def encode_value(typ: int, meta: Any, unsigned: bool, collation: int, col: ColumnInfo, value: Any,
                 tz: tzinfo = UTC) -> bytes:  # fmt: skip
    if typ in (tm.T_TINY, tm.T_SHORT, tm.T_INT24, tm.T_LONG, tm.T_LONGLONG):
        size = {tm.T_TINY: 1, tm.T_SHORT: 2, tm.T_INT24: 3, tm.T_LONG: 4, tm.T_LONGLONG: 8}[typ]
        return int(value).to_bytes(size, "little", signed=not unsigned)
    if typ == tm.T_FLOAT:
        return struct.pack("<f", value)
    if typ == tm.T_DOUBLE:
        return struct.pack("<d", value)
    if typ == tm.T_YEAR:
        return bytes([value - 1900 if value else 0])
    if typ == tm.T_NEWDECIMAL:
        return encode_decimal(value, *meta)
    if typ == tm.T_DATE:
        y, m, d = (int(x) for x in value.split("-"))
        return (y << 9 | m << 5 | d).to_bytes(3, "little")
    if typ == tm.T_DATETIME2:
        whole, micro = _micro(value, meta)
        date, _, clock = whole.partition(" ")
        y, mo, d = (int(x) for x in date.split("-"))
        h, mi, s = (int(x) for x in clock.split(":"))
        packed = (((y * 13 + mo) << 5 | d) << 17 | h << 12 | mi << 6 | s) + 0x8000000000
        return packed.to_bytes(5, "big") + _frac(meta, micro)
    if typ == tm.T_TIMESTAMP2:
        whole, micro = _micro(value, meta)
        if whole.startswith("0000-00-00"):
            sec = 0
        else:
            from datetime import datetime

            sec = int(datetime.strptime(whole, "%Y-%m-%d %H:%M:%S").replace(tzinfo=tz).timestamp())
        return sec.to_bytes(4, "big") + _frac(meta, micro)
    if typ == tm.T_TIME2:
        neg = value.startswith("-")
        whole, micro = _micro(value.lstrip("-"), meta)
        h, mi, s = (int(x) for x in whole.split(":"))
        fb = (meta + 1) // 2
        scale = 10000 if fb == 1 else 100 if fb == 2 else 1
        a = (h << 12 | mi << 6 | s) << (8 * fb) | (micro // scale if fb else 0)
        return ((0x800000 << (8 * fb)) + (-a if neg else a)).to_bytes(3 + fb, "big")
    if typ == tm.T_BIT:
        bits, nbytes = meta
        return int(value).to_bytes((nbytes * 8 + bits + 7) // 8, "big")
    if typ in (tm.T_ENUM, tm.T_SET):
        return int(value).to_bytes(meta, "little")
    raw = value if isinstance(value, bytes) else _text_bytes(value, col)
    if typ in (tm.T_STRING, tm.T_VARCHAR):
        if typ == tm.T_STRING and collation == 63:
            raw = raw.rstrip(b"\x00") if len(raw) == meta else raw
        return len(raw).to_bytes(1 if meta < 256 else 2, "little") + raw
    if typ in (tm.T_BLOB, tm.T_GEOMETRY, tm.T_JSON):
        return len(raw).to_bytes(int(meta), "little") + raw
    raise ValueError(f"cannot encode binlog type {typ}")


def _text_bytes(value: str, col: ColumnInfo) -> bytes:
    return value.encode(PY_CODECS.get(col.charset or "utf8mb4", "utf-8"), "surrogateescape")


def image_bytes(m: tm.TableMap, table: TableInfo, values: Sequence[Any], tz: tzinfo = UTC) -> bytes:
    n = len(values)
    nulls = bytearray((n + 7) // 8)
    body = b""
    for i, v in enumerate(values):
        if v is None:
            nulls[i >> 3] |= 1 << (i & 7)
            continue
        body += encode_value(m.types[i], m.meta[i], bool(m.unsigned[i]), m.collations[i], table.columns[i], v, tz)
    return bytes(nulls) + body


_EVENT_HEADER = b"\x00" * 19 + b"\x00" * 8  # header and post-header: the rows start at 27


def rows_event_bytes(m: tm.TableMap, table: TableInfo, op: RowOp, rows: Sequence[RowChange], tz: tzinfo = UTC) -> bytes:
    n = len(table.columns)
    present = b"\xff" * (n // 8) + (bytes([(1 << (n % 8)) - 1]) if n % 8 else b"")
    body = bytes([n]) + present + (present if op is RowOp.UPDATE else b"")
    for r in rows:
        if op is RowOp.UPDATE:
            body += image_bytes(m, table, r.before, tz) + image_bytes(m, table, r.after, tz)  # type: ignore[arg-type]
        else:
            body += image_bytes(m, table, r.values, tz)
    return _EVENT_HEADER + body + b"\xde\xad\xbe\xef"  # a checksum after the end


def rows_events(table: TableInfo, rows: Sequence[RowChange], *, json_binary: bool = False, tz: tzinfo = UTC,
                per_event: int = 50) -> list[RowsEvent]:  # fmt: skip
    """The rows events of one transaction of ``table`` (one per run of at most ``per_event`` same-op rows)."""
    m = table_map(table, json_binary)
    layout = Layout(RowDecoder(m, tz, table.columns), None)
    events: list[RowsEvent] = []
    i = 0
    while i < len(rows):
        j = i
        while j < len(rows) and j - i < per_event and rows[j].op is rows[i].op:
            j += 1
        data = rows_event_bytes(m, table, rows[i].op, rows[i:j], tz)
        events.append(RowsEvent(rows[i].commit_ts, table, rows[i].op, data, 27, len(data) - 4, layout,
                                rows[i].physical_table_id or table.table_id))  # fmt: skip
        i = j
    return events
