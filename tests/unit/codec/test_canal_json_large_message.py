"""canal-json large-message handling on the Kafka path: TiCDC's handle-key-only and claim-check messages
byte for byte, the claim-check envelope, ErrMessageTooLarge, the decoder's markers and config errors."""

from __future__ import annotations

import base64
import pickle
from typing import Any

import orjson
import pytest

from sparkcdc.codec import large_message
from sparkcdc.codec.base import Message
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.decoder import CanalJsonMessageDecoder
from sparkcdc.codec.canal_json.encoder import CanalJsonMessageEncoder
from sparkcdc.codec.simple import encoder as simple_encoder
from sparkcdc.errors import ConfigError, DecodeError, EncodeError
from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo

TABLE = TableInfo(
    "db",
    "t",
    1,
    (
        ColumnInfo("id", "int", primary_key=True, handle_key=True, nullable=False),
        ColumnInfo("name", "varchar"),
        ColumnInfo("u", "bigint", unsigned=True),
    ),
)
CTS = 450253245302439944  # es = CTS >> 18 = 1717579823694
NOW = 1717579824000
UUID = "5d3b4c1e-0000-4000-8000-000000000000"
BIG = "x" * 600
HEAD = b'{"id":0,"database":"db","table":"t","pkNames":["id"],"isDdl":false,"type":"'
KEY_TYPES = b'","es":1717579823694,"ts":1717579824000,"sql":"","sqlType":{"id":4},"mysqlType":{"id":"int"},"old":'
ROWS = {
    "INSERT": RowChange(CTS, TABLE, RowOp.INSERT, None, (7, BIG, 1)),
    "UPDATE": RowChange(CTS, TABLE, RowOp.UPDATE, (7, "a", 1), (7, BIG, 2)),
    "DELETE": RowChange(CTS, TABLE, RowOp.DELETE, (7, BIG, 1), None),
}
KEY_OLD = {"INSERT": b"null", "UPDATE": b'[{"id":"7"}]', "DELETE": b"null"}


def _uuid() -> str:
    return UUID


def _now() -> int:
    return NOW


def _encoder(**options: Any) -> CanalJsonMessageEncoder:
    config = CanalJsonConfig.from_options({"enable-tidb-extension": "true", "max-message-bytes": "500", **options})
    return CanalJsonMessageEncoder(config, now_ms=_now, new_uuid=_uuid)


def _full(row: RowChange) -> bytes:
    """The message without a size limit (what a claim-check file must hold)."""
    return CanalJsonMessageEncoder(CanalJsonConfig(enable_tidb_extension=True), now_ms=_now).encode_row(row).value


def _claim_check_options(raw: bool = False) -> dict[str, str]:
    return {
        "large-message-handle-option": "claim-check",
        "claim-check-storage-uri": "s3://bucket/claim-check/",
        "claim-check-raw-value": str(raw).lower(),
    }


# ---- encoding -----------------------------------------------------------------------------------------


def test_a_message_that_fits_is_sent_whole() -> None:
    row = RowChange(CTS, TABLE, RowOp.INSERT, None, (7, "small", 1))
    for encoder in (
        _encoder(),
        _encoder(**{"large-message-handle-option": "handle-key-only"}),
        _encoder(**_claim_check_options()),
    ):
        encoded = encoder.encode_row_checked(row)
        assert encoded == large_message.EncodedRow(Message(None, _full(row)))
        assert encoder.encode_row(row) == encoded.message


@pytest.mark.parametrize("method", ["encode_row", "encode_row_checked"])
def test_none_refuses_an_oversized_message(method: str) -> None:
    size = len(_full(ROWS["INSERT"])) + large_message.MAX_RECORD_OVERHEAD
    with pytest.raises(EncodeError) as err:
        getattr(_encoder(), method)(ROWS["INSERT"])
    assert err.value.code == "CDC:ErrMessageTooLarge"
    assert f"db.t at commit-ts {CTS} is {size} bytes, above max-message-bytes 500" in err.value.message
    assert "large-message-handle-option" in err.value.message
    assert pickle.loads(pickle.dumps(err.value)).code == "CDC:ErrMessageTooLarge"


@pytest.mark.parametrize("kind", sorted(ROWS))
def test_handle_key_only_message_bytes(kind: str) -> None:
    encoded = _encoder(**{"large-message-handle-option": "handle-key-only"}).encode_row_checked(ROWS[kind])
    assert encoded.claim_check is None
    assert encoded.message == Message(
        None,
        HEAD
        + kind.encode()
        + KEY_TYPES
        + KEY_OLD[kind]
        + b',"data":[{"id":"7"}],"_tidb":{"commitTs":450253245302439944,"onlyHandleKey":true}}',
    )


