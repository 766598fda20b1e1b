"""Snapshot reads: SELECT a table's rows so every value equals what the binlog row decoder produces.

An initial snapshot emits the current rows as INSERT events into the same sinks as the binlog stream, so a
snapshot value must be exactly the decoder's Python value (type and value, ``model/column_type.py``).
The text protocol gives the server's rendering of each value, which is not always that value, so:

- the connection returns raw bytes (``connection_options``): text is decoded here with the decoder's
  charset code (``capture/charsets.py``), never converted by the server first, so every stored byte maps
  as it does in the binlog;
- a few types are read through an expression (``select_list``) whose text is exact:

  =================  ==========================  ==========================================================
  type               SELECT expression           why
  =================  ==========================  ==========================================================
  FLOAT              ``CAST(c AS DOUBLE)``       ``c`` prints 6 significant digits; the double holding
                                                 the float32 value prints round-trip exact
  TIMESTAMP(fsp)     ``UNIX_TIMESTAMP(c)``       the stored instant, whatever the session time zone; it
                                                 is rendered by the decoder's own ``read_timestamp2``
  YEAR               ``YEAR(c)``                 YEAR(2) prints two digits; the decoder has the full
                                                 year (and 0 for the zero byte, which YEAR() makes 1900)
  ENUM, SET          ``CAST(c AS UNSIGNED)``     index / bitmask; ``c + 0`` is signed for SET member 64
  everything else    ``c``                       its text is the decoder's value (or its raw bytes)
  =================  ==========================  ==========================================================

Generated columns are read as they are: MariaDB's FULL row image carries virtual columns' computed values
too, so the decoder has them. VECTOR is not supported: the MariaDB these tests run (10.11) has no VECTOR
type to verify against.

A copy carries the columns a table had at start-ts. When a DDL changed a column since, its values are read as
the column is now (``read_as``: another charset, length or fsp reads exactly), as long as they are still the
same kind of value the start-ts column holds; otherwise the copy cannot carry them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, tzinfo
from decimal import Decimal
from typing import Any

from sparkcdc.capture.charsets import text_decoder
from sparkcdc.capture.values import read_timestamp2
from sparkcdc.errors import ConfigError
from sparkcdc.model.column_type import BLOB_TYPES, INTEGER_TYPES, TEMPORAL_TYPES, TEXT_TYPES
from sparkcdc.model.table import ColumnInfo, TableInfo
from sparkcdc.mysql.target import quote_ident

Converter = Callable[[Sequence[Any]], tuple[Any, ...]]

# A value template over ``{v}`` (the raw bytes) and ``{k}`` (the plan's constant); None = the bytes as is.
_INT = "int({v})"
_FLOAT = "float({v})"
_ASCII = "{v}.decode('ascii')"
_CALL = "{k}({v})"


def connection_options() -> dict[str, Any]:
    """Keyword arguments for ``pymysql.connect`` that a snapshot reader must pass (merged over host, user...).

    - ``use_unicode=False`` and ``conv`` holding only pymysql's encoders (no decoders): every result value
      arrives as the raw bytes of the text protocol and ``row_converter`` alone turns it into the model's
      value; query arguments are still escaped as usual.
    - ``character_set_results = binary``: the server sends text columns in their own charset, unconverted,
      so they decode exactly as the binlog decoder decodes them. The connection charset stays utf8mb4, so
      string literals (primary-key range bounds) compare with the columns' own collations.
    - ``sql_mode=''``: PAD_CHAR_TO_FULL_LENGTH would pad CHAR values the binlog carries unpadded, and
      NO_BACKSLASH_ESCAPES or ORACLE mode would break pymysql's escaping or the expressions above.

    pymysql runs ``init_command`` again on every reconnect (``ping(reconnect=True)``), so the settings hold.
    """
    from pymysql.converters import encoders  # type: ignore[import-untyped]

    return {
        "charset": "utf8mb4",
        "use_unicode": False,
        "conv": dict(encoders),
        "sql_mode": "",
        "init_command": "SET SESSION character_set_results = binary",
    }


def _year(raw: bytes) -> int:
    # YEAR(c) of a YEAR(2) whose stored byte is 0 (an invalid value stored as the zero year) is 1900, a year
    # neither YEAR(2) (1970-2069) nor YEAR(4) (1901-2155) can hold; the decoder has 0 for that byte.
    year = int(raw)
    return 0 if year == 1900 else year


def _timestamp(fsp: int, tz: tzinfo) -> Callable[[bytes], str]:
    """Renders ``UNIX_TIMESTAMP(c)`` text (``1717243200.250``) by packing it as a binlog TIMESTAMP2 and
    calling the decoder's ``read_timestamp2``, so zero timestamps, fsp digits and time zones match."""
    nbytes = (fsp + 1) // 2
    div = 10000 if nbytes == 1 else 100 if nbytes == 2 else 1

    def render(raw: bytes) -> str:
        sec, _, frac = raw.partition(b".")
        micro = int(frac.ljust(6, b"0")) if frac else 0
        packed = int(sec).to_bytes(4, "big") + (micro // div).to_bytes(nbytes, "big")
        return read_timestamp2(packed, 0, fsp, tz)

    return render


def _plan(table: TableInfo, col: ColumnInfo, tz: tzinfo) -> tuple[str, str | None, Any]:
    """(SELECT expression, value template, constant) for one column; raises ConfigError for VECTOR."""
    name = quote_ident(col.name)
    typ = col.type
    if typ in INTEGER_TYPES:
        return name, _INT, None
    if typ == "year":
        return f"YEAR({name})", _CALL, _year
    if typ == "float":
        return f"CAST({name} AS DOUBLE)", _FLOAT, None
    if typ == "double":
        return name, _FLOAT, None
    if typ == "decimal":
        return name, "{k}({v}.decode('ascii'))", Decimal
    if typ == "bit":
        return name, "int.from_bytes({v}, 'big')", None
    if typ in ("enum", "set"):
        return f"CAST({name} AS UNSIGNED)", _INT, None
    if typ == "timestamp":
        return f"UNIX_TIMESTAMP({name})", _CALL, _timestamp(col.fsp, tz)
    if typ in TEMPORAL_TYPES:
        return name, _ASCII, None
    if typ in TEXT_TYPES or typ == "json":
        charset = col.charset or "utf8mb4"
        if charset in ("utf8mb4", "utf8mb3", "utf8"):  # the decoder's own inline form
            return name, "{v}.decode('utf-8', 'surrogateescape')", None
        return name, _CALL, text_decoder(charset)
    if typ in BLOB_TYPES or typ == "geometry":
        return name, None, None
    raise ConfigError(
        f"{table.qualified_name}: column {col.name!r} has type {typ.upper()}, which the snapshot cannot read "
        "exactly yet; exclude the table from the changefeed's filter to replicate the rest"
    )


def select_list(table: TableInfo) -> str:
    """The select-expression list for a snapshot SELECT of ``table``: one expression per column of
    ``table.columns``, in order (see the module docstring for the expressions). Raises ConfigError for a
    column type the snapshot cannot read exactly (VECTOR)."""
    return ", ".join(_plan(table, c, UTC)[0] for c in table.columns)


def row_converter(table: TableInfo, tz: tzinfo) -> Converter:
    """A function turning one row, as a cursor over ``select_list(table)`` opened with
    ``connection_options()`` returns it (raw bytes or None per column), into the model's value tuple.

    ``tz`` renders TIMESTAMP as the capture's decoder does (pass the same tzinfo, ``decode.resolve_tz``).
    It runs once per row, so the per-column conversions are compiled into one function, as the binlog row
    decoder does: NULL stays None, bytes columns pass through, the rest is one inline expression each.
    Raises ConfigError for a column type the snapshot cannot read exactly (VECTOR).
    """
    names: dict[str, Any] = {}
    exprs: list[str] = []
    for i, col in enumerate(table.columns):
        _, template, const = _plan(table, col, tz)
        v = f"v{i}"
        if template is None:
            exprs.append(v)
            continue
        k = f"K{i}"
        if const is not None:
            names[k] = const
        exprs.append(f"(None if {v} is None else {template.format(v=v, k=k)})")
    n = len(table.columns)
    unpack = ", ".join(f"v{i}" for i in range(n)) + ("," if n == 1 else "")
    values = ", ".join(exprs) + ("," if n == 1 else "")
    src = f"def convert(r):\n    {unpack} = r\n    return ({values})\n" if n else "def convert(r):\n    return ()\n"
    exec(src, names)
    convert: Converter = names["convert"]
    return convert


def _kind(col: ColumnInfo) -> str:
    """The kind of value a column holds, as the model and the sinks' encoders see it: a column keeps its kind
    when a DDL changes only its length, precision, fsp, signedness or charset."""
    typ = col.type
    if typ in INTEGER_TYPES:
        return "integer"
    if typ in ("float", "double"):
        return "float"
    if typ in TEXT_TYPES or typ == "json":
        return "text"
    if typ in BLOB_TYPES:
        return "bytes"
    return typ


def read_as(start: TableInfo, now: TableInfo) -> TableInfo:
    """``start`` (the table at start-ts, whose columns a copy carries) with each column as ``now`` defines it,
    for ``select_list`` and ``row_converter``: the values read are exactly those the upstream holds now.

    Raises ValueError naming a column whose values the start-ts column cannot carry: it is gone, holds another
    kind of value (INT to VARCHAR, DATE to DATETIME, text to binary), or is an ENUM/SET whose start-ts members are
    not its first members any more (the values are read as member numbers)."""
    columns = []
    for col in start.columns:
        try:
            cur = now.column(col.name)
        except KeyError:
            raise ValueError(f"column {col.name!r} is gone") from None
        if _kind(cur) != _kind(col):
            raise ValueError(f"column {col.name!r} changed from {col.type.upper()} to {cur.type.upper()}")
        if col.type in ("enum", "set") and cur.elements[: len(col.elements)] != col.elements:
            raise ValueError(f"the members of {col.type.upper()} column {col.name!r} changed")
        columns.append(cur)
    return replace(start, columns=tuple(columns))
