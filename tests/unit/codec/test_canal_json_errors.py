"""canal-json bad input: config errors, encode errors, decode errors that name source/line/field, and a
fixed-budget fuzz test asserting that malformed input only ever raises DecodeError."""

from __future__ import annotations

import pickle
import random
from decimal import Decimal
from typing import Any

import orjson
import pytest

from sparkcdc.codec.base import Message
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.decoder import CanalJsonFileDecoder, CanalJsonMessageDecoder
from sparkcdc.codec.canal_json.encoder import CanalJsonMessageEncoder, CanalJsonTxnEncoder
from sparkcdc.errors import ConfigError, DecodeError, EncodeError
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, RowChange, RowOp, TableInfo

TABLE = TableInfo(
    "db",
    "t",
    1,
    (
        ColumnInfo("id", "int", primary_key=True, handle_key=True, nullable=False),
        ColumnInfo("u", "bigint", unsigned=True),
        ColumnInfo("f", "float"),
        ColumnInfo("d", "decimal", length=10, decimal=2),
        ColumnInfo("b", "varbinary"),
        ColumnInfo("s", "varchar"),
        ColumnInfo("e", "enum", elements=("a", "b")),
        ColumnInfo("g", "int", generated="virtual"),
    ),
)
ROWS = [
    RowChange(1 << 40, TABLE, RowOp.INSERT, None, (1, 2**64 - 1, 1.5, Decimal("-1.25"), b"\x00\xff", "x\ny", 2, 7)),
    RowChange(
        1 << 40, TABLE, RowOp.UPDATE, (1, 3, None, None, None, "a", 1, 7), (1, 4, 2.5, Decimal("0.00"), b"", "b", 0, 8)
    ),
    RowChange(1 << 40, TABLE, RowOp.DELETE, (1, 4, 2.5, Decimal("0.00"), b"", "b", 0, 8), None),
]
EXT = CanalJsonConfig(enable_tidb_extension=True)


def _encoded() -> bytes:
    return CanalJsonTxnEncoder(EXT, now_ms=lambda: 1).encode_txn(ROWS)


def _decode_file(data: bytes) -> list[RowChange]:
    return list(CanalJsonFileDecoder().decode_file(data, TABLE, source="db/t/1/CDC1.json"))


# ---- config -------------------------------------------------------------------------------------------


def test_config_names_unknown_keys() -> None:
    with pytest.raises(ConfigError, match=r"unknown canal-json option.*bogus-key.*other"):
        CanalJsonConfig.from_options({"bogus-key": 1, "other": 2, "terminator": "\n"})


def test_config_parses_ticdc_option_names() -> None:
    config = CanalJsonConfig.from_options(
        {"enable-tidb-extension": "TRUE", "content_compatible": True, "protocol": "canal-json", "terminator": "\n"}
    )
    assert config.enable_tidb_extension and config.content_compatible and config.only_output_updated_columns
    assert config.terminator == "\n"
    assert CanalJsonConfig.from_options({}) == CanalJsonConfig()
    assert pickle.loads(pickle.dumps(config)) == config


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"enable-tidb-extension": "yes"}, "must be true or false"),
        ({"terminator": ""}, "must not be empty"),
        ({"terminator": 5}, "must be a string"),
        ({"protocol": "csv"}, "expected 'canal-json'"),
    ],
)
def test_config_rejects_bad_values(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CanalJsonConfig.from_options(options)


# ---- encoding -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("position", "value", "column"),
    [(0, "1", "db.t.id"), (3, 1.5, "db.t.d"), (4, "text", "db.t.b"), (5, 5, "db.t.s"), (2, "x", "db.t.f")],
)
def test_encode_rejects_wrong_value_types(position: int, value: Any, column: str) -> None:
    values = list(ROWS[0].after or ())
    values[position] = value
    row = RowChange(1, TABLE, RowOp.INSERT, None, tuple(values))
    with pytest.raises(EncodeError, match=column):
        CanalJsonTxnEncoder().encode_txn([row])
    with pytest.raises(EncodeError, match=column):
        CanalJsonMessageEncoder().encode_row(row)


def test_encode_rejects_wrong_width() -> None:
    row = RowChange(1, TABLE, RowOp.INSERT, None, (1, 2))
    with pytest.raises(EncodeError, match="row has 2 values but the table has 8 columns"):
        CanalJsonTxnEncoder().encode_txn([row])


def test_encode_checked_path_matches_fast_path_for_odd_but_valid_values() -> None:
    # NULL in a NOT NULL column, bool in an int column, bytearray, lone surrogate: all go the checked path
    values = (None, True, 1.5, Decimal("1E+2"), bytearray(b"\x08"), "a\udcffb", 1, None)
    row = RowChange(1, TABLE, RowOp.INSERT, None, values)
    line = CanalJsonTxnEncoder(now_ms=lambda: 1).encode_txn([row])
    assert b'"data":[{"id":null,"u":"1","f":"1.5","d":"100","b":"\\u0008","s":"a\xef\xbf\xbdb","e":"1"}]' in line