def test_handle_key_only_update_with_only_updated_columns_keeps_changed_keys_in_old() -> None:
    encoder = _encoder(**{"large-message-handle-option": "handle-key-only", "only-output-updated-columns": "true"})
    value = encoder.encode_row_checked(ROWS["UPDATE"]).message.value
    assert b',"old":[{}],"data":[{"id":"7"}],' in value


@pytest.mark.parametrize("kind", sorted(ROWS))
def test_claim_check_message_bytes_and_envelope(kind: str) -> None:
    encoder = _encoder(**_claim_check_options())
    with pytest.raises(EncodeError, match="encode_row_checked"):
        encoder.encode_row(ROWS[kind])
    encoded = encoder.encode_row_checked(ROWS[kind])
    # TiCDC writes only claimCheckLocation here: onlyHandleKey is set for handle-key-only alone.
    assert encoded.message == Message(
        None,
        HEAD
        + kind.encode()
        + KEY_TYPES
        + KEY_OLD[kind]
        + b',"data":[{"id":"7"}],"_tidb":{"commitTs":450253245302439944,'
        + b'"claimCheckLocation":"s3://bucket/claim-check/5d3b4c1e-0000-4000-8000-000000000000.json"}}',
    )
    claim = encoded.claim_check
    assert claim is not None and claim.name == f"{UUID}.json"
    envelope = orjson.loads(claim.data)
    assert list(envelope) == ["key", "value"] and envelope["key"] is None
    assert claim.data == b'{"key":null,"value":"' + base64.b64encode(_full(ROWS[kind])) + b'"}'
    assert large_message.claim_check_value(claim.data, claim.name) == _full(ROWS[kind])


def test_claim_check_raw_value_stores_the_message_itself() -> None:
    encoded = _encoder(**_claim_check_options(raw=True)).encode_row_checked(ROWS["INSERT"])
    assert encoded.claim_check == large_message.ClaimCheckFile(f"{UUID}.json", _full(ROWS["INSERT"]))


@pytest.mark.parametrize("options", [{"large-message-handle-option": "handle-key-only"}, _claim_check_options()])
def test_still_too_large_with_only_key_columns(options: dict[str, str]) -> None:
    table = TableInfo("db", "k", 2, (ColumnInfo("pk", "varchar", primary_key=True, handle_key=True, nullable=False),))
    row = RowChange(CTS, table, RowOp.INSERT, None, (BIG,))
    with pytest.raises(EncodeError, match=r"still \d+ bytes with only handle-key columns") as err:
        _encoder(**options).encode_row_checked(row)
    assert err.value.code == "CDC:ErrMessageTooLarge"


def test_encoder_pickles_with_its_clock_and_uuid_factory() -> None:
    encoder = pickle.loads(pickle.dumps(_encoder(**_claim_check_options())))
    encoded = encoder.encode_row_checked(ROWS["INSERT"])
    assert encoded.claim_check is not None and encoded.claim_check.name == f"{UUID}.json"


def test_simple_encoder_uses_the_shared_types() -> None:
    assert simple_encoder.EncodedRow is large_message.EncodedRow
    assert simple_encoder.ClaimCheckFile is large_message.ClaimCheckFile
    assert simple_encoder.claim_check_envelope is large_message.claim_check_envelope


# ---- decoding -----------------------------------------------------------------------------------------


def test_decoder_refuses_handle_key_only_unless_allowed() -> None:
    message = _encoder(**{"large-message-handle-option": "handle-key-only"}).encode_row_checked(ROWS["UPDATE"]).message
    with pytest.raises(DecodeError, match=r"handle-key-only DML of db\.t at commit-ts 450253245302439944"):
        list(CanalJsonMessageDecoder().decode(message))
    (row,) = CanalJsonMessageDecoder(allow_handle_key_only=True).decode(message)
    assert isinstance(row, RowChange)
    assert (row.commit_ts, row.op, row.before, row.after) == (CTS, RowOp.UPDATE, (7,), (7,))
    assert [c.name for c in row.table.columns] == ["id"]


