"""The two consumer scenarios of the simple protocol (seed doc: from the beginning; joining in the middle),
the held-DML rules, large messages and configuration."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.codec.base import Message, message_decoder, message_encoder
from sparkcdc.codec.simple.config import SimpleConfig
from sparkcdc.codec.simple.decoder import SimpleDecoder
from sparkcdc.codec.simple.encoder import SimpleEncoder
from sparkcdc.codec.simple.message import Checksum
from sparkcdc.errors import ConfigError, DecodeError, EncodeError
from sparkcdc.model import BootstrapEvent, DDLAction, DDLEvent, Event, ResolvedEvent, RowChange, RowOp, TableInfo

from .simple_support import Clock, codec, user_table

V1 = 447984074911121426
V2 = 447987408682614791
FMTS = ["json", "avro"]


def _insert(table: TableInfo, commit_ts: int, ident: int) -> RowChange:
    return RowChange(commit_ts, table, RowOp.INSERT, None, (ident, f"user{ident}", 20 + ident, 90.5), 148)


def _alter(pre: TableInfo, post: TableInfo) -> DDLEvent:
    return DDLEvent(
        V2, DDLAction.ADD_COLUMN, "ALTER TABLE `user` ADD COLUMN `createTime` TIMESTAMP", "simple", "user", post, pre
    )


def _feed(dec: SimpleDecoder, messages: list[Message]) -> list[Event]:
    out: list[Event] = []
    for m in messages:
        out.extend(dec.decode(m))
    return out


def _summary(events: list[Event]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for e in events:
        if isinstance(e, RowChange):
            assert e.after is not None
            out.append(("row", (e.commit_ts, e.table.version, e.after[0])))
        elif isinstance(e, DDLEvent):
            out.append(("ddl", e.commit_ts))
        elif isinstance(e, BootstrapEvent):
            out.append(("bootstrap", e.table_info.version))
        else:
            assert isinstance(e, ResolvedEvent)
            out.append(("watermark", e.ts))
    return out


@pytest.mark.parametrize("fmt", FMTS)
def test_consumer_from_the_beginning(fmt: str) -> None:
    """Bootstrap first, then rows, an ALTER, rows of the new version and a watermark: all in order."""
    t1, t2 = user_table(V1), user_table(V2, with_create_time=True)
    enc, dec = codec(fmt)
    row2 = RowChange(V2 + 5, t2, RowOp.INSERT, None, (3, "c", 1, 1.5, "2024-01-01 00:00:00"), 148)
    messages = [
        enc.encode_bootstrap(t1),
        enc.encode_row(_insert(t1, V1 + 10, 1)),
        enc.encode_row(_insert(t1, V1 + 20, 2)),
        enc.encode_ddl(_alter(t1, t2)),
        enc.encode_row(row2),
        enc.encode_watermark(V2 + 9),
    ]
    events = _feed(dec, messages)
    assert _summary(events) == [
        ("bootstrap", V1),
        ("row", (V1 + 10, V1, 1)),
        ("row", (V1 + 20, V1, 2)),
        ("ddl", V2),
        ("row", (V2 + 5, V2, 3)),
        ("watermark", V2 + 9),
    ]
    assert dec.pending == 0
    ddl = events[3]
    assert isinstance(ddl, DDLEvent)
    assert (ddl.schema, ddl.table, ddl.query) == ("simple", "user", _alter(t1, t2).query)
    assert ddl.pre_table_info is not None and ddl.pre_table_info.version == V1
    last = events[4]
    assert isinstance(last, RowChange) and last.after == (3, "c", 1, 1.5, "2024-01-01 00:00:00")


@pytest.mark.parametrize("fmt", FMTS)
def test_join_in_the_middle_released_by_bootstrap(fmt: str) -> None:
    t1 = user_table(V1)
    enc, dec = codec(fmt)
    assert _feed(dec, [enc.encode_row(_insert(t1, V1 + 10, 1)), enc.encode_row(_insert(t1, V1 + 20, 2))]) == []
    assert dec.pending == 2
    assert dec.waiting_for == [f"simple.user version {V1}"]
    # The watermark covers the held rows, so it waits for them (only the latest one is kept).
    assert _feed(dec, [enc.encode_watermark(V1 + 25), enc.encode_watermark(V1 + 30)]) == []
    events = _feed(dec, [enc.encode_bootstrap(t1), enc.encode_row(_insert(t1, V1 + 40, 3))])
    assert _summary(events) == [
        ("bootstrap", V1),
        ("row", (V1 + 10, V1, 1)),
        ("row", (V1 + 20, V1, 2)),
        ("watermark", V1 + 30),
        ("row", (V1 + 40, V1, 3)),
    ]
    assert dec.pending == 0 and dec.waiting_for == []


@pytest.mark.parametrize("fmt", FMTS)
def test_join_in_the_middle_released_by_ddl_pre_schema(fmt: str) -> None:
    """Rows of the old version are released by the next DDL's preTableSchema, before that DDL."""
    t1, t2 = user_table(V1), user_table(V2, with_create_time=True)
    enc, dec = codec(fmt)
    held = [enc.encode_row(_insert(t1, V1 + 10, 1)), enc.encode_row(_insert(t1, V1 + 20, 2))]
    assert _feed(dec, held) == []
    events = _feed(dec, [enc.encode_ddl(_alter(t1, t2))])
    assert _summary(events) == [("row", (V1 + 10, V1, 1)), ("row", (V1 + 20, V1, 2)), ("ddl", V2)]


