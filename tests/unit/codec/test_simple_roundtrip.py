"""decode(encode(x)) == x for the simple protocol, JSON and Avro, over every MySQL type.

Lossy spots (by protocol design, asserted below where they matter):
* TIMESTAMP values keep their text; the ``location`` member is not part of the model value.
* ``start_ts`` is not carried; ``physical_table_id`` comes back as the message ``tableID`` (the logical
  table id when the row had none).
* TableInfo keeps what TableSchema carries (names, types, flags, lengths, defaults, indexes, version); not
  generated-column kinds, column ids, partitions or table charset. Avro also drops the fsp/decimal of
  non-DECIMAL columns (TiCDC's Avro DataType has ``decimal`` only for DECIMAL).
* Strings with lone surrogates (not valid UTF-8) are written with U+FFFD, as Go does.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.codec.simple import table_schema
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo

from .simple_support import Clock, codec, make_table

_TEMPORAL = st.sampled_from(["0000-00-00", "2000-01-01", "9999-12-31", "2024-02-29"])
_DATETIME = st.sampled_from(
    ["0000-00-00 00:00:00", "2015-12-20 23:58:58.123", "9999-12-31 23:59:59.999999", "1970-01-01 00:00:01"]
)
_TIME = st.sampled_from(["-838:59:59", "838:59:59.000000", "00:00:00", "-00:00:01.5", "12:34:56"])
_EDGE_TEXT = st.sampled_from(['a"b', "line1\r\nline2", "<&>", "\u2028\u2029", "😀 emoji", "\x00\x1f\x7f", "\\", ""])
_TEXT = st.one_of(_EDGE_TEXT, st.text(max_size=40))
_BYTES = st.one_of(st.sampled_from([b"\x00", b"\xff", b"\x00\xffA", b""]), st.binary(max_size=40))


def _float32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


# (column, value strategy) per MySQL type, with signed/unsigned edges.
COLUMNS: list[tuple[ColumnInfo, st.SearchStrategy[Any]]] = [
    (ColumnInfo("id", "bigint", nullable=False), st.integers(-(2**63), 2**63 - 1)),
    (ColumnInfo("c_tinyint", "tinyint"), st.integers(-128, 127)),
    (ColumnInfo("c_tinyint_u", "tinyint", unsigned=True), st.integers(0, 255)),
    (ColumnInfo("c_smallint", "smallint"), st.integers(-32768, 32767)),
    (ColumnInfo("c_mediumint_u", "mediumint", unsigned=True), st.integers(0, 2**24 - 1)),
    (ColumnInfo("c_int", "int"), st.integers(-(2**31), 2**31 - 1)),
    (ColumnInfo("c_int_u", "int", unsigned=True), st.integers(0, 2**32 - 1)),
    (ColumnInfo("c_bigint_u", "bigint", unsigned=True), st.one_of(st.just(2**64 - 1), st.integers(0, 2**64 - 1))),
    (ColumnInfo("c_bool", "tinyint", length=1), st.integers(0, 1)),
    (ColumnInfo("c_float", "float"), st.floats(width=32, allow_nan=False, allow_infinity=False).map(_float32)),
    (ColumnInfo("c_double", "double"), st.floats(allow_nan=False, allow_infinity=False)),
    (
        ColumnInfo("c_decimal", "decimal", length=30, decimal=4),
        st.decimals(min_value=Decimal("-99999999999999.9999"), max_value=Decimal("99999999999999.9999"), places=4),
    ),
    (
        ColumnInfo("c_decimal0", "decimal", length=10, decimal=0),
        st.decimals(min_value=-(10**10) + 1, max_value=10**10 - 1, places=0),
    ),
    (ColumnInfo("c_date", "date"), _TEMPORAL),
    (ColumnInfo("c_datetime", "datetime", decimal=6), _DATETIME),
    (ColumnInfo("c_timestamp", "timestamp", decimal=3), _DATETIME),
    (ColumnInfo("c_time", "time", decimal=6), _TIME),
    (ColumnInfo("c_year", "year"), st.one_of(st.just(0), st.integers(1901, 2155))),
    (ColumnInfo("c_bit", "bit", length=64), st.one_of(st.just(2**64 - 1), st.integers(0, 2**64 - 1))),
    (ColumnInfo("c_enum", "enum", elements=("a", "b", "c")), st.integers(0, 3)),
    (ColumnInfo("c_set", "set", elements=("a", "b", "c")), st.integers(0, 7)),
    (ColumnInfo("c_char", "char", length=10), _TEXT),
    (ColumnInfo("c_varchar", "varchar", length=255, charset="utf8mb4", collation="utf8mb4_general_ci"), _TEXT),
    (ColumnInfo("c_text", "longtext"), _TEXT),
    (ColumnInfo("c_binary", "binary", length=4), _BYTES),
    (ColumnInfo("c_varbinary", "varbinary", length=40), _BYTES),
    (ColumnInfo("c_blob", "blob"), _BYTES),
    (ColumnInfo("c_json", "json"), st.sampled_from(['{"key1": "value1"}', "[]", "null", '"<\\u0026>"'])),
    (ColumnInfo("c_geometry", "geometry"), _BYTES),
    (ColumnInfo("c_vector", "vector"), st.sampled_from(["[1,2,3]", "[]", "[0.5,-1e+10]"])),
]

TABLE: TableInfo = make_table(
    "db",
    "all",
    77,
    [c for c, _ in COLUMNS],
    [IndexInfo("PRIMARY", ("id",), primary=True, unique=True), IndexInfo("k_int", ("c_int", "c_time"))],
    450253245263380481,
)


@st.composite
def images(draw: st.DrawFn) -> tuple[Any, ...]:
    values = []
    for col, strategy in COLUMNS:
        if col.nullable and draw(st.integers(0, 9)) == 0:
            values.append(None)
        else:
            values.append(draw(strategy))
    return tuple(values)


@st.composite
def row_changes(draw: st.DrawFn) -> RowChange:
    op = draw(st.sampled_from(list(RowOp)))
    before = draw(images()) if op is not RowOp.INSERT else None
    after = draw(images()) if op is not RowOp.DELETE else None
    commit_ts = draw(st.integers(1, 2**63 - 1))
    return RowChange(commit_ts, TABLE, op, before, after, 77)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, Decimal):
        return str(a) == str(b)
    return bool(a == b)


def _assert_same_image(got: tuple[Any, ...] | None, want: tuple[Any, ...] | None) -> None:
    if want is None:
        assert got is None
        return
    assert got is not None
    assert len(got) == len(want)
    for col, g, w in zip(TABLE.columns, got, want, strict=True):
        assert _same(g, w), f"{col.name}: {g!r} != {w!r}"


@pytest.mark.parametrize("fmt", ["json", "avro"])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(row_changes(), min_size=1, max_size=3))
def test_rows_round_trip(fmt: str, rows: list[RowChange]) -> None:
    enc, dec = codec(fmt, Clock())
    assert len(list(dec.decode(enc.encode_bootstrap(TABLE)))) == 1
    for row in rows:
        events = list(dec.decode(enc.encode_row(row)))
        assert len(events) == 1
        got = events[0]
        assert isinstance(got, RowChange)
        assert (got.commit_ts, got.op, got.physical_table_id) == (row.commit_ts, row.op, row.physical_table_id)
        assert [c.name for c in got.table.columns] == [c.name for c in TABLE.columns]
        _assert_same_image(got.before, row.before)
        _assert_same_image(got.after, row.after)


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_table_schema_round_trips(fmt: str) -> None:
    enc, dec = codec(fmt)
    (event,) = list(dec.decode(enc.encode_bootstrap(TABLE)))
    decoded = event.table_info  # type: ignore[union-attr]
    if fmt == "json":
        assert table_schema.to_json(decoded) == table_schema.to_json(TABLE)
    assert table_schema.to_avro(decoded) == table_schema.to_avro(TABLE)
    assert decoded.handle_key_positions == TABLE.handle_key_positions
    assert [(c.name, c.type, c.unsigned, c.nullable, c.elements) for c in decoded.columns] == [
        (c.name, c.type, c.unsigned or c.type in ("bit", "year"), c.nullable, c.elements) for c in TABLE.columns
    ]


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_defaults_round_trip(fmt: str) -> None:
    table = make_table(
        "d",
        "t",
        1,
        [
            ColumnInfo("id", "int", nullable=False, default="100"),
            ColumnInfo("b", "bit", length=10, default=b"\x00A"),
            ColumnInfo("e", "enum", elements=("x", "y"), default="y"),
            ColumnInfo("ts", "timestamp", default="CURRENT_TIMESTAMP"),
        ],
        [IndexInfo("PRIMARY", ("id",), primary=True, unique=True)],
        5,
    )
    enc, dec = codec(fmt)
    (event,) = list(dec.decode(enc.encode_bootstrap(table)))
    defaults = [c.default for c in event.table_info.columns]  # type: ignore[union-attr]
    assert defaults == ["100", b"\x00A", "y", "CURRENT_TIMESTAMP"]
    if fmt == "json":
        assert b'"default":65' in enc.encode_bootstrap(table).value  # BIT default is its integer


def test_lone_surrogate_becomes_replacement_character() -> None:
    table = make_table("d", "t", 1, [ColumnInfo("id", "int", nullable=False), ColumnInfo("s", "varchar")], [], 1)
    row = RowChange(1, table, RowOp.INSERT, None, (1, "a\udc80b"), 1)
    for fmt in ("json", "avro"):
        enc, dec = codec(fmt)
        list(dec.decode(enc.encode_bootstrap(table)))
        (got,) = list(dec.decode(enc.encode_row(row)))
        assert isinstance(got, RowChange)
        assert got.after is not None
        assert got.after[1].startswith("a\ufffd") and got.after[1].endswith("b")


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32))
def test_float32_fast_path_matches_go_formatting(value: float) -> None:
    from sparkcdc.codec.gofmt import go_float_f
    from sparkcdc.codec.simple.values import float32_text

    assert float32_text(value) == go_float_f(value, 32)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(), st.sampled_from([1e16, 1e21, 1e-5, 123456789012345680.0, -0.0, 0.1, 5e-324])))
def test_float64_fast_path_matches_go_formatting(value: float) -> None:
    from sparkcdc.codec.gofmt import go_float_f
    from sparkcdc.codec.simple.values import float64_text

    assert float64_text(value) == go_float_f(value, 64)
