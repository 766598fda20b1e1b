# ruff: noqa: UP031  (MySQL temporal text is printf-shaped)
"""Generated tables and rows covering every MySQL type the capture decodes (NULLs, zero dates, negative and edge
decimals, unsigned extremes, every fsp, every charset the capture decodes), written as binlog rows events: each
native kernel must produce the Python path's bytes, and must take clean rows rather than fall back."""

from __future__ import annotations

import struct
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.encoder import CanalJsonMessageEncoder, CanalJsonTxnEncoder
from sparkcdc.codec.csv.config import CsvConfig
from sparkcdc.codec.csv.encoder import CsvEncoder
from sparkcdc.codec.simple.config import SimpleConfig
from sparkcdc.codec.simple.encoder import SimpleEncoder
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from sparkcdc.sink.mysql.encoder import render_rows
from tests.unit.native.binlog_rows import COLLATIONS, PY_CODECS
from tests.unit.native.differential import as_events, mysql_native

CTS = 450253245302439944
NOW = 1717579824000
_SAMPLE = "aZ09 _-'\"\\,;|<>&\n\r\t\x08\x0c\x00éüß€¥жщ中文あア한\u2028😀"


def _fits(ch: str, codec: str) -> bool:
    try:
        return ch.encode(codec).decode(codec) == ch
    except UnicodeError:
        return False


# the charsets of text columns, with the characters each can carry (the capture decodes each with its codec)
CHARSETS = {cs: "".join(ch for ch in _SAMPLE if _fits(ch, codec)) for cs, codec in PY_CODECS.items()}


def _f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


INT_RANGES = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}