@pytest.mark.parametrize("fmt", FMTS)
def test_rename_releases_rows_held_under_the_old_name(fmt: str) -> None:
    old, new = user_table(V1), user_table(V1, name="new_user")
    enc, dec = codec(fmt)
    assert _feed(dec, [enc.encode_row(_insert(old, V1 + 10, 1))]) == []
    rename = DDLEvent(V2, DDLAction.RENAME_TABLE, "RENAME TABLE `user` TO `new_user`", "simple", "new_user", new, old)
    events = _feed(dec, [enc.encode_ddl(rename), enc.encode_row(_insert(new, V2 + 1, 2))])
    assert _summary(events) == [("row", (V1 + 10, V1, 1)), ("ddl", V2), ("row", (V2 + 1, V1, 2))]
    assert isinstance(events[2], RowChange) and events[2].table.table == "new_user"


@pytest.mark.parametrize("fmt", FMTS)
def test_held_rows_beyond_the_bound_fail_naming_table_and_version(fmt: str) -> None:
    t1 = user_table(V1)
    enc, dec = codec(fmt, **{"max-pending-dml": "3"})
    _feed(dec, [enc.encode_row(_insert(t1, V1 + i, i)) for i in range(1, 4)])
    assert dec.pending == 3
    with pytest.raises(DecodeError, match=rf"max-pending-dml=3.*simple\.user version {V1}"):
        _feed(dec, [enc.encode_row(_insert(t1, V1 + 4, 4))])


@pytest.mark.parametrize("fmt", FMTS)
def test_newer_version_proves_held_schema_never_arrives(fmt: str) -> None:
    t1, t2 = user_table(V1), user_table(V2, with_create_time=True)
    enc, dec = codec(fmt)
    _feed(dec, [enc.encode_row(_insert(t1, V1 + 1, 1))])
    with pytest.raises(DecodeError, match=rf"simple\.user version {V1} never arrived and version {V2}"):
        _feed(dec, [enc.encode_bootstrap(t2)])
    # And a row of an old version arriving after a newer one is known fails at once.
    enc2, dec2 = codec(fmt)
    _feed(dec2, [enc2.encode_bootstrap(t2)])
    with pytest.raises(DecodeError, match=rf"simple\.user .* schema version {V1}, older than the known version {V2}"):
        _feed(dec2, [enc2.encode_row(_insert(t1, V1 + 1, 1))])


@pytest.mark.parametrize("fmt", FMTS)
def test_late_watermark_proves_bootstrap_never_came(fmt: str) -> None:
    t1 = user_table(V1)
    clock = Clock(1_000_000)
    enc, dec = codec(fmt, clock, **{"send-bootstrap-interval-in-sec": "10"})
    _feed(dec, [enc.encode_row(_insert(t1, V1 + 1, 1))])
    clock.now += 10_000 + 5_000 + 30_000  # exactly one bootstrap period: still allowed (and held back)
    assert _feed(dec, [enc.encode_watermark(V1 + 2)]) == []
    clock.now += 1
    with pytest.raises(DecodeError, match=rf"schema of simple\.user version {V1} never arrived: watermark"):
        _feed(dec, [enc.encode_watermark(V1 + 3)])


@pytest.mark.parametrize("fmt", FMTS)
def test_without_bootstraps_a_watermark_proves_nothing(fmt: str) -> None:
    t1 = user_table(V1)
    clock = Clock(1_000_000)
    enc, dec = codec(fmt, clock, **{"send-bootstrap-interval-in-sec": "0"})
    _feed(dec, [enc.encode_row(_insert(t1, V1 + 1, 1))])
    clock.now += 10**9
    assert _feed(dec, [enc.encode_watermark(V1 + 2)]) == []
    assert dec.pending == 1
    events = _feed(dec, [enc.encode_ddl(_alter(t1, user_table(V2, with_create_time=True)))])
    assert _summary(events) == [("row", (V1 + 1, V1, 1)), ("ddl", V2), ("watermark", V1 + 2)]