def test_virtual_columns_are_not_written() -> None:
    line = CanalJsonTxnEncoder(now_ms=lambda: 1).encode_txn(ROWS[:1])
    assert b'"g"' not in line
    [row] = _decode_file(line)
    assert row.after is not None and row.after[7] is None


def test_bootstrap_and_watermark_without_extension_raise() -> None:
    encoder = CanalJsonMessageEncoder()
    assert not encoder.emits_watermarks
    with pytest.raises(EncodeError, match="no bootstrap message"):
        encoder.encode_bootstrap(TABLE)
    with pytest.raises(EncodeError, match="enable-tidb-extension=true"):
        encoder.encode_watermark(5)


def test_ddl_round_trip_and_omitted_zero_commit_ts() -> None:
    encoder = CanalJsonMessageEncoder(EXT, now_ms=lambda: 1)
    ddl = DDLEvent(0, DDLAction.DROP_TABLE, "DROP TABLE `a<b>`", "db", "a<b>")
    message = encoder.encode_ddl(ddl)
    assert b'"type":"ERASE"' in message.value and message.value.endswith(b',"_tidb":{}}')
    assert b"\\u003c" in message.value
    assert list(CanalJsonMessageDecoder().decode(message)) == [ddl]


# ---- decoding errors ----------------------------------------------------------------------------------


def _line(**changes: Any) -> bytes:
    obj = orjson.loads(_encoded().split(b"\r\n")[0])
    for key, value in changes.items():
        if value is KeyError:
            del obj[key]
        else:
            obj[key] = value
    return orjson.dumps(obj)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_encoded()[:-30], "line 3: invalid JSON"),
        (b"[1]\r\n", "line 1: expected a JSON object, got array"),
        (_line(extra=1), "line 1: unknown member(s) 'extra'"),
        (_line(type=KeyError), "line 1: missing member 'type'"),
        (_line(data=KeyError), "line 1: missing member 'data'"),
        (_line(isDdl="no"), "line 1: member 'isDdl' must be boolean, got string"),
        (_line(es=1.5), "line 1: member 'es' must be number, got number"),
        (_line(type="UPSERT"), "member 'type' is 'UPSERT'"),
        (_line(data=[{"id": 1}]), "column 'id' in 'data' must be a string or null, got number"),
        (_line(data=[{"nope": "1"}]), "column 'nope' is not in table db.t"),
        (_line(data=[{"id": "x1"}]), "column 'id': 'x1' is not an integer"),
        (_line(data=[{"b": "\u0100"}]), "column 'b': binary value has a character above U+00FF"),
        (_line(data=[{"d": "1.2.3"}]), "column 'd': '1.2.3' is not a decimal"),
        (_line(data=[]), "member 'data' must hold at least one row image"),
        (_line(type="UPDATE", old=None), "UPDATE needs member 'old'"),
        (_line(_tidb={"commitTs": -1}), "'_tidb.commitTs' must be a non-negative integer"),
        (_line(isDdl=True), "a DDL object in a data file"),
        (b'{"id":0,"database":"db","table":"t","isDdl":false,"type":"INSERT","data":[{"s":"\xff"}]}', "invalid JSON"),
    ],
)
def test_file_decode_errors_name_source_line_and_field(data: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=r"^db/t/1/CDC1\.json: line ") as info:
        _decode_file(data)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (_line(mysqlType=KeyError), "needs member 'mysqlType'"),
        (_line(mysqlType={"id": "integer-ish"}), "mysqlType 'integer-ish' of column 'id' is not a MySQL type"),
        (_line(mysqlType={"id": 5}), "mysqlType of column 'id' must be a string"),
        (_line(mysqlType={"id": "enum('a)"}), "enum/set elements of column 'id' are not terminated"),
        (_line(pkNames=[1]), "must hold strings"),
        (_line(isDdl=True, type="FROB"), "not a canal-json DDL type"),
        (_line(type="TIDB_WATERMARK", _tidb=KeyError), "TIDB_WATERMARK message without member '_tidb'"),
        (_line(_tidb={"commitTs": 1, "x": 2}), "unknown member(s) 'x' in '_tidb'"),
    ],
)
def test_message_decode_errors(value: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=r"^<canal-json message>: ") as info:
        list(CanalJsonMessageDecoder().decode(Message(None, value)))
    assert message in str(info.value)


def test_decoder_accepts_members_in_any_order_and_case_insensitive_columns() -> None:
    obj = orjson.loads(_line())
    reordered = {k: obj[k] for k in reversed(list(obj))}
    reordered["data"] = [{"ID": "1", "S": "z"}]
    [row] = _decode_file(orjson.dumps(reordered))
    assert row.after is not None and (row.after[0], row.after[5]) == (1, "z")