@st.composite
def column(draw: Any, name: str) -> tuple[ColumnInfo, Any]:
    """A column and the strategy of its values (never None: NULLs are drawn separately)."""
    kind = draw(
        st.sampled_from(
            [
                "int",
                "int",
                "float",
                "double",
                "decimal",
                "date",
                "datetime",
                "timestamp",
                "time",
                "year",
                "bit",
                "enum",
                "set",
                "text",
                "text",
                "binary",
                "blob",
                "json",
            ]
        )
    )
    if kind == "int":
        t = draw(st.sampled_from(list(INT_RANGES)))
        unsigned = draw(st.booleans())
        bits = INT_RANGES[t]
        lo, hi = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        values = st.one_of(st.sampled_from([lo, hi, 0, 1, -1 if lo < 0 else 2]), st.integers(lo, hi))
        return ColumnInfo(name, t, unsigned=unsigned), values
    if kind == "float":
        return ColumnInfo(name, "float"), st.floats(width=32, allow_nan=False, allow_infinity=False).map(_f32)
    if kind == "double":
        return ColumnInfo(name, "double"), st.floats(allow_nan=False, allow_infinity=False)
    if kind == "decimal":
        precision = draw(st.integers(1, 65))
        scale = draw(st.integers(0, min(precision, 30)))
        unscaled = st.one_of(st.sampled_from([0, 10**precision - 1, 1]), st.integers(0, 10**precision - 1))
        values = st.tuples(unscaled, st.booleans()).map(
            lambda p: Decimal(f"{'-' if p[1] and p[0] else ''}{p[0]}e-{scale}")
        )
        return ColumnInfo(name, "decimal", length=precision, decimal=scale), values
    if kind == "date":
        return ColumnInfo(name, "date"), st.tuples(st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31)).map(
            lambda d: "%04d-%02d-%02d" % d
        )
    if kind in ("datetime", "timestamp", "time"):
        fsp = draw(st.integers(0, 6))
        frac = st.integers(0, 10**fsp - 1).map(lambda f: f".{f:0{fsp}d}" if fsp else "")
        if kind == "datetime":
            whole = st.tuples(
                st.integers(0, 9999),
                st.integers(0, 12),
                st.integers(0, 31),
                st.integers(0, 23),
                st.integers(0, 59),
                st.integers(0, 59),
            ).map(lambda d: "%04d-%02d-%02d %02d:%02d:%02d" % d)
        elif kind == "timestamp":
            whole = st.one_of(
                st.just("0000-00-00 00:00:00"),
                st.integers(1, 2**32 - 1).map(
                    lambda s: (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S")
                ),
            )
        else:
            whole = st.tuples(
                st.sampled_from(["", "-"]), st.integers(0, 838), st.integers(0, 59), st.integers(0, 59)
            ).map(lambda t: "%s%02d:%02d:%02d" % t)
        zero_frac = f".{'0' * fsp}" if fsp else ""
        values = (
            st.tuples(whole, frac)
            .map(
                lambda p: (
                    p[0] + (zero_frac if p[0].startswith("0000-00-00") else p[1])
                )  # a zero TIMESTAMP has no fraction
            )
            .filter(lambda v: not v.startswith("-00:00:00"))
        )
        return ColumnInfo(name, kind, decimal=fsp), values
    if kind == "year":
        return ColumnInfo(name, "year", unsigned=True), st.one_of(st.just(0), st.integers(1901, 2155))
    if kind == "bit":
        n = draw(st.integers(1, 64))
        return ColumnInfo(name, "bit", unsigned=True, length=n), st.integers(0, 2**n - 1)
    if kind in ("enum", "set"):
        elements = tuple(
            draw(st.lists(st.text("abc,é'\" ", min_size=1, max_size=4), min_size=1, max_size=9, unique=True))
        )
        if kind == "enum":
            return ColumnInfo(name, "enum", elements=elements), st.integers(1, len(elements))
        return ColumnInfo(name, "set", elements=elements), st.integers(0, 2 ** len(elements) - 1)
    if kind == "text":
        charset = draw(st.sampled_from(sorted(CHARSETS)))
        t = draw(st.sampled_from(["char", "varchar", "tinytext", "text", "mediumtext", "longtext"]))
        return ColumnInfo(name, t, length=40, charset=charset), st.text(CHARSETS[charset], max_size=30)
    if kind == "binary":
        n = draw(st.integers(1, 30))
        if draw(st.booleans()):
            return ColumnInfo(name, "binary", length=n), st.binary(max_size=n).map(lambda b: b.ljust(n, b"\x00"))
        return ColumnInfo(name, "varbinary", length=300), st.binary(max_size=300)
    if kind == "blob":
        t = draw(st.sampled_from(["tinyblob", "blob", "mediumblob", "longblob", "geometry"]))
        return ColumnInfo(name, t), st.binary(max_size=40)
    return ColumnInfo(name, "json"), st.sampled_from(['{"a": 1}', "[1, 2]", "null", '"x<y"'])


@st.composite
def transactions(draw: Any) -> tuple[TableInfo, list[RowChange]]:
    """A table (int PK, random columns, sometimes a unique key) and one transaction of its rows."""
    n = draw(st.integers(1, 8))
    drawn = [draw(column(f"c{i}")) for i in range(n)]
    pk_type = draw(st.sampled_from(["int", "bigint", "varbinary", "datetime", "decimal"]))
    pk_col, pk_values = {
        "int": (ColumnInfo("id", "int", nullable=False), st.integers(-(2**31), 2**31 - 1)),
        "bigint": (ColumnInfo("id", "bigint", unsigned=True, nullable=False), st.integers(0, 2**64 - 1)),
        "varbinary": (ColumnInfo("id", "varbinary", length=20, nullable=False), st.binary(max_size=20)),
        "datetime": (
            ColumnInfo("id", "datetime", nullable=False),
            st.datetimes().map(
                lambda d: "%04d-%02d-%02d %02d:%02d:%02d" % (d.year, d.month, d.day, d.hour, d.minute, d.second)
            ),
        ),
        "decimal": (
            ColumnInfo("id", "decimal", length=10, decimal=2, nullable=False),
            st.integers(-(10**10) + 1, 10**10 - 1).map(lambda i: Decimal(f"{i}e-2")),
        ),
    }[pk_type]
    columns = (pk_col, *(c for c, _ in drawn))
    indexes = [IndexInfo("PRIMARY", ("id",), primary=True, unique=True)]
    if drawn and draw(st.booleans()) and drawn[0][0].type in INT_RANGES:
        indexes.append(IndexInfo("uk", (drawn[0][0].name,), unique=True))
    table = TableInfo("db<&>", "t", 7, with_handle_keys(columns, tuple(indexes)), tuple(indexes), version=CTS - 5)
    value_strategies = [pk_values, *(st.one_of(st.none(), v) for _, v in drawn)]

    def image() -> tuple[Any, ...]:
        return tuple(draw(s) for s in value_strategies)

    rows = []
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(list(RowOp)))
        if op is RowOp.INSERT:
            rows.append(RowChange(CTS, table, op, None, image(), 7))
        elif op is RowOp.DELETE:
            rows.append(RowChange(CTS, table, op, image(), None, 7))
        else:
            before = image()
            after = (before[0], *image()[1:])  # the key stays: the sinks do not split it
            rows.append(RowChange(CTS, table, op, before, after, 7))
    return table, rows


