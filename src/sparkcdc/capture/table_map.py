"""TABLE_MAP event parsing, including MySQL 8 / MariaDB 10.5+ optional metadata (binlog_row_metadata=FULL).

The optional metadata gives column names, signedness, charsets, ENUM/SET elements and the primary key, so a
row decoder can be built from the table map alone; the schema tracker adds what the binlog lacks (unique
keys, defaults, versions).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkcdc.capture.binlog import lenenc_int
from sparkcdc.errors import CorruptDataError

# MySQL field types as written in the binlog.
T_DECIMAL = 0
T_TINY = 1
T_SHORT = 2
T_LONG = 3
T_FLOAT = 4
T_DOUBLE = 5
T_NULL = 6
T_TIMESTAMP = 7
T_LONGLONG = 8
T_INT24 = 9
T_DATE = 10
T_TIME = 11
T_DATETIME = 12
T_YEAR = 13
T_NEWDATE = 14
T_VARCHAR = 15
T_BIT = 16
T_TIMESTAMP2 = 17
T_DATETIME2 = 18
T_TIME2 = 19
T_VECTOR = 242
T_JSON = 245
T_NEWDECIMAL = 246
T_ENUM = 247
T_SET = 248
T_TINY_BLOB = 249
T_MEDIUM_BLOB = 250
T_LONG_BLOB = 251
T_BLOB = 252
T_VAR_STRING = 253
T_STRING = 254
T_GEOMETRY = 255

NUMERIC_TYPES = frozenset({T_TINY, T_SHORT, T_INT24, T_LONG, T_LONGLONG, T_NEWDECIMAL, T_FLOAT, T_DOUBLE, T_DECIMAL})
CHARACTER_TYPES = frozenset({T_STRING, T_VAR_STRING, T_VARCHAR, T_BLOB})
# The columns the SIGNEDNESS bitmap has a bit for. MariaDB (log_event_server.cc ``is_numeric_field``) gives one to
# every field with a sign, and its YEAR is a TINYINT subclass: without T_YEAR here every numeric column after a
# YEAR takes its neighbour's flag (a TINYINT UNSIGNED 218 then decoded as -38; mariadb-binlog 10.11 misreads it too).
SIGNEDNESS_TYPES = NUMERIC_TYPES | {T_YEAR}

# Optional metadata field types.
_SIGNEDNESS = 1
_DEFAULT_CHARSET = 2
_COLUMN_CHARSET = 3
_COLUMN_NAME = 4
_SET_STR_VALUE = 5
_ENUM_STR_VALUE = 6
_GEOMETRY_TYPE = 7
_SIMPLE_PRIMARY_KEY = 8
_PRIMARY_KEY_WITH_PREFIX = 9
_ENUM_AND_SET_DEFAULT_CHARSET = 10
_ENUM_AND_SET_COLUMN_CHARSET = 11


@dataclass(frozen=True, slots=True)
class TableMap:
    """One table map. ``types`` are real types (ENUM/SET/STRING resolved from the STRING metadata);
    ``meta`` is the per-type metadata (pack length, max length, (precision, scale), fsp, …)."""

    table_id: int
    schema: str
    table: str
    types: tuple[int, ...]
    meta: tuple[int | tuple[int, int], ...]
    nullable: tuple[bool, ...]
    unsigned: tuple[bool, ...] = ()
    collations: tuple[int, ...] = ()  # per column, 0 when not a character/enum/set column
    names: tuple[str, ...] = ()
    enum_values: dict[int, tuple[str, ...]] = field(default_factory=dict)
    set_values: dict[int, tuple[str, ...]] = field(default_factory=dict)
    primary_key: tuple[int, ...] = ()

    @property
    def column_count(self) -> int:
        return len(self.types)

    def signature(self) -> tuple[object, ...]:
        """What determines the row layout: identical signatures share one compiled row decoder."""
        return (self.types, self.meta, self.unsigned, self.collations)


def _bits_msb(data: bytes, count: int) -> list[bool]:
    return [bool(data[i >> 3] & (0x80 >> (i & 7))) for i in range(count)]


def parse_table_map(body: bytes) -> TableMap:
    """Parse a TABLE_MAP body (checksum removed). Raises CorruptDataError on truncated input."""
    try:
        return _parse(body)
    except (IndexError, ValueError, UnicodeDecodeError) as e:
        raise CorruptDataError(f"malformed TABLE_MAP event: {e}") from e


def table_map_name(body: bytes) -> tuple[str, str]:
    """The schema and table a TABLE_MAP body names, without parsing its columns: enough to skip a table's rows
    events by table id. Raises CorruptDataError on truncated input."""
    try:
        schema, table, _p = _names(body)
    except (IndexError, ValueError, UnicodeDecodeError) as e:
        raise CorruptDataError(f"malformed TABLE_MAP event: {e}") from e
    return schema, table


def _names(body: bytes) -> tuple[str, str, int]:
    """Schema, table and the offset after them (the table id and flags take the first 8 bytes)."""
    p = 8
    slen = body[p]
    schema = body[p + 1 : p + 1 + slen].decode("utf-8")
    p += 1 + slen + 1
    tlen = body[p]
    table = body[p + 1 : p + 1 + tlen].decode("utf-8")
    if p + 1 + tlen >= len(body):
        raise ValueError("table name runs past the event")
    return schema, table, p + 1 + tlen + 1


def _parse(body: bytes) -> TableMap:
    table_id = int.from_bytes(body[0:6], "little")
    schema, table, p = _names(body)
    ncols, p = lenenc_int(body, p)
    raw_types = list(body[p : p + ncols])
    p += ncols
    meta_len, p = lenenc_int(body, p)
    meta_end = p + meta_len
    types: list[int] = []
    meta: list[int | tuple[int, int]] = []
    for t in raw_types:
        if t in (T_FLOAT, T_DOUBLE, T_BLOB, T_GEOMETRY, T_JSON, T_TIMESTAMP2, T_DATETIME2, T_TIME2, T_VECTOR):
            types.append(t)
            meta.append(body[p])
            p += 1
        elif t in (T_VARCHAR, T_VAR_STRING):
            types.append(t)
            meta.append(body[p] | body[p + 1] << 8)
            p += 2
        elif t in (T_NEWDECIMAL, T_BIT):
            types.append(t)
            meta.append((body[p], body[p + 1]))
            p += 2
        elif t == T_STRING:
            b0, b1 = body[p], body[p + 1]
            p += 2
            if b0 in (T_ENUM, T_SET):
                types.append(b0)
                meta.append(b1)  # pack length
            else:
                real = b0 | 0x30 if (b0 & 0x30) != 0x30 else b0
                max_len = ((((b0 & 0x30) ^ 0x30) << 4) | b1) if (b0 & 0x30) != 0x30 else b1
                types.append(real if real in (T_STRING, T_ENUM, T_SET) else T_STRING)
                meta.append(max_len)
        else:
            types.append(t)
            meta.append(0)
    p = meta_end
    nullable = _bits_lsb(body[p : p + (ncols + 7) // 8], ncols)
    p += (ncols + 7) // 8

    unsigned = [False] * ncols
    collations = [0] * ncols
    names: list[str] = []
    enums: dict[int, tuple[str, ...]] = {}
    sets: dict[int, tuple[str, ...]] = {}
    pk: list[int] = []
    numeric = [i for i, t in enumerate(types) if t in SIGNEDNESS_TYPES]
    chars = [i for i, t in enumerate(types) if t in CHARACTER_TYPES]
    enumset = [i for i, t in enumerate(types) if t in (T_ENUM, T_SET)]
    while p < len(body):
        ftype = body[p]
        flen, p = lenenc_int(body, p + 1)
        val = body[p : p + flen]
        p += flen
        if ftype == _SIGNEDNESS:
            for k, flag in zip(numeric, _bits_msb(val, len(numeric))):
                unsigned[k] = flag
        elif ftype in (_DEFAULT_CHARSET, _ENUM_AND_SET_DEFAULT_CHARSET):
            targets = chars if ftype == _DEFAULT_CHARSET else enumset
            default, q = lenenc_int(val, 0)
            for k in targets:
                collations[k] = default
            while q < len(val):
                idx, q = lenenc_int(val, q)
                coll, q = lenenc_int(val, q)
                collations[targets[idx]] = coll
        elif ftype in (_COLUMN_CHARSET, _ENUM_AND_SET_COLUMN_CHARSET):
            targets = chars if ftype == _COLUMN_CHARSET else enumset
            q = 0
            for k in targets:
                collations[k], q = lenenc_int(val, q)
        elif ftype == _COLUMN_NAME:
            q = 0
            while q < len(val):
                n, q = lenenc_int(val, q)
                names.append(val[q : q + n].decode("utf-8"))
                q += n
        elif ftype in (_SET_STR_VALUE, _ENUM_STR_VALUE):
            targets = [i for i, t in enumerate(types) if t == (T_SET if ftype == _SET_STR_VALUE else T_ENUM)]
            q = 0
            for k in targets:
                count, q = lenenc_int(val, q)
                items = []
                for _ in range(count):
                    n, q = lenenc_int(val, q)
                    items.append(val[q : q + n].decode("utf-8", "replace"))
                    q += n
                (sets if ftype == _SET_STR_VALUE else enums)[k] = tuple(items)
        elif ftype == _SIMPLE_PRIMARY_KEY:
            q = 0
            while q < len(val):
                idx, q = lenenc_int(val, q)
                pk.append(idx)
        elif ftype == _PRIMARY_KEY_WITH_PREFIX:
            q = 0
            while q < len(val):
                idx, q = lenenc_int(val, q)
                _prefix, q = lenenc_int(val, q)
                pk.append(idx)
    return TableMap(
        table_id,
        schema,
        table,
        tuple(types),
        tuple(meta),
        tuple(nullable),
        tuple(unsigned),
        tuple(collations),
        tuple(names),
        enums,
        sets,
        tuple(pk),
    )


def _bits_lsb(data: bytes, count: int) -> list[bool]:
    return [bool(data[i >> 3] & (1 << (i & 7))) for i in range(count)]