@pytest.mark.parametrize("fmt", FMTS)
def test_database_ddl_and_query_types(fmt: str) -> None:
    enc, dec = codec(fmt)
    (ddl,) = _feed(dec, [enc.encode_ddl(DDLEvent(9, DDLAction.DROP_SCHEMA, "DROP DATABASE `d`", "d"))])
    assert isinstance(ddl, DDLEvent)
    assert (ddl.action, ddl.query, ddl.table_info, ddl.commit_ts) == (
        DDLAction.DROP_SCHEMA,
        "DROP DATABASE `d`",
        None,
        9,
    )


def test_registry_calls_work() -> None:
    enc = message_encoder("simple", {"encoding-format": "json"})
    dec = message_decoder("simple", {"encoding-format": "json"})
    t1 = user_table(V1)
    assert enc.encode_row(_insert(t1, V1 + 1, 1)).key is None
    events = list(dec.decode(enc.encode_bootstrap(t1))) + list(dec.decode(enc.encode_row(_insert(t1, V1 + 1, 1))))
    assert isinstance(events[-1], RowChange) and events[-1].after == (1, "user1", 21, 90.5)
    assert isinstance(message_encoder("simple", {"encoding-format": "avro"}), SimpleEncoder)


# --- large messages ------------------------------------------------------------------------------------


def _big_row() -> RowChange:
    table = user_table(V1)
    return RowChange(V1 + 1, table, RowOp.UPDATE, (7, "a" * 500, 1, 1.0), (7, "b" * 500, 2, 2.0), 148)


@pytest.mark.parametrize("fmt", FMTS)
def test_too_large_without_handling_is_an_error(fmt: str) -> None:
    enc, _ = codec(fmt, **{"max-message-bytes": "300"})
    with pytest.raises(EncodeError, match="above max-message-bytes 300"):
        enc.encode_row(_big_row())


@pytest.mark.parametrize("fmt", FMTS)
def test_handle_key_only_fallback(fmt: str) -> None:
    opts = {"max-message-bytes": "300", "large-message-handle-option": "handle-key-only"}
    enc, _ = codec(fmt, **opts)
    msg = enc.encode_row(_big_row())
    assert len(msg.value) < 300
    dec = SimpleDecoder(SimpleConfig.from_options({"encoding-format": fmt}), allow_handle_key_only=True)
    list(dec.decode(enc.encode_bootstrap(user_table(V1))))
    (row,) = list(dec.decode(msg))
    assert isinstance(row, RowChange)
    assert (row.before, row.after) == ((7, None, None, None), (7, None, None, None))
    with pytest.raises(DecodeError, match="handle-key-only"):
        strict = SimpleDecoder(SimpleConfig.from_options({"encoding-format": fmt}))
        list(strict.decode(enc.encode_bootstrap(user_table(V1))))
        list(strict.decode(msg))


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("raw", [False, True])
def test_claim_check_round_trip(fmt: str, raw: bool) -> None:
    opts = {
        "encoding-format": fmt,
        "max-message-bytes": "500",
        "large-message-handle-option": "claim-check",
        "claim-check-storage-uri": "s3://bucket/claim-check/",
        "claim-check-raw-value": str(raw).lower(),
    }
    cfg = SimpleConfig.from_options(opts)
    enc = SimpleEncoder(cfg, clock=Clock(), new_uuid=lambda: "5d3b4c1e-0000-4000-8000-000000000000")
    with pytest.raises(EncodeError, match="encode_row_checked"):
        enc.encode_row(_big_row())
    encoded = enc.encode_row_checked(_big_row())
    assert encoded.claim_check is not None
    assert encoded.claim_check.name == "5d3b4c1e-0000-4000-8000-000000000000.json"
    if fmt == "json":
        assert b'"claimCheckLocation":"s3://bucket/claim-check/5d3b4c1e-0000-4000-8000-000000000000.json"' in (
            encoded.message.value
        )
        assert encoded.claim_check.data.startswith(b'{"key":null,"value":"') != raw
    store = {encoded.claim_check.name: encoded.claim_check.data}
    dec = SimpleDecoder(cfg, claim_check_reader=store.__getitem__)
    list(dec.decode(enc.encode_bootstrap(user_table(V1))))
    (row,) = list(dec.decode(encoded.message))
    assert isinstance(row, RowChange)
    assert row.after == (7, "b" * 500, 2, 2.0)
    assert row.before == (7, "a" * 500, 1, 1.0)
    missing = SimpleDecoder(cfg, claim_check_reader={}.__getitem__)
    list(missing.decode(enc.encode_bootstrap(user_table(V1))))
    with pytest.raises(DecodeError, match=r"cannot read claim-check file 5d3b4c1e-0000-4000-8000-000000000000\.json"):
        list(missing.decode(encoded.message))


