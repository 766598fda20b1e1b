"""CSV config validation, registry wiring, encoder errors and decoder errors on malformed files."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from sparkcdc.codec.base import file_decoder, txn_encoder
from sparkcdc.codec.csv.config import CsvConfig
from sparkcdc.codec.csv.decoder import CsvDecoder
from sparkcdc.codec.csv.encoder import CsvEncoder
from sparkcdc.errors import ConfigError, DecodeError, EncodeError
from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo

TABLE = TableInfo(
    "db",
    "t",
    1,
    (
        ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True),
        ColumnInfo("name", "varchar"),
        ColumnInfo("data", "blob"),
        ColumnInfo("state", "enum", elements=("on", "off")),
        ColumnInfo("tags", "set", elements=("a", "b")),
    ),
)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"delimiter": ""}, "csv config delimiter cannot be empty"),
        ({"delimiter": "abcd"}, "csv config delimiter contains more than three characters"),
        ({"delimiter": "，，"}, "csv config delimiter contains more than three characters"),  # 2 characters, 6 bytes
        ({"delimiter": "a\nb"}, "csv config delimiter contains line break characters"),
        ({"delimiter": "\r"}, "csv config delimiter contains line break characters"),
        ({"quote": "ab"}, "csv config quote contains more than one character (quote 'ab')"),
        ({"quote": "é"}, "csv config quote contains more than one character"),
        ({"quote": "\n"}, "csv config quote cannot be line break character"),
        ({"delimiter": '"'}, "csv config quote and delimiter has common characters which is not allowed"),
        ({"delimiter": "|'|", "quote": "'"}, 'has common characters which is not allowed (delimiter "|\'|"'),
        ({"delimiter": "\\", "quote": ""}, "must not contain a backslash when quote is empty"),
        ({"binary-encoding-method": "base32"}, "binary-encoding-method can only be hex or base64 (binary-encoding"),
        ({"null": "a,b"}, "csv config null 'a,b' must not contain"),
        ({"null": "x\ny"}, "csv config null"),
        ({"include-commit-ts": "yes"}, "csv config include-commit-ts must be true or false, got str 'yes'"),
        ({"output-old-value": 1}, "csv config output-old-value must be true or false"),
        ({"delimiter": 5}, "csv config delimiter must be a string, got int 5"),
        ({"frobnicate": True}, "unknown csv option 'frobnicate'; use one of: binary-encoding-method, delimiter"),
    ],
)
def test_bad_config(options: dict[str, Any], message: str) -> None:
    """TiCDC's messages (``CSVConfig.validateAndAdjust``) and code, with the value given."""
    with pytest.raises(ConfigError) as err:
        CsvConfig.from_options(options)
    assert message in str(err.value)
    assert err.value.code == "CDC:ErrSinkInvalidConfig"
    assert "\n" not in str(err.value)


def test_config_defaults_and_spellings() -> None:
    assert CsvConfig.from_options({}) == CsvConfig()
    assert CsvConfig() == CsvConfig(",", '"', "\\N", "\r\n", False, "base64", False, False, False)
    cfg = CsvConfig.from_options(
        {"include_commit_ts": "TRUE", "Output-Old-Value": True, "binary-encoding-method": "HEX", "quote": ""}
    )
    assert (cfg.include_commit_ts, cfg.output_old_value, cfg.binary_encoding_method) == (True, True, "hex")
    assert cfg.escape_mode


def test_registry_builds_csv_codecs() -> None:
    encoder = txn_encoder("csv", {"delimiter": "|", "include-commit-ts": True})
    assert isinstance(encoder, CsvEncoder)
    assert encoder.file_extension == ".csv"
    decoder = file_decoder("csv", {"delimiter": "|", "include-commit-ts": True})
    assert isinstance(decoder, CsvDecoder)
    row = RowChange(7, TABLE, RowOp.INSERT, None, (1, "x", b"\x00", 1, 3))
    assert list(decoder.decode_file(encoder.encode_txn([row]), TABLE)) == [row]
    with pytest.raises(ConfigError, match="unknown csv option"):
        txn_encoder("csv", {"no-such": 1})


def test_codecs_pickle_after_use() -> None:
    """Spark ships codecs to executors: their compiled per-table caches must not break pickling."""
    cfg = CsvConfig.from_options({"quote": "", "delimiter": "[*]"})
    encoder, decoder = CsvEncoder(cfg), CsvDecoder(cfg)
    row = RowChange(0, TABLE, RowOp.INSERT, None, (1, "a[*]b", b"\x01", 2, 1))
    data = encoder.encode_txn([row])
    assert list(decoder.decode_file(data, TABLE)) == [row]
    encoder2, decoder2 = pickle.loads(pickle.dumps(encoder)), pickle.loads(pickle.dumps(decoder))
    assert encoder2.config == cfg
    assert encoder2.encode_txn([row]) == data
    assert list(decoder2.decode_file(data, TABLE)) == [row]