# ---- fuzz ---------------------------------------------------------------------------------------------

_JUNK: list[Any] = [
    None,
    True,
    0,
    -1,
    2**64 - 1,
    -(2**63),
    1.5,
    "",
    "x",
    "INSERT",
    "UPDATE",
    [],
    [{}],
    [None],
    [[1]],
    {},
    {"a": 1},
    [{"id": 5}],
    [{"id": None, "u": "-1", "f": "nan", "d": "Infinity", "b": "ā"}],
    "TIDB_WATERMARK",
]


def _mutate_structure(rnd: random.Random, line: bytes) -> bytes:
    obj = orjson.loads(line)
    for _ in range(rnd.randint(1, 3)):
        action = rnd.randrange(5)
        key = rnd.choice([*obj, "_tidb", "old", "zzz"]) if obj else "id"
        if action == 0 and key in obj:
            del obj[key]
        elif action == 1:
            obj[key] = rnd.choice(_JUNK)
        elif action == 2 and isinstance(obj.get("data"), list) and obj["data"] and isinstance(obj["data"][0], dict):
            image = obj["data"][0]
            column = rnd.choice([*image, "nope"])
            image[column] = rnd.choice([*_JUNK, "1", "-0", "18446744073709551616", "ÿ", "\u2028"])
        elif action == 3 and isinstance(obj.get("mysqlType"), dict) and obj["mysqlType"]:
            column = rnd.choice(list(obj["mysqlType"]))
            obj["mysqlType"][column] = rnd.choice(["int", "bit(", "enum('a','b')", "decimal(3,1)", "blob", "x", "", 3])
        else:
            obj["type"] = rnd.choice(["INSERT", "UPDATE", "DELETE", "CREATE", "TIDB_WATERMARK", "QUERY", 1])
            obj["isDdl"] = rnd.choice([True, False, obj.get("isDdl")])
    return orjson.dumps(obj)


def _mutate_bytes(rnd: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rnd.randint(1, 4)):
        kind = rnd.randrange(4)
        if not buf:
            break
        at = rnd.randrange(len(buf))
        if kind == 0:
            buf[at] = rnd.randrange(256)
        elif kind == 1:
            del buf[at:]
        elif kind == 2:
            buf[at:at] = rnd.choice([b"\r\n", b"\xff", b'"', b"{", b"}", b",", b"\\", b"null", b"\x00"])
        else:
            del buf[at : at + rnd.randint(1, 8)]
    return bytes(buf)


def test_fuzz_only_decode_errors() -> None:
    rnd = random.Random(20261122)
    valid = _encoded()
    lines = valid.split(b"\r\n")[:-1]
    file_decoder = CanalJsonFileDecoder()
    message_decoder = CanalJsonMessageDecoder()
    outcomes = {"ok": 0, "error": 0}
    for i in range(2500):  # fixed budget
        if i % 5 == 0:
            data = rnd.randbytes(rnd.randrange(40))
        elif i % 5 in (1, 2):
            data = _mutate_structure(rnd, rnd.choice(lines))
        else:
            data = _mutate_bytes(rnd, valid if i % 2 else rnd.choice(lines))
        for decode in (
            lambda d: list(file_decoder.decode_file(d, TABLE, source="fuzz")),
            lambda d: list(message_decoder.decode(Message(None, d))),
        ):
            try:
                decode(data)
                outcomes["ok"] += 1
            except DecodeError as e:
                assert str(e).startswith(("fuzz", "<canal-json message>")), str(e)
                outcomes["error"] += 1
    assert outcomes["ok"] > 100 and outcomes["error"] > 1000, outcomes  # the fuzzer reaches both outcomes


def test_codecs_pickle_after_use() -> None:
    encoder = CanalJsonTxnEncoder(EXT)
    data = encoder.encode_txn(ROWS)
    copy = pickle.loads(pickle.dumps(encoder))
    assert copy.config == EXT and copy.encode_txn(ROWS)[:60] == data[:60]
    message_encoder = CanalJsonMessageEncoder(EXT)
    message_encoder.encode_row(ROWS[0])
    assert pickle.loads(pickle.dumps(message_encoder)).encode_row(ROWS[0]).value[:60] == data[:60]
    file_decoder = CanalJsonFileDecoder()
    rows = list(file_decoder.decode_file(data, TABLE))
    assert list(pickle.loads(pickle.dumps(file_decoder)).decode_file(data, TABLE)) == rows
    message_decoder = CanalJsonMessageDecoder()
    list(message_decoder.decode(Message(None, data.split(b"\r\n")[0])))
    assert len(list(pickle.loads(pickle.dumps(message_decoder)).decode(Message(None, data.split(b"\r\n")[0])))) == 1