def test_corrupted_checksum_is_rejected() -> None:
    table = user_table(V1)
    enc, dec = codec("json", **{"enable-row-checksum": "true"})
    value = enc.encode_dml(_insert(table, V1 + 1, 1), checksum=Checksum(1, True, 1, 2))
    list(dec.decode(enc.encode_bootstrap(table)))
    with pytest.raises(DecodeError, match="corrupted"):
        list(dec.decode(Message(None, value)))


# --- configuration -------------------------------------------------------------------------------------


def test_config_rejects_unknown_keys_naming_them() -> None:
    with pytest.raises(ConfigError, match=r"unknown option\(s\) 'bogus', 'encoding_format'"):
        SimpleConfig.from_options({"encoding_format": "json", "bogus": 1})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"encoding-format": "protobuf"}, "unsupported encoding-format 'protobuf'"),
        ({"max-pending-dml": "0"}, "max-pending-dml must be between 1"),
        ({"max-pending-dml": "x"}, "max-pending-dml must be an integer"),
        ({"enable-tidb-extension": "yes"}, "enable-tidb-extension must be true or false"),
        ({"large-message-handle-option": "claim-check"}, "needs claim-check-storage-uri"),
        ({"large-message-handle-compression": "lz4"}, "not supported"),
        ({"time-zone": "Mars/Olympus"}, "unknown time-zone"),
        ({"protocol": "canal-json"}, "must be 'simple'"),
    ],
)
def test_config_rejects_bad_values(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SimpleConfig.from_options(options)


def test_config_accepts_typed_and_string_values_and_masks_secrets() -> None:
    cfg = SimpleConfig.from_options(
        {
            "encoding-format": "AVRO",
            "enable-tidb-extension": True,
            "send-bootstrap-in-msg-count": 0,
            "max-pending-dml": "5",
            "large-message-handle-option": "claim-check",
            "claim-check-storage-uri": "s3://user:hunter2@bucket/p?secret-access-key=s3cr3t&region=x",
        }
    )
    assert (cfg.encoding_format, cfg.max_pending_dml, cfg.bootstrap_enabled) == ("avro", 5, False)
    assert "hunter2" not in repr(cfg) and "s3cr3t" not in repr(cfg) and "region=x" in repr(cfg)


@pytest.mark.parametrize("fmt", FMTS)
def test_joining_mid_stream_drops_what_can_never_be_decoded(fmt: str) -> None:
    """drop_undecodable (a consumer joining mid-stream): the same inputs that raise above drop the rows instead,
    count them, and everything after the table's BOOTSTRAP decodes."""
    t1, t2 = user_table(V1), user_table(V2, with_create_time=True)
    enc, strict = codec(fmt)
    dec = SimpleDecoder(strict.config, drop_undecodable=True)
    assert _feed(dec, [enc.encode_row(_insert(t1, V1 + 1, 1)), enc.encode_watermark(V1 + 1)]) == []  # held
    out = _feed(dec, [enc.encode_bootstrap(t2)])  # version V1 never came: dropped, the watermark released
    assert [type(e) for e in out] == [BootstrapEvent, ResolvedEvent] and dec.dropped == 1 and dec.pending == 0
    assert _feed(dec, [enc.encode_row(_insert(t1, V1 + 2, 2))]) == [] and dec.dropped == 2  # older than known
    row = RowChange(V2 + 1, t2, RowOp.INSERT, None, (3, "user3", 23, 90.5, "2024-01-01 00:00:00"), 148)
    [decoded] = _feed(dec, [enc.encode_row(row)])
    assert isinstance(decoded, RowChange) and decoded.after is not None and decoded.after[0] == 3
    clock = Clock(1_000_000)
    enc3, strict3 = codec(fmt, clock, **{"send-bootstrap-interval-in-sec": "10"})
    late = SimpleDecoder(strict3.config, drop_undecodable=True)
    _feed(late, [enc3.encode_row(_insert(t1, V1 + 1, 1))])
    clock.now += 10_000 + 5_000 + 30_000 + 1  # longer than a bootstrap period: the schema will not come
    assert _feed(late, [enc3.encode_watermark(V1 + 3)]) == [ResolvedEvent(V1 + 3)] and late.dropped == 1
