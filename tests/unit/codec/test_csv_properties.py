"""Property tests: decode(encode(x)) == x over every MySQL type and config, and a decoder fuzz test."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sparkcdc.codec.csv.config import CsvConfig
from sparkcdc.codec.csv.decoder import CsvDecoder
from sparkcdc.codec.csv.encoder import CsvEncoder, _Compiler, float64_text
from sparkcdc.codec.csv.message import format_value
from sparkcdc.errors import ConfigError, DecodeError
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys

DELIMITERS = [",", "\t", "|", "[*]", "，", ";;", "ab"]
QUOTES = ['"', "'", ""]
NULLS = ["\\N", "NULL", ""]
TERMINATORS = ["\r\n", "\n", "\r"]
SPECIAL = [
    ",",
    '"',
    "'",
    "\r",
    "\n",
    "\r\n",
    "\\",
    "\\N",
    "NULL",
    "[*]",
    "，",
    "|",
    "\t",
    ";",
    "a",
    "b",
    "😀",
    "ï",
    "\x00",
]

COLUMNS = (
    ColumnInfo("id", "int", nullable=False),
    ColumnInfo("c_tiny", "tinyint"),
    ColumnInfo("c_tiny_u", "tinyint", unsigned=True),
    ColumnInfo("c_small", "smallint"),
    ColumnInfo("c_med_u", "mediumint", unsigned=True),
    ColumnInfo("c_int", "int"),
    ColumnInfo("c_big", "bigint"),
    ColumnInfo("c_big_u", "bigint", unsigned=True),
    ColumnInfo("c_float", "float"),
    ColumnInfo("c_double", "double"),
    ColumnInfo("c_dec", "decimal", length=20, decimal=6),
    ColumnInfo("c_dec0", "decimal", length=10, decimal=0),
    ColumnInfo("c_dec_big", "decimal", length=65, decimal=30),
    ColumnInfo("c_date", "date"),
    ColumnInfo("c_dt", "datetime", decimal=6),
    ColumnInfo("c_ts", "timestamp"),
    ColumnInfo("c_time", "time", decimal=3),
    ColumnInfo("c_year", "year", unsigned=True),
    ColumnInfo("c_char", "char", length=10),
    ColumnInfo("c_varchar", "varchar", length=255),
    ColumnInfo("c_text", "longtext"),
    ColumnInfo("c_binary", "binary", length=4),
    ColumnInfo("c_varbinary", "varbinary", length=64),
    ColumnInfo("c_blob", "blob"),
    ColumnInfo("c_enum", "enum", elements=("a", "b,c", "", '"q"', "😀")),
    ColumnInfo("c_set", "set", elements=("x", "y", "z")),
    ColumnInfo("c_bit", "bit", length=64, unsigned=True),
    ColumnInfo("c_json", "json"),
    ColumnInfo("c_vector", "vector"),
    ColumnInfo("c_geometry", "geometry"),
    ColumnInfo("c_virtual", "int", generated="virtual"),
    ColumnInfo("c_stored", "varchar", generated="stored"),
)
TABLE = TableInfo(
    "db,1", 'tab"le', 42, with_handle_keys(COLUMNS, (IndexInfo("PRIMARY", ("id",), primary=True),)), version=7
)


def _text() -> st.SearchStrategy[str]:
    pieces = st.one_of(st.characters(blacklist_categories=("Cs",)), st.sampled_from(SPECIAL))
    return st.lists(pieces, max_size=8).map("".join)


def _decimal(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    bound = 10**precision - 1
    edges = st.sampled_from([0, bound, -bound, 1, -1])
    return st.one_of(edges, st.integers(-bound, bound)).map(lambda n: Decimal(f"{n}e-{scale}"))


def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from([low, high, 0]), st.integers(low, high))


def _temporal(fmt_fraction: int) -> st.SearchStrategy[str]:
    frac = (lambda n: "." + str(n).zfill(fmt_fraction)) if fmt_fraction else (lambda n: "")
    return st.builds(
        lambda d, h, m, s, f: f"{d.isoformat()} {h:02d}:{m:02d}:{s:02d}{frac(f)}",
        st.dates(),
        st.integers(0, 23),
        st.integers(0, 59),
        st.integers(0, 59),
        st.integers(0, 10**fmt_fraction - 1),
    )


VALUE_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "c_tiny": _ints(-128, 127),
    "c_tiny_u": _ints(0, 255),
    "c_small": _ints(-32768, 32767),
    "c_med_u": _ints(0, 2**24 - 1),
    "c_int": _ints(-(2**31), 2**31 - 1),
    "c_big": _ints(-(2**63), 2**63 - 1),
    "c_big_u": _ints(0, 2**64 - 1),
    "c_float": st.floats(width=32, allow_nan=False, allow_infinity=False),
    "c_double": st.floats(allow_nan=False, allow_infinity=False),
    "c_dec": _decimal(20, 6),
    "c_dec0": _decimal(10, 0),
    "c_dec_big": _decimal(65, 30),
    "c_date": st.one_of(st.just("0000-00-00"), st.dates().map(lambda d: d.isoformat())),
    "c_dt": st.one_of(st.just("0000-00-00 00:00:00.000000"), _temporal(6)),
    "c_ts": _temporal(0),
    "c_time": st.sampled_from(["-838:59:59.000", "838:59:59.000", "00:00:00.000", "-00:00:01.500", "12:34:56.789"]),
    "c_year": st.one_of(st.just(0), st.integers(1901, 2155)),
    "c_char": _text(),
    "c_varchar": _text(),
    "c_text": _text(),
    "c_binary": st.one_of(
        st.sampled_from([b"\x00\x00\x00\x00", b"\xff\xff\xff\xff"]), st.binary(min_size=4, max_size=4)
    ),
    "c_varbinary": st.binary(max_size=64),
    "c_blob": st.binary(max_size=100),
    "c_enum": st.integers(1, 5),
    "c_set": st.integers(0, 7),
    "c_bit": _ints(0, 2**64 - 1),
    "c_json": st.one_of(st.just('{"key1": "value1", "a": [1, 2.5, null]}'), _text()),
    "c_vector": st.sampled_from(["[1,2,3]", "[]", "[-1.5,2e+10]"]),
    "c_geometry": st.binary(max_size=30),
    "c_virtual": st.none(),
    "c_stored": _text(),
}


# One strategy built once (building strategies inside a composite per draw dominates the run time).
IMAGES = st.tuples(
    st.integers(-(2**31), 2**31 - 1), *(st.one_of(st.none(), VALUE_STRATEGIES[c.name]) for c in COLUMNS[1:])
)


def _overlaps_itself(delimiter: str) -> bool:
    return any(delimiter[:k] == delimiter[-k:] for k in range(1, len(delimiter)))


@st.composite
def configs(draw: st.DrawFn, lossless: bool = True) -> CsvConfig:
    quote = draw(st.sampled_from(QUOTES))
    options = {
        "delimiter": draw(st.sampled_from(DELIMITERS)),
        "quote": quote,
        # in escape mode only a null string with a backslash cannot collide with an escaped string
        "null": draw(st.sampled_from(NULLS if quote or not lossless else ["\\N"])),
        "terminator": draw(st.sampled_from(TERMINATORS)),
        "include-commit-ts": draw(st.booleans()),
        "output-old-value": draw(st.booleans()),
        "output-handle-key": draw(st.booleans()),
        "output-field-header": draw(st.booleans()),
        "binary-encoding-method": draw(st.sampled_from(["base64", "hex"])),
    }
    # Escape mode cannot tell ";" + ";;" from ";;" + ";": a delimiter that overlaps itself is lossy there.
    assume(not (lossless and not quote and _overlaps_itself(str(options["delimiter"]))))
    try:
        return CsvConfig.from_options(options)
    except ConfigError:
        assume(False)
        raise  # pragma: no cover


@st.composite
def transactions(draw: st.DrawFn) -> list[RowChange]:
    commit_ts = draw(st.one_of(st.just(2**64 - 1), st.integers(0, 2**64 - 1)))
    rows = []
    for op in draw(st.lists(st.sampled_from(list(RowOp)), min_size=1, max_size=3)):
        before = draw(IMAGES) if op is not RowOp.INSERT else None
        after = draw(IMAGES) if op is not RowOp.DELETE else None
        rows.append(RowChange(commit_ts, TABLE, op, before, after))
    return rows


_ENCODERS: dict[CsvConfig, CsvEncoder] = {}
_DECODERS: dict[CsvConfig, CsvDecoder] = {}


def encoder_for(cfg: CsvConfig) -> CsvEncoder:
    """Codecs are reused across examples (their per-table compilation is what costs)."""
    if cfg not in _ENCODERS:
        _ENCODERS[cfg] = CsvEncoder(cfg)
    return _ENCODERS[cfg]


def decoder_for(cfg: CsvConfig) -> CsvDecoder:
    if cfg not in _DECODERS:
        _DECODERS[cfg] = CsvDecoder(cfg)
    return _DECODERS[cfg]


def expected_decode(cfg: CsvConfig, rows: list[RowChange]) -> list[RowChange]:
    """What a CSV file can give back (see the decoder's module docstring)."""
    out = []
    for r in rows:
        ts = r.commit_ts if cfg.include_commit_ts else 0
        if r.op is RowOp.UPDATE and not cfg.output_old_value:
            out.append(RowChange(ts, r.table, RowOp.INSERT, None, r.after))
        else:
            out.append(RowChange(ts, r.table, r.op, r.before, r.after))
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs(), rows=transactions())
def test_decode_encode_roundtrip(cfg: CsvConfig, rows: list[RowChange]) -> None:
    encoder = encoder_for(cfg)
    data = encoder.file_header(TABLE) + encoder.encode_txn(rows)
    decoded = list(decoder_for(cfg).decode_file(data, TABLE, source="db/t/7/CDC1.csv"))
    assert decoded == expected_decode(cfg, rows)