def test_file_header_only_when_enabled() -> None:
    on = CsvEncoder(CsvConfig.from_options({"output-field-header": True, "terminator": "\n"}))
    assert on.file_header(TABLE) == b"ticdc-meta$operation,ticdc-meta$table,ticdc-meta$schema,id,name,data,state,tags\n"
    assert CsvEncoder().file_header(TABLE) == b""


def test_handle_key_forms() -> None:
    composite = TableInfo(
        "db",
        "c",
        2,
        (
            ColumnInfo("a", "varchar", nullable=False, primary_key=True, handle_key=True),
            ColumnInfo("b", "int", nullable=False, primary_key=True, handle_key=True),
            ColumnInfo("v", "int"),
        ),
    )
    cfg = CsvConfig.from_options({"output-handle-key": True, "terminator": "\n"})
    enc = CsvEncoder(cfg)
    assert enc.encode_txn([RowChange(1, composite, RowOp.DELETE, ("x", 5, None), None)]) == (
        b'"D","c","db","{x, 5}","x",5,\\N\n'
    )
    assert enc.encode_txn([RowChange(1, TABLE, RowOp.INSERT, None, (9, None, None, None, None))]) == (
        b'"I","t","db","9",9,\\N,\\N,\\N,\\N\n'
    )
    # the handle-key column is skipped on decode
    data = enc.encode_txn([RowChange(1, composite, RowOp.DELETE, ("x", 5, None), None)])
    assert list(CsvDecoder(cfg).decode_file(data, composite)) == [
        RowChange(0, composite, RowOp.DELETE, ("x", 5, None), None)
    ]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ((1, "a", None, 0, 0), "column 'state' (enum): cannot write int value: enum index 0 out of range 1..2"),
        ((1, "a", None, 3, 0), "column 'state' (enum)"),
        ((1, "a", None, 1, 4), "column 'tags' (set): cannot write int value: set value 4 has bits beyond"),
        ((1, 5, None, 1, 0), "column 'name' (varchar): cannot write int value"),
        ((1, "a", "not bytes", 1, 0), "column 'data' (blob): cannot write str value"),
        ((1, "a"), "row has 2 values for 5 columns"),
    ],
)
def test_encode_errors_name_the_column(values: tuple[Any, ...], message: str) -> None:
    with pytest.raises(EncodeError) as err:
        CsvEncoder().encode_txn([RowChange(1, TABLE, RowOp.INSERT, None, values)])
    assert message in str(err.value)
    assert str(err.value).startswith("db.t: ")


def test_encode_error_in_common_handle_key() -> None:
    table = TableInfo("db", "e", 3, (ColumnInfo("k", "enum", elements=("x",), nullable=False, handle_key=True),))
    encoder = CsvEncoder(CsvConfig.from_options({"output-handle-key": True}))
    with pytest.raises(EncodeError, match=r"^db\.e: cannot write the handle key: enum index 0 out of range"):
        encoder.encode_txn([RowChange(1, table, RowOp.INSERT, None, (0,))])


def test_encode_error_on_unencodable_text() -> None:
    with pytest.raises(EncodeError, match="not encodable as UTF-8"):
        CsvEncoder().encode_txn([RowChange(1, TABLE, RowOp.INSERT, None, (1, "\ud800", None, 1, 0))])


GOOD = b'"I","t","db",5,1,"x","AA==","on","a,b"\n'
CFG = {"include-commit-ts": True, "terminator": "\n"}