CONFIGS_CANAL = [
    {},
    {"enable-tidb-extension": True},
    {"only-output-updated-columns": True},
    {"delete-only-output-handle-key-columns": True},
    {"content-compatible": True},
]
CONFIGS_CSV = [
    {},
    {"quote": "", "delimiter": "|"},
    {"include-commit-ts": True, "output-old-value": True},
    {"binary-encoding-method": "hex", "output-handle-key": True, "null": "NULL"},
    {"delimiter": "ab", "quote": "'", "terminator": "\n"},
    {"quote": "", "delimiter": "é"},
]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(transactions(), st.integers(0, len(CONFIGS_CANAL) - 1), st.integers(0, len(CONFIGS_CSV) - 1))
def test_every_kernel_writes_the_python_bytes(txn: tuple[TableInfo, list[RowChange]], ci: int, si: int) -> None:
    table, rows = txn
    events = as_events(rows)
    assert events is not None, "the generated rows must survive the binlog"
    canal = CanalJsonTxnEncoder(CanalJsonConfig.from_options(CONFIGS_CANAL[ci]), now_ms=lambda: NOW)
    got = canal.encode_events(events, False)
    assert got == (canal.encode_txn(rows), len(rows))
    mq = CanalJsonMessageEncoder(CanalJsonConfig.from_options(CONFIGS_CANAL[ci]), now_ms=lambda: NOW)
    messages = mq.encode_events(events, False)
    assert messages == [mq.encode_row(r).value for r in rows]
    csv = CsvEncoder(CsvConfig.from_options(CONFIGS_CSV[si]))
    got = csv.encode_events(events, False)
    if got is None:  # only a common handle (a key that is not one integer) stays with the Python formatter
        assert CONFIGS_CSV[si].get("output-handle-key") and table.columns[0].type not in INT_RANGES
    else:
        assert got == (csv.encode_txn(rows), len(rows))
    simple = SimpleEncoder(SimpleConfig.from_options({"time-zone": "Asia/Shanghai"}), clock=lambda: NOW)
    messages = simple.encode_events(events, False)
    assert messages == [simple.encode_row(r).value for r in rows]
    rendered = mysql_native(rows)
    if all(
        isinstance(v, int | Decimal | bytes) or v is None or (isinstance(v, str) and v.isascii())
        for r in rows
        for image in (r.before, r.after)
        if image is not None
        for v in image
    ):
        assert rendered is not None, "ASCII keys: the kernel computes the slots"
    if rendered is not None:
        assert rendered == render_rows(rows)


def test_collations_cover_every_charset_of_the_capture() -> None:
    from sparkcdc.capture.charsets import _PY_CODEC

    assert set(_PY_CODEC) - {"gb18030", "utf8"} <= set(COLLATIONS)


def _table() -> TableInfo:
    columns = (
        ColumnInfo("id", "int", nullable=False),
        ColumnInfo("e", "enum", elements=("a", "b")),
        ColumnInfo("s", "varchar", length=10),
    )
    indexes = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
    return TableInfo("db", "t", 7, with_handle_keys(columns, indexes), indexes)


def test_rows_the_kernel_does_not_take_go_to_the_python_path() -> None:
    """A key-changing UPDATE the sink splits, an ENUM index CSV cannot write, a message above max-message-bytes:
    the kernel declines and the sink encoder's Python path writes (or refuses) them as before."""
    from sparkcdc.sink.storage.encoder import StorageEncoder
    from sparkcdc.storage.sink_config import StorageSinkConfig

    t = _table()
    split = [RowChange(CTS, t, RowOp.UPDATE, (1, 1, "x"), (2, 1, "x"), 7)]
    events = as_events(split)
    assert events is not None
    canal = CanalJsonTxnEncoder(now_ms=lambda: NOW)
    assert canal.encode_events(events, True) is None
    assert canal.encode_events(events, False) == (canal.encode_txn(split), 1)
    config = StorageSinkConfig.from_uri("file:///tmp/x?protocol=canal-json")
    sink = StorageEncoder(config)
    sink._encoder = canal
    assert [p.data for p in sink.encode_events(events)] == [p.data for p in sink.encode(split)]
    bad_enum = [RowChange(CTS, t, RowOp.INSERT, None, (1, 0, "x"), 7)]
    events = as_events(bad_enum)
    assert events is not None and CsvEncoder().encode_events(events, True) is None
    big = [RowChange(CTS, t, RowOp.INSERT, None, (1, 1, "x" * 10), 7)]
    events = as_events(big)
    assert events is not None
    from sparkcdc.codec.large_message import MAX_RECORD_OVERHEAD

    size = len(CanalJsonMessageEncoder(now_ms=lambda: NOW).encode_row(big[0]).value) + MAX_RECORD_OVERHEAD
    fits = CanalJsonConfig.from_options({"max-message-bytes": size})
    assert CanalJsonMessageEncoder(fits, now_ms=lambda: NOW).encode_events(events, True) is not None
    small = CanalJsonConfig.from_options({"max-message-bytes": size - 1})
    assert CanalJsonMessageEncoder(small, now_ms=lambda: NOW).encode_events(events, True) is None


def test_invalid_utf8_text_takes_the_python_path() -> None:
    t = _table()
    rows = [RowChange(CTS, t, RowOp.INSERT, None, (1, 1, "ok"), 7)]
    events = as_events(rows)
    assert events is not None
    data = events[0].data.replace(b"ok", b"o\xff")
    from dataclasses import replace

    broken = [replace(events[0], data=data)]
    assert CanalJsonTxnEncoder(now_ms=lambda: NOW).encode_events(broken, True) is None
    assert CanalJsonTxnEncoder(now_ms=lambda: NOW).encode_txn(broken[0].rows())  # Python: one U+FFFD per byte


def test_switch_turns_the_native_path_off(monkeypatch: Any) -> None:
    from sparkcdc.codec import native

    assert native.enabled()
    monkeypatch.setenv("SPARKCDC_NATIVE", "0")
    assert not native.enabled()