@settings(max_examples=200, deadline=None)
@given(cfg=configs(lossless=False), value=_text())
def test_compiled_string_field_matches_reference(cfg: CsvConfig, value: str) -> None:
    fn = _Compiler(cfg).compile("f", [(0, ColumnInfo("c", "text"))])
    assert fn((value,)) == cfg.delimiter + format_value(value, cfg)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs(lossless=False), data=st.binary(max_size=300))
def test_fuzz_random_bytes_raise_only_decode_error(cfg: CsvConfig, data: bytes) -> None:
    _decode_or_decode_error(cfg, data)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs(lossless=False), rows=transactions(), draw=st.data())
def test_fuzz_mutated_files_raise_only_decode_error(cfg: CsvConfig, rows: list[RowChange], draw: st.DataObject) -> None:
    encoder = encoder_for(cfg)
    data = bytearray(encoder.file_header(TABLE) + encoder.encode_txn(rows))
    for _ in range(draw.draw(st.integers(1, 4))):
        at = draw.draw(st.integers(0, len(data)))
        kind = draw.draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        if kind == "flip" and at < len(data):
            data[at] = draw.draw(st.integers(0, 255))
        elif kind == "delete":
            del data[at : at + draw.draw(st.integers(1, 8))]
        elif kind == "insert":
            token = draw.draw(st.sampled_from([b'"', b",", b"\\", b"\r\n", b"\n", b"\xff", b"[*]", b"x", b"\xef\xbc"]))
            data[at:at] = token
        else:
            del data[at:]
    _decode_or_decode_error(cfg, bytes(data))


def _decode_or_decode_error(cfg: CsvConfig, data: bytes) -> None:
    try:
        rows = list(decoder_for(cfg).decode_file(data, TABLE, source="fuzz.csv"))
    except DecodeError as e:
        assert str(e).startswith("fuzz.csv: ")
        assert "\n" not in str(e)
    else:
        assert all(r.table is TABLE for r in rows)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs(lossless=False), rows=transactions())
def test_transaction_formatter_matches_row_at_a_time_path(cfg: CsvConfig, rows: list[RowChange]) -> None:
    encoder = encoder_for(cfg)
    assert encoder._formatter(TABLE).format_txn(rows, TABLE) is not None  # the fast path is what is tested
    assert encoder.encode_txn(rows) == encoder.encode_rows(rows)


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.floats(), st.floats(-1e7, 1e7), st.floats(-1e-3, 1e-3), st.sampled_from([1e-4, -1e-4, 1e6])))
def test_inlined_double_matches_go_v(value: float) -> None:
    fn = _Compiler(CsvConfig()).compile("f", [(0, ColumnInfo("c", "double"))])
    assert fn((value,)) == "," + float64_text(value)
