"""SimpleEncoder.encode_rows (the Kafka sink's whole-transaction path) is encode_row of each row, byte for byte.

Tables: every MySQL type of the round-trip suite (max BIGINT UNSIGNED and BIT(64), DECIMAL, DATETIME(6), JSON,
ENUM/SET, binary with 0x00/0xFF, emoji and HTML-escaped text, NULLs), and a table whose names need Go's HTML
escapes, with a virtual column, a TIMESTAMP in a non-UTC zone and no table id or schema version (members left
out). Rows: inserts, updates and deletes at several commit-ts and physical table ids in one call.
"""

from __future__ import annotations

import io
from typing import Any

import fastavro
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.codec.simple import avro_schema, compiled
from sparkcdc.codec.simple.encoder import SimpleEncoder
from sparkcdc.errors import EncodeError
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo

from .simple_support import Clock, codec, make_table
from .test_simple_roundtrip import TABLE, images

ODD = make_table(
    "d<b>",
    "t&\u2028",
    0,
    [
        ColumnInfo("id", "int", nullable=False),
        ColumnInfo("v<>", "varchar", length=20),
        ColumnInfo("gen", "int", generated="virtual"),
        ColumnInfo("ts", "timestamp", decimal=6),
        ColumnInfo("x\u2029", "text"),
        ColumnInfo("b", "blob"),
    ],
    [IndexInfo("PRIMARY", ("id",), primary=True, unique=True)],
)
_TEXT = st.one_of(st.sampled_from(["<&>", "\u2028", "😀", "", 'a},{"b', '{"x":1}']), st.text(max_size=12))


@st.composite
def odd_images(draw: st.DrawFn) -> tuple[Any, ...]:
    return (
        draw(st.integers(-(2**31), 2**31 - 1)),
        draw(st.one_of(st.none(), _TEXT)),
        None,  # virtual: not sent
        draw(st.one_of(st.none(), st.sampled_from(["2024-01-01 08:00:00.000001", "1970-01-01 00:00:01"]))),
        draw(st.one_of(st.none(), _TEXT)),
        draw(st.one_of(st.none(), st.binary(max_size=8))),
    )


@st.composite
def transactions(draw: st.DrawFn, table: TableInfo) -> list[RowChange]:
    image = images() if table is TABLE else odd_images()
    commit_ts = draw(st.lists(st.integers(1, 2**63 - 1), min_size=1, max_size=3, unique=True))
    rows = []
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(list(RowOp)))
        before = draw(image) if op is not RowOp.INSERT else None
        after = draw(image) if op is not RowOp.DELETE else None
        physical = draw(st.sampled_from([0, 77, 78]))
        rows.append(RowChange(draw(st.sampled_from(commit_ts)), table, op, before, after, physical))
    return rows


def _reference(enc: SimpleEncoder, rows: list[RowChange]) -> list[bytes]:
    return [enc.encode_row(r).value for r in rows]


@pytest.mark.parametrize("fmt", ["json", "avro"])
@pytest.mark.parametrize("table", [TABLE, ODD], ids=["all-types", "escaped-names"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_encode_rows_is_encode_row_per_row(fmt: str, table: TableInfo, data: st.DataObject) -> None:
    rows = data.draw(transactions(table))
    enc, _ = codec(fmt, Clock(), **{"time-zone": "Asia/Shanghai"})
    batch = enc.encode_rows(rows)
    assert batch is not None
    assert [m.key for m in batch] == [None] * len(rows)
    assert [m.value for m in batch] == _reference(enc, rows)


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_build_ts_is_read_once_per_call(fmt: str) -> None:
    ticks = iter(range(1000, 2000))
    enc = SimpleEncoder(codec(fmt)[0].config, clock=lambda: next(ticks))
    rows = [RowChange(7 << 18, ODD, RowOp.INSERT, None, (k, "v", None, None, None, None)) for k in range(3)]
    batch = enc.encode_rows(rows)
    assert batch is not None
    read = (lambda v: avro_schema.read(v).build_ts) if fmt == "avro" else (lambda v: orjson.loads(v)["buildTs"])
    assert [read(m.value) for m in batch] == [1000, 1000, 1000]
    assert next(ticks) == 1001


def _wide(table: TableInfo, k: int, size: int) -> RowChange:
    return RowChange(9 << 18, table, RowOp.INSERT, None, (k, "x" * size, None, None, None, None))


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_oversized_message_falls_back_to_encode_row(fmt: str) -> None:
    enc, _ = codec(fmt, Clock(), **{"max-message-bytes": 400})
    small = [_wide(ODD, k, 10) for k in range(3)]
    assert [m.value for m in enc.encode_rows(small) or []] == _reference(enc, small)
    rows = [*small, _wide(ODD, 9, 500)]
    assert enc.encode_rows(rows) is None
    with pytest.raises(EncodeError, match="above max-message-bytes"):
        enc.encode_row(rows[-1])
    handled, _ = codec(fmt, Clock(), **{"max-message-bytes": 400, "large-message-handle-option": "handle-key-only"})
    assert handled.encode_rows(rows) is None  # encode_row_checked sends the handle key only
    assert handled.encode_row_checked(rows[-1]).message.value != handled.encode_dml(rows[-1])


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_rows_the_fast_path_does_not_take_fall_back(fmt: str) -> None:
    enc, _ = codec(fmt, Clock())
    good = [_wide(ODD, k, 3) for k in range(2)]
    surrogate = RowChange(9 << 18, ODD, RowOp.INSERT, None, (5, "a\ud800b", None, None, None, None))
    assert enc.encode_rows([*good, surrogate]) is None
    assert "\ufffd".encode() in enc.encode_row(surrogate).value  # written as Go writes invalid UTF-8
    other = _wide(make_table("db", "other", 2, list(ODD.columns), list(ODD.indexes)), 1, 3)
    assert enc.encode_rows([*good, other]) is None
    assert enc.encode_rows([]) == []


def test_avro_value_of_a_wrong_class_falls_back_and_encode_row_refuses_it() -> None:
    enc, _ = codec("avro", Clock())
    row = RowChange(9 << 18, ODD, RowOp.INSERT, None, ("12", "v", None, None, None, None))
    assert enc.encode_rows([row]) is None
    with pytest.raises(EncodeError, match="cannot encode message as Avro"):
        enc.encode_row(row)


_EDGES = [0, 1, -1, 63, -64, 64, -65, 4095, -4096, 4096, -4097, 8191, 8192, 2**20 - 1, 2**20, 2**27 - 1, 2**27]


@pytest.mark.parametrize("n", [*_EDGES, *(-n for n in _EDGES), 2**62, -(2**63), 2**63 - 1])
def test_zigzag_is_fastavros_long(n: int) -> None:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, "long", n)
    assert compiled.zigzag(n) == buf.getvalue()


def test_small_ints_come_from_the_table() -> None:
    assert [compiled._ZIGZAG[n] for n in range(-4096, 4096)] == [compiled.zigzag(n) for n in range(-4096, 4096)]


@pytest.mark.parametrize("n", [2**63, -(2**63) - 1])
def test_zigzag_refuses_what_fastavro_refuses(n: int) -> None:
    with pytest.raises(OverflowError):
        fastavro.schemaless_writer(io.BytesIO(), "long", n)
    with pytest.raises(OverflowError):
        compiled.zigzag(n)