@pytest.mark.parametrize(
    ("data", "options", "message"),
    [
        (GOOD[:-1], CFG, "line 1: truncated row (no terminator at the end of the file)"),
        (GOOD + GOOD[:19], CFG, "line 2, column 'name': unterminated quoted field"),
        (GOOD + GOOD[:20], CFG, "line 2: row has 6 fields, expected 9"),
        (b'"I","t","db",5,1,"x"y,"AA==","on",""\n', CFG, "line 1, column 'name': unexpected character"),
        (GOOD + b'"I","t","db",5,1,"x","AA==","on"\n', CFG, "line 2: row has 8 fields, expected 9"),
        (b'"I","t","db",5,1,"x","AA==","on","",7\n', CFG, "line 1: row has 10 fields, expected 9 (4 meta + 5 columns); "
         "if every row is so, read it with the changefeed's [sink.csv] settings (a consumer's --config: "
         "include-commit-ts"),
        (b'"I","t","db",5x,1,"x","AA==","on",""\n', CFG, "line 1, column 'commit-ts': '5x' is not a uint64"),
        (b'"I","t","db",18446744073709551616,1,"x","AA==","on",""\n', CFG, "column 'commit-ts'"),
        (b'"X","t","db",5,1,"x","AA==","on",""\n', CFG, "line 1, column 'operation': 'X' is not I, U or D"),
        (b'"I","t","db",5,1,"x","AA=","on",""\n', CFG, "line 1, column 'data': invalid base64"),
        (
            b'"I","t","db",5,1,"x","0g","on",""\n',
            {**CFG, "binary-encoding-method": "hex"},
            "column 'data': invalid hex",
        ),
        (b'"I","t","db",5,1,"x","AA==","maybe",""\n', CFG, "column 'state': 'maybe' is not an element of enum"),
        (b'"I","t","db",5,1,"x","AA==","on","a,c"\n', CFG, "column 'tags': 'c' is not an element of set"),
        (b'"I","t","db",5,abc,"x","AA==","on",""\n', CFG, "column 'id': 'abc' is not an integer"),
        (
            b'"I","t","db",5,99999999999,"x","AA==","on",""\n',
            CFG,
            "column 'id': 99999999999 is out of range [-2147483648, 2147483647]",
        ),
        (
            GOOD + b'"I","t","db",5,1,"\xff","AA==","on",""\n',
            CFG,
            f"line 2, column 'name': invalid UTF-8 at byte {len(GOOD) + 18}",
        ),
        (GOOD, {**CFG, "output-field-header": True}, 'line 1: header \'"I","t","db",5,1'),
        (b"ticdc-meta$operation", {**CFG, "output-field-header": True}, "header line has no terminator"),
        (b'"I","t","db",5,maybe,1,"x","AA==","on",""\n', {**CFG, "output-old-value": True}, "'is-update'"),
        (
            b'"D","t","db",5,true,1,"x","AA==","on",""\n',
            {**CFG, "output-old-value": True},
            "the file ends inside an is-update D+I pair",
        ),
        (
            b'"D","t","db",5,true,1,"x","AA==","on",""\n"D","t","db",5,true,1,"x","AA==","on",""\n',
            {**CFG, "output-old-value": True},
            "line 2, column 'operation': an is-update D row is not followed by its I row",
        ),
        (
            b'"I","t","db",5,true,1,"x","AA==","on",""\n',
            {**CFG, "output-old-value": True},
            "an is-update I row has no D row before it",
        ),
        (b"I,t,db,5,1,x\\", {**CFG, "quote": ""}, "line 1"),
        (b"\xfe", {**CFG, "output-field-header": True}, "line 1, column 'header': invalid UTF-8 at byte 0"),
        (b'"\xfe', CFG, "line 1, column 'ticdc-meta$operation': invalid UTF-8 at byte 1"),
    ],
)
def test_decode_errors_name_source_line_and_column(data: bytes, options: dict[str, Any], message: str) -> None:
    decoder = CsvDecoder(CsvConfig.from_options(options))
    with pytest.raises(DecodeError) as err:
        list(decoder.decode_file(data, TABLE, source="db/t/1/CDC000001.csv"))
    assert str(err.value).startswith("db/t/1/CDC000001.csv: ")
    assert message in str(err.value)


def test_decode_good_file_and_header() -> None:
    cfg = CsvConfig.from_options({**CFG, "output-field-header": True})
    header = CsvEncoder(cfg).file_header(TABLE)
    rows = list(CsvDecoder(cfg).decode_file(header.upper() + GOOD, TABLE))  # names compare case-insensitively
    assert rows == [RowChange(5, TABLE, RowOp.INSERT, None, (1, "x", b"\x00", 1, 3))]
    assert list(CsvDecoder(cfg).decode_file(b"", TABLE)) == []


def test_quoted_null_text_is_a_string_and_bare_null_is_null() -> None:
    cfg = CsvConfig.from_options(CFG)
    data = b'"I","t","db",5,1,"\\N",\\N,\\N,\\N\n'
    (row,) = CsvDecoder(cfg).decode_file(data, TABLE)
    assert row.after == (1, "\\N", None, None, None)
    assert CsvEncoder(cfg).encode_txn([row]) == data