@pytest.mark.parametrize("raw", [False, True])
def test_decoder_reads_the_full_row_from_the_claim_check_file(raw: bool) -> None:
    options = _claim_check_options(raw)
    encoded = _encoder(**options).encode_row_checked(ROWS["UPDATE"])
    assert encoded.claim_check is not None
    store = {encoded.claim_check.name: encoded.claim_check.data}
    config = CanalJsonConfig.from_options({"enable-tidb-extension": "true", **options})
    (row,) = CanalJsonMessageDecoder(config, claim_check_reader=store.__getitem__).decode(encoded.message)
    (expected,) = CanalJsonMessageDecoder(config).decode(Message(None, _full(ROWS["UPDATE"])))
    assert row == expected
    assert isinstance(row, RowChange) and row.after == (7, BIG, 2) and row.before == (7, "a", 1)
    with pytest.raises(DecodeError, match="configure a claim-check reader"):
        list(CanalJsonMessageDecoder(config).decode(encoded.message))
    empty: dict[str, bytes] = {}
    with pytest.raises(DecodeError, match=rf"cannot read claim-check file {UUID}\.json for db\.t"):
        list(CanalJsonMessageDecoder(config, claim_check_reader=empty.__getitem__).decode(encoded.message))


def test_decoder_rejects_bad_markers_and_claim_check_files() -> None:
    value = _full(ROWS["INSERT"])
    for marker, message in [
        (b'"onlyHandleKey":1', "must be a boolean"),
        (b'"claimCheckLocation":1', "must be a string"),
    ]:
        bad = value.replace(b"}}", b"," + marker + b"}}")
        with pytest.raises(DecodeError, match=message):
            list(CanalJsonMessageDecoder().decode(Message(None, bad)))
    encoded = _encoder(**_claim_check_options()).encode_row_checked(ROWS["INSERT"])
    for data, message in [
        (b"not json", "is not JSON"),
        (b'{"key":null,"value":"***"}', "value is not base64"),
        (large_message.claim_check_envelope(None, encoded.message.value), "does not hold a full DML message"),
    ]:
        decoder = CanalJsonMessageDecoder(claim_check_reader={f"{UUID}.json": data}.__getitem__)
        with pytest.raises(DecodeError, match=message):
            list(decoder.decode(encoded.message))


# ---- configuration ------------------------------------------------------------------------------------


def test_config_reads_large_message_options_and_masks_the_uri() -> None:
    config = CanalJsonConfig.from_options(
        {
            "enable-tidb-extension": True,
            "max_message_bytes": 1024,
            "large-message-handle-option": "Claim-Check",
            "large-message-handle-compression": "",
            "claim-check-storage-uri": "s3://user:hunter2@bucket/cc?secret-access-key=s3cr3t&region=x",
            "claim-check-raw-value": "true",
        }
    )
    assert (config.max_message_bytes, config.large_message_handle_option) == (1024, "claim-check")
    assert (config.large_message_handle_compression, config.claim_check_raw_value) == ("none", True)
    assert "hunter2" not in repr(config) and "s3cr3t" not in str(config) and "region=x" in repr(config)
    assert pickle.loads(pickle.dumps(config)) == config
    assert CanalJsonConfig().max_message_bytes == 10485760


@pytest.mark.parametrize(
    ("options", "message", "code"),
    [
        ({"large-message-handle-option": "handle-key-only"}, "needs enable-tidb-extension=true", "ReplicaConfig"),
        (
            {"large-message-handle-option": "claim-check", "enable-tidb-extension": "true"},
            "claim-check-storage-uri",
            "ReplicaConfig",
        ),
        ({"large-message-handle-option": "drop"}, "unsupported large-message-handle-option 'drop'", "ReplicaConfig"),
        ({"large-message-handle-compression": "lz4"}, "'lz4' is not supported", "ReplicaConfig"),
        ({"max-message-bytes": "0"}, "max-message-bytes must be positive", "InvalidConfig"),
        ({"max-message-bytes": "1MB"}, "max-message-bytes must be an integer", "InvalidConfig"),
        ({"claim-check-storage-uri": 5}, "claim-check-storage-uri must be a string", "InvalidConfig"),
        ({"claim-check-raw-value": "maybe"}, "claim-check-raw-value must be true or false", "InvalidConfig"),
    ],
)
def test_config_rejects_bad_large_message_options(options: dict[str, Any], message: str, code: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        CanalJsonConfig.from_options(options)
    assert err.value.code.endswith(code)


@pytest.mark.parametrize("key", [5, 2**64 - 1])
def test_handle_key_only_java_type_follows_the_key_value(key: int) -> None:
    table = TableInfo(
        "db",
        "u",
        3,
        (
            ColumnInfo("id", "bigint", unsigned=True, primary_key=True, handle_key=True, nullable=False),
            ColumnInfo("name", "varchar"),
        ),
    )
    row = RowChange(CTS, table, RowOp.INSERT, None, (key, BIG))
    small = orjson.loads(_encoder(**{"large-message-handle-option": "handle-key-only"}).encode_row(row).value)
    full = orjson.loads(_full(row))
    assert small["sqlType"] == {"id": full["sqlType"]["id"]} and small["mysqlType"] == {"id": "bigint unsigned"}
    assert small["data"] == [{"id": str(key)}]
