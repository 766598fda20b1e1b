"""canal-json property tests: decode(encode(x)) == x over every MySQL type, NULLs and edge values.

Lossless: every value type (binary via ISO-8859-1, FLOAT via its shortest float32 text, DECIMAL keeps its
scale), commit ts when ``enable-tidb-extension`` is on. Lossy by the protocol (asserted separately): the
commit ts without ``_tidb`` (decodes as 0), non-key columns of DELETEs with
``delete-only-output-handle-key-columns`` (decode as None), and the message decoder's TableInfo, which only
knows what ``mysqlType``/``pkNames`` say.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.codec import base
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.decoder import CanalJsonFileDecoder, CanalJsonMessageDecoder
from sparkcdc.codec.canal_json.encoder import CanalJsonMessageEncoder, CanalJsonTxnEncoder, go_fix
from sparkcdc.codec.canal_json.values import f32_text, f64_text
from sparkcdc.codec.gofmt import float32, go_float_f, go_json_string
from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_INT_RANGES = {
    ("tinyint", False): (-(2**7), 2**7 - 1),
    ("tinyint", True): (0, 2**8 - 1),
    ("smallint", False): (-(2**15), 2**15 - 1),
    ("smallint", True): (0, 2**16 - 1),
    ("mediumint", False): (-(2**23), 2**23 - 1),
    ("mediumint", True): (0, 2**24 - 1),
    ("int", False): (-(2**31), 2**31 - 1),
    ("int", True): (0, 2**32 - 1),
    ("bigint", False): (-(2**63), 2**63 - 1),
    ("bigint", True): (0, 2**64 - 1),
}
_EDGY_TEXT = st.sampled_from(
    [
        'a"b',
        "line1\r\nline2",
        "<a>&b</a>",
        "emoji 🚀👍",
        "\x00\x08\x0c\x1f\x7f",
        "\u2028\u2029",
        "back\\slash\\b\\f",
        "",
        "ÿ",
        "\\\x08",
    ]
)
_TEXT = st.one_of(st.text(max_size=30), _EDGY_TEXT)
_BINARY = st.one_of(st.binary(max_size=30), st.sampled_from([b"\x00\xff", b"\x00" * 4, bytes(range(256))]))


def _column_kinds() -> st.SearchStrategy[dict[str, Any]]:
    ints = st.sampled_from(sorted(_INT_RANGES)).map(lambda k: {"type": k[0], "unsigned": k[1]})
    others = st.sampled_from(
        [
            {"type": "float"},
            {"type": "double"},
            {"type": "decimal", "length": 10, "decimal": 2},
            {"type": "decimal", "length": 30, "decimal": 10},
            {"type": "decimal", "length": 5, "decimal": 0},
            {"type": "date"},
            {"type": "datetime", "decimal": 3},
            {"type": "timestamp"},
            {"type": "time", "decimal": 2},
            {"type": "year"},
            {"type": "bit", "length": 1},
            {"type": "bit", "length": 64},
            {"type": "enum", "elements": ("a", "b'c", "d")},
            {"type": "set", "elements": ("x", "y", "z")},
            {"type": "char", "length": 10},
            {"type": "varchar", "length": 255},
            {"type": "text"},
            {"type": "longtext"},
            {"type": "binary", "length": 4},
            {"type": "varbinary", "length": 30},
            {"type": "blob"},
            {"type": "tinyblob"},
            {"type": "json"},
            {"type": "vector"},
            {"type": "geometry"},
        ]
    )
    return st.one_of(ints, others)


def _value(column: ColumnInfo) -> st.SearchStrategy[Any]:
    kind = column.type
    if (kind, column.unsigned) in _INT_RANGES:
        low, high = _INT_RANGES[(kind, column.unsigned)]
        return st.one_of(st.integers(low, high), st.sampled_from([low, high, 0]))
    if kind == "float":
        return st.floats(width=32, allow_nan=False, allow_infinity=False)
    if kind == "double":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "decimal":
        length, scale = column.length or 10, column.decimal or 0
        bound = 10**length - 1
        return st.integers(-bound, bound).map(lambda n: Decimal(n).scaleb(-scale))
    if kind == "date":
        return st.sampled_from(["0000-00-00", "2024-02-29", "1000-01-01", "9999-12-31"])
    if kind in ("datetime", "timestamp"):
        return st.sampled_from(["0000-00-00 00:00:00.000", "2024-03-11 08:51:01.461", "2020-02-20 10:20:20"])
    if kind == "time":
        return st.sampled_from(["-838:59:59.00", "838:59:59.99", "00:00:00.00", "-00:00:01.50"])
    if kind == "year":
        return st.one_of(st.just(0), st.integers(1901, 2155))
    if kind == "bit":
        return st.integers(0, 2 ** (column.length or 1) - 1)
    if kind == "enum":
        return st.integers(0, len(column.elements))
    if kind == "set":
        return st.integers(0, 2 ** len(column.elements) - 1)
    if kind in ("json", "vector"):
        return st.sampled_from(['{"key1": "value1"}', '[1, "<&>"]', "null", "[1,2,3]", '{"a": "\\u0000"}'])
    if column.is_binary:
        return _BINARY
    return _TEXT


@st.composite
def tables(draw: st.DrawFn) -> TableInfo:
    kinds = draw(st.lists(_column_kinds(), min_size=1, max_size=7))
    names = draw(
        st.lists(
            st.sampled_from(["id", "Name", "c<1>", 'q"uote', "ünï", "x&y", "a b", "tab\tcol", "c9", "é"]),
            min_size=len(kinds),
            max_size=len(kinds),
            unique_by=str.lower,
        )
    )
    has_pk = draw(st.booleans())
    columns = []
    for k, (kind, name) in enumerate(zip(kinds, names)):
        pk = has_pk and k == 0
        columns.append(ColumnInfo(name=name, primary_key=pk, handle_key=pk, nullable=not pk, **kind))
    return TableInfo(schema=draw(st.sampled_from(["db", "d<b>"])), table="t&1", table_id=7, columns=tuple(columns))


@st.composite
def rows_of(draw: st.DrawFn, table: TableInfo) -> RowChange:
    def image() -> tuple[Any, ...]:
        return tuple(None if c.nullable and draw(st.integers(0, 5)) == 0 else draw(_value(c)) for c in table.columns)

    op = draw(st.sampled_from(list(RowOp)))
    commit_ts = draw(st.integers(0, 2**64 - 1))
    if op is RowOp.INSERT:
        return RowChange(commit_ts, table, op, None, image())
    if op is RowOp.DELETE:
        return RowChange(commit_ts, table, op, image(), None)
    after = image()
    before = tuple(v if draw(st.booleans()) else w for v, w in zip(after, image()))
    return RowChange(commit_ts, table, op, before, after)


@st.composite
def transactions(draw: st.DrawFn) -> list[RowChange]:
    table = draw(tables())
    return draw(st.lists(rows_of(table), min_size=1, max_size=5))


def _canon(values: tuple[Any, ...] | None) -> Any:
    """Exact comparison: Decimal by digits and exponent, float by bits (so -0.0 != 0.0), types included."""
    if values is None:
        return None
    out = []
    for v in values:
        if isinstance(v, Decimal):
            out.append(("D", v.as_tuple()))
        elif isinstance(v, float):
            out.append(("F", struct.pack("<d", v)))
        else:
            out.append((type(v).__name__, v))
    return out


def _restorable_before(row: RowChange) -> tuple[Any, ...] | None:
    """The pre-image a decoder can restore under only-output-updated-columns: a column whose value equals the
    new one is left out of "old" (TiCDC compares values, and -0.0 == 0.0) and restored from "data", so only the
    sign of a zero can differ."""
    if row.before is None or row.after is None:
        return row.before
    return tuple(
        a if isinstance(b, float) and isinstance(a, float) and b == a else b
        for b, a in zip(row.before, row.after, strict=True)
    )


def _config(**options: Any) -> CanalJsonConfig:
    return CanalJsonConfig.from_options(options)


@SETTINGS
@given(transactions(), st.sampled_from(["\r\n", "\n", "|<&>|"]), st.booleans())
def test_storage_round_trip(rows: list[RowChange], terminator: str, content_compatible: bool) -> None:
    config = _config(
        **{"enable-tidb-extension": True, "terminator": terminator, "content-compatible": content_compatible}
    )
    data = CanalJsonTxnEncoder(config, now_ms=lambda: 5).encode_txn(rows)
    assert data.endswith(terminator.encode())
    assert data.count(b"\n") == len(rows) * terminator.count("\n")  # JSON never holds a raw LF
    decoded = list(CanalJsonFileDecoder(config).decode_file(data, rows[0].table, source="t.json"))
    assert len(decoded) == len(rows)
    for got, want in zip(decoded, rows):
        assert (got.op, got.commit_ts, got.table) == (want.op, want.commit_ts, want.table)
        assert _canon(got.after) == _canon(want.after)
        before = _restorable_before(want) if content_compatible else want.before
        assert _canon(got.before) == _canon(before)


@SETTINGS
@given(transactions())
def test_every_line_is_the_message_and_valid_json(rows: list[RowChange]) -> None:
    txn = CanalJsonTxnEncoder(now_ms=lambda: 9).encode_txn(rows)
    messages = CanalJsonMessageEncoder(now_ms=lambda: 9)
    lines = txn.split(b"\r\n")[:-1]
    assert lines == [messages.encode_row(r).value for r in rows]
    batch = messages.encode_rows(rows)  # the Kafka sink's per-transaction path, when it applies
    assert batch is None or [m.value for m in batch] == lines
    for line, row in zip(lines, rows):
        obj = orjson.loads(line)
        assert list(obj) == [
            "id",
            "database",
            "table",
            "pkNames",
            "isDdl",
            "type",
            "es",
            "ts",
            "sql",
            "sqlType",
            "mysqlType",
            "old",
            "data",
        ]
        assert obj["es"] == row.commit_ts >> 18
        assert obj["pkNames"] == list(row.table.primary_key_names)
        for forbidden in (b"<", b">", b"&", b"\xe2\x80\xa8", b"\\b", b"\\f"):
            assert forbidden not in line.replace(b"\\\\", b"")


@SETTINGS
@given(transactions())
def test_message_round_trip(rows: list[RowChange]) -> None:
    encoder = CanalJsonMessageEncoder(_config(**{"enable-tidb-extension": True, "content-compatible": True}))
    decoder = CanalJsonMessageDecoder()
    for row in rows:
        [event] = list(decoder.decode(encoder.encode_row(row)))
        assert isinstance(event, RowChange)
        assert (event.op, event.commit_ts) == (row.op, row.commit_ts)
        assert _canon(event.after) == _canon(row.after)
        assert _canon(event.before) == _canon(_restorable_before(row))  # content-compatible: only updated columns
        got, want = event.table, row.table
        assert (got.schema, got.table, got.primary_key_names) == (want.schema, want.table, want.primary_key_names)
        assert [(c.name, c.type, c.unsigned, c.elements) for c in got.columns] == [
            (c.name, c.type, c.unsigned, c.elements) for c in want.columns
        ]


@SETTINGS
@given(transactions())
def test_lossy_options(rows: list[RowChange]) -> None:
    table = rows[0].table
    config = _config(**{"delete-only-output-handle-key-columns": True, "only-output-updated-columns": True})
    data = CanalJsonTxnEncoder(config).encode_txn(rows)
    decoded = list(CanalJsonFileDecoder().decode_file(data, table))
    keys = set(table.handle_key_positions)
    for got, want in zip(decoded, rows):
        assert got.commit_ts == 0  # no _tidb: the commit ts is not in the line
        if want.op is RowOp.DELETE:
            assert want.before is not None
            expected = tuple(v if i in keys else None for i, v in enumerate(want.before))
            assert _canon(got.before) == _canon(expected)
        else:  # only-output-updated-columns still restores the full pre-image
            assert _canon(got.before) == _canon(_restorable_before(want))
            assert _canon(got.after) == _canon(want.after)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False))
def test_f64_text_matches_go(value: float) -> None:
    assert f64_text(value) == go_float_f(value, 64)


@settings(max_examples=200, deadline=None)
@given(st.floats(width=32, allow_nan=False))
def test_f32_text_matches_go_and_round_trips(value: float) -> None:
    text = f32_text(value)
    assert text == go_float_f(value, 32)
    if math.isfinite(value):
        assert float32(float(text)) == value


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), _EDGY_TEXT))
def test_go_fix_is_easyjson_string(text: str) -> None:
    assert go_fix(orjson.dumps(text)).decode() == go_json_string(text, short_bf=False)


def test_edge_values_one_row() -> None:
    table = TableInfo(
        "db",
        "t",
        1,
        (
            ColumnInfo("id", "bigint", unsigned=True, primary_key=True, handle_key=True, nullable=False),
            ColumnInfo("d", "decimal", length=20, decimal=10),
            ColumnInfo("z", "date"),
            ColumnInfo("b", "varbinary"),
            ColumnInfo("s", "varchar"),
            ColumnInfo("f", "float"),
        ),
    )
    row = RowChange(
        1 << 18,
        table,
        RowOp.INSERT,
        None,
        (2**64 - 1, Decimal("-0.0000000001"), "0000-00-00", b"\x00\xff\x08", 'q"\r\n🚀<>&\b', 3.4028234663852886e38),
    )
    line = CanalJsonTxnEncoder(now_ms=lambda: 1).encode_txn([row])
    assert b'"sqlType":{"id":3,' in line  # unsigned BIGINT above 2^63-1 is promoted to DECIMAL
    assert b'"d":"-0.0000000001"' in line
    assert '"b":"\\u0000ÿ\\u0008"'.encode() in line
    assert '"s":"q\\"\\r\\n🚀\\u003c\\u003e\\u0026\\u0008"'.encode() in line
    assert b'"f":"340282350000000000000000000000000000000"' in line
    [got] = list(CanalJsonFileDecoder().decode_file(line, table))
    assert _canon(got.after) == _canon(row.after)


def test_registry_factories() -> None:
    table = TableInfo("db", "t", 1, (ColumnInfo("id", "int"),))
    row = RowChange(1 << 18, table, RowOp.INSERT, None, (5,))
    encoder = base.txn_encoder("canal-json", {"enable-tidb-extension": "true", "terminator": "\n"})
    assert encoder.file_extension == ".json"
    assert encoder.file_header(table) == b""
    data = encoder.encode_txn([row])
    assert data.endswith(b',"_tidb":{"commitTs":262144}}\n')
    assert [r.after for r in base.file_decoder("canal-json", {"terminator": "\n"}).decode_file(data, table)] == [(5,)]
    message = base.message_encoder("canal-json").encode_row(row)
    [event] = list(base.message_decoder("canal-json").decode(message))
    assert isinstance(event, RowChange) and event.after == (5,)


@pytest.mark.parametrize("ts", [0, 1024, 450253245302439944])
def test_watermark_round_trip(ts: int) -> None:
    encoder = CanalJsonMessageEncoder(_config(**{"enable-tidb-extension": True}), now_ms=lambda: 3)
    assert encoder.emits_watermarks
    [event] = list(CanalJsonMessageDecoder().decode(encoder.encode_watermark(ts)))
    assert event.ts == ts  # type: ignore[union-attr]


@pytest.mark.parametrize("count", [1, 6, 7, 9])
def test_many_unsigned_promotions(count: int) -> None:
    columns = tuple(ColumnInfo(f"c{i}", "int", unsigned=True) for i in range(count))
    table = TableInfo("db", "t", 1, columns)
    values = tuple(2**32 - 1 if i % 2 else 5 for i in range(count))
    row = RowChange(1, table, RowOp.DELETE, values, None)
    line = CanalJsonTxnEncoder(now_ms=lambda: 1).encode_txn([row, row])
    codes = orjson.loads(line.split(b"\r\n")[1])["sqlType"]
    assert codes == {f"c{i}": -5 if i % 2 else 4 for i in range(count)}
    [got, _] = list(CanalJsonFileDecoder().decode_file(line, table))
    assert got.before == values


@SETTINGS
@given(transactions(), st.booleans(), st.booleans(), st.booleans())
def test_transaction_loop_matches_row_at_a_time_path(
    rows: list[RowChange], tidb: bool, only_updated: bool, delete_key_only: bool
) -> None:
    config = _config(
        **{
            "enable-tidb-extension": tidb,
            "only-output-updated-columns": only_updated,
            "delete-only-output-handle-key-columns": delete_key_only,
        }
    )
    encoder = CanalJsonTxnEncoder(config, now_ms=lambda: 3)
    assert encoder.encode_txn(rows) == encoder.encode_rows(rows)


def test_encode_rows_takes_the_compiled_path_and_leaves_oversized_rows_to_encode_row() -> None:
    table = TableInfo("db", "t<&>", 1, (ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True),
                                         ColumnInfo("v", "varchar", length=9000)))  # fmt: skip
    rows = [RowChange(7 << 18, table, RowOp.INSERT, None, (k, "a<b>&c\u2028" * k)) for k in range(1, 4)]
    encoder = CanalJsonMessageEncoder(now_ms=lambda: 9)
    batch = encoder.encode_rows(rows)
    assert batch is not None and [m.value for m in batch] == [encoder.encode_row(r).value for r in rows]
    small = CanalJsonMessageEncoder(CanalJsonConfig(max_message_bytes=400), now_ms=lambda: 9)
    big = [*rows, RowChange(7 << 18, table, RowOp.INSERT, None, (9, "x" * 500))]
    assert small.encode_rows(big) is None and small.encode_rows([]) == []
