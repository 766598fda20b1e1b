"""The avro codec's encode -> decode round trip over every MySQL type, both handling modes, with and without the
TiDB extension; deletes, key-changing updates, schema versions after a DDL, and malformed input."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.codec.avro import message as wire
from sparkcdc.codec.avro.config import AvroConfig
from sparkcdc.codec.avro.decoder import AvroDecoder
from sparkcdc.codec.base import Message, message_decoder, message_encoder
from sparkcdc.errors import ConfigError, DecodeError, EncodeError
from sparkcdc.model import ColumnInfo, IndexInfo, ResolvedEvent, RowChange, RowOp, TableInfo
from sparkcdc.model.events import split_key_updates
from sparkcdc.model.table import with_handle_keys

from .avro_support import MemoryRegistry

COLUMNS = [
    ColumnInfo("id", "bigint", unsigned=True, nullable=False),
    ColumnInfo("ti", "tinyint"), ColumnInfo("si", "smallint", unsigned=True), ColumnInfo("mi", "mediumint"),
    ColumnInfo("i", "int"), ColumnInfo("iu", "int", unsigned=True), ColumnInfo("bi", "bigint"),
    ColumnInfo("bu", "bigint", unsigned=True), ColumnInfo("f", "float"), ColumnInfo("d", "double"),
    ColumnInfo("dec", "decimal", length=20, decimal=6), ColumnInfo("dec0", "decimal", length=65, decimal=0),
    ColumnInfo("b1", "bit", length=1), ColumnInfo("b64", "bit", length=64), ColumnInfo("c", "char", length=4),
    ColumnInfo("vc", "varchar", length=32, default="dflt"), ColumnInfo("tx", "longtext"),
    ColumnInfo("bn", "binary", length=4), ColumnInfo("vb", "varbinary", length=8), ColumnInfo("bl", "blob"),
    ColumnInfo("e", "enum", elements=("x", "y,z", "it's")), ColumnInfo("s", "set", elements=("a", "b", "c")),
    ColumnInfo("j", "json"), ColumnInfo("dt", "date"), ColumnInfo("dtm", "datetime", decimal=6),
    ColumnInfo("ts", "timestamp", decimal=3), ColumnInfo("tm", "time", decimal=2), ColumnInfo("y", "year"),
    ColumnInfo("nn", "int", nullable=False, default="7"),
]  # fmt: skip
ROW = (
    2**64 - 1, -128, 65535, -8388608, -(2**31), 2**32 - 1, -(2**63), 2**63 + 5, 3.140000104904175, -2.7182818284,
    Decimal("-12345678901234.567890"), Decimal("99999999999999999999999999999999999999999999999999999999999999999"),
    1, 2**64 - 1, "ab", "hello <&>", "中文 text", b"\x00\x01\x00\x00", b"\xff", b"blob\x00",
    2, 5, '{"k": [1, 2]}', "0000-00-00", "2020-02-20 02:20:20.123456", "1973-12-30 15:30:00.120", "-838:59:59.00",
    2155, 0,
)  # fmt: skip


def make_table(columns: list[ColumnInfo], version: int = 1) -> TableInfo:
    indexes = (IndexInfo("PRIMARY", ("id",), primary=True),)
    return TableInfo("db.x", "all types", 42, with_handle_keys(tuple(columns), indexes), indexes, version)


def codec(registry: MemoryRegistry, **options: Any) -> tuple[Any, Any]:
    return (message_encoder("avro", {**options, "registry": registry}),
            message_decoder("avro", {**options, "registry": registry}))  # fmt: skip


@pytest.mark.parametrize("decimal_mode", ["precise", "string"])
@pytest.mark.parametrize("unsigned_mode", ["long", "string"])
@pytest.mark.parametrize("extension", [False, True])
def test_every_type_round_trips(decimal_mode: str, unsigned_mode: str, extension: bool) -> None:
    registry = MemoryRegistry()
    options = {"avro-decimal-handling-mode": decimal_mode, "avro-bigint-unsigned-handling-mode": unsigned_mode,
               "enable-tidb-extension": str(extension).lower()}  # fmt: skip
    encoder, decoder = codec(registry, **options)
    table = make_table(COLUMNS)
    commit_ts = 450000000000000000
    for image in (ROW, (ROW[0],) + (None,) * (len(ROW) - 2) + (0,)):
        message = encoder.encode_row(RowChange(commit_ts, table, RowOp.INSERT, None, image), "db.x_all")
        (event,) = decoder.decode(message)
        assert isinstance(event, RowChange) and event.op is RowOp.INSERT
        assert event.after == image
        assert event.commit_ts == (commit_ts if extension else 0)
        assert (event.table.schema, event.table.table) == ("db_x", "all_types")  # sanitized, as TiCDC names them
        assert [c.name for c in event.table.columns if c.handle_key] == ["id"]
    assert set(registry.subjects) == {"db_x_all-key", "db_x_all-value"}


def test_update_delete_and_a_key_changing_update_as_ticdc_writes_them() -> None:
    registry = MemoryRegistry()
    encoder, decoder = codec(registry, **{"enable-tidb-extension": "true"})
    cols = [ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "varchar", length=8)]
    table = make_table(cols)
    update = RowChange(10 << 18, table, RowOp.UPDATE, (1, "a"), (1, "b"))
    (event,) = decoder.decode(encoder.encode_row(update, "t"))
    assert event.op is RowOp.UPDATE and event.after == (1, "b") and event.before == (1, None)
    delete = RowChange(11 << 18, table, RowOp.DELETE, (1, "b"), None)
    message = encoder.encode_row(delete, "t")
    assert message.key is not None and message.value == b""  # a tombstone: the key alone
    (event,) = decoder.decode(message)
    assert event.op is RowOp.DELETE and event.before == (1,) and event.commit_ts == 0
    moved = RowChange(12 << 18, table, RowOp.UPDATE, (1, "b"), (2, "b"))
    messages = [encoder.encode_row(r, "t") for r in split_key_updates([moved])]
    events = [e for m in messages for e in decoder.decode(m)]
    assert [(e.op, e.before, e.after) for e in events] == [(RowOp.DELETE, (1,), None), (RowOp.INSERT, None, (2, "b"))]


def test_testing_mode_delete_carries_its_commit_ts_and_watermarks_decode() -> None:
    registry = MemoryRegistry()
    encoder, decoder = codec(registry, **{"enable-tidb-extension": True, "avro-enable-watermark": True})
    table = make_table([ColumnInfo("id", "int", nullable=False)])
    message = encoder.encode_row(RowChange(77 << 18, table, RowOp.DELETE, (5,), None), "t")
    assert message.value == b"\x03" + (77 << 18).to_bytes(8, "big")
    (event,) = decoder.decode(message)
    assert event.op is RowOp.DELETE and event.commit_ts == 77 << 18 and event.before == (5,)
    assert list(decoder.decode(encoder.encode_watermark(99))) == [ResolvedEvent(99)]


def test_a_ddl_registers_a_new_version_and_an_unchanged_table_does_not() -> None:
    registry = MemoryRegistry()
    encoder, _ = codec(registry)
    v1 = make_table([ColumnInfo("id", "int", nullable=False), ColumnInfo("a", "int")], version=1)
    encoder.encode_row(RowChange(1, v1, RowOp.INSERT, None, (1, 1)), "t")
    same = make_table([ColumnInfo("id", "int", nullable=False), ColumnInfo("a", "int")], version=2)  # a comment
    encoder.encode_row(RowChange(2, same, RowOp.INSERT, None, (2, 2)), "t")
    assert registry.subjects["t-value"] == [2]
    v3 = make_table([ColumnInfo("id", "int", nullable=False), ColumnInfo("a", "double")], version=3)
    encoder.encode_row(RowChange(3, v3, RowOp.INSERT, None, (3, 1.5)), "t")
    assert registry.subjects["t-value"] == [2, 3]
    assert registry.subjects["t-key"] == [1]


def test_a_table_without_handle_key_has_keyless_messages() -> None:
    registry = MemoryRegistry()
    encoder, decoder = codec(registry)
    table = TableInfo("db", "nokey", 1, (ColumnInfo("a", "int"),))
    message = encoder.encode_row(RowChange(1, table, RowOp.INSERT, None, (4,)), "t")
    assert message.key is None
    (event,) = decoder.decode(message)
    assert event.after == (4,)


def test_registry_refusal_and_oversized_messages_are_errors() -> None:
    registry = MemoryRegistry()
    encoder, _ = codec(registry, **{"max-message-bytes": 64})
    table = make_table([ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "longtext")])
    with pytest.raises(EncodeError, match="above max-message-bytes 64") as e:
        encoder.encode_row(RowChange(1, table, RowOp.INSERT, None, (1, "x" * 100)), "t")
    assert e.value.code == "CDC:ErrMessageTooLarge"
    registry.refuse = True
    fresh, _ = codec(registry)
    with pytest.raises(ConfigError, match="incompatible"):
        fresh.encode_row(RowChange(1, table, RowOp.INSERT, None, (1, "x")), "t")
    geometry = replace(table, columns=(*table.columns, ColumnInfo("g", "geometry")))
    with pytest.raises(EncodeError, match="GEOMETRY"):
        fresh.encode_row(RowChange(1, geometry, RowOp.INSERT, None, (1, "x", b"")), "t")


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (Message(None, b""), "without key and value"),
        (Message(b"\x00\x00", b""), "at least 5"),
        (Message(b"\x05\x00\x00\x00\x01\x02", b""), "magic byte"),
        (Message(None, b"\x02\x00"), "a watermark has 9"),
        (Message(None, b"\x01{not json"), "DDL"),
        (Message(b"\x00\x00\x00\x00\x01", b"\x00\x00\x00\x00\x01\x02"), "does not match its schema"),
    ],
)
def test_malformed_messages_are_one_decode_error(message: Message, error: str) -> None:
    registry = MemoryRegistry()
    registry.register("t-key", '{"type":"record","name":"t","namespace":"default.db","fields":[{"name":"id",'
                               '"type":{"type":"long","connect.parameters":{"tidb_type":"BIGINT"}}}]}')  # fmt: skip
    decoder = AvroDecoder(AvroConfig(), registry)
    with pytest.raises(DecodeError, match=error):
        list(decoder.decode(message))


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"avro-decimal-handling-mode": "exact"}, 'avro-decimal-handling-mode value could only be "string" or'),
        ({"avro-bigint-unsigned-handling-mode": "int"}, "avro-bigint-unsigned-handling-mode value could only be"),
        ({"avro-enable-watermark": "yes"}, "avro-enable-watermark must be true or false"),
        ({"enable-tidb-extension": 1}, "enable-tidb-extension must be true or false"),
        ({"max-message-bytes": "0"}, "invalid max-message-bytes 0"),
        ({"avro-schema": "x"}, "unknown option 'avro-schema'"),
    ],
)
def test_bad_options_are_one_line(options: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError, match=error) as e:
        AvroConfig.from_options(options)
    assert e.value.code == "CDC:ErrCodecInvalidConfig" and "\n" not in e.value.message


def test_config_repr_masks_the_registry_password() -> None:
    cfg = AvroConfig.from_options({"schema-registry": "https://user:s3cret@reg:8081"})
    assert "s3cret" not in repr(cfg) and "xxxxx" in str(cfg)
    assert wire.subject("a.b", wire.KEY_SUFFIX) == "a_b-key"


def test_tables_sharing_a_hard_coded_topic_share_its_subjects() -> None:
    """TiCDC's subjects are the topic's (``<topic>-key``, ``<topic>-value``), whatever the table: two tables in one
    hard-coded topic register their schemas as versions of the same subjects, and each message carries its own
    table's schema id, so it decodes as a row of its table."""
    registry = MemoryRegistry()
    encoder, decoder = codec(registry)
    a = replace(make_table([ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "varchar", length=8)]), table="a")
    b = replace(a, table="b", table_id=43)
    for r in (RowChange(1, a, RowOp.INSERT, None, (1, "x")), RowChange(2, b, RowOp.INSERT, None, (2, "y")),
              RowChange(3, a, RowOp.INSERT, None, (3, "z"))):  # fmt: skip
        (event,) = decoder.decode(encoder.encode_row(r, "all.tables"))
        assert (event.table.table, event.after) == (r.table.table, r.after)
    assert set(registry.subjects) == {"all_tables-key", "all_tables-value"}
    assert [len(v) for v in registry.subjects.values()] == [2, 2]  # a's version, then b's; a's again is no new one
