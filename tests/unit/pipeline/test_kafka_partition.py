"""The per-partition core of format("ticdc-kafka"): rows with their offsets, schemas found before the range,
TiCDC's re-send rule, and errors naming topic, partition and offset."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.codec.base import Message, message_encoder
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.decoder import CanalJsonMessageDecoder
from sparkcdc.codec.simple.config import SimpleConfig
from sparkcdc.codec.simple.decoder import SimpleDecoder
from sparkcdc.errors import CorruptDataError
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from sparkcdc.pipeline.kafka_partition import Marker, PartitionRows, SchemaKey, marker_reader

IDX = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)


def table(version: int, *extra: ColumnInfo, name: str = "t") -> TableInfo:
    cols = (ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "varchar", length=20), *extra)
    return TableInfo("db", name, 7, with_handle_keys(cols, IDX), IDX, version)


T1 = table(100)
T2 = table(200, ColumnInfo("d", "decimal", length=8, decimal=2))


def insert(ts: int, t: TableInfo, i: int) -> RowChange:
    extra = (Decimal("1.50"),) if len(t.columns) == 3 else ()
    return RowChange(ts, t, RowOp.INSERT, None, (i, f"v{i}", *extra))


class FakePrefix:
    """Messages before the range, as the shell's backward scan would find them."""

    def __init__(self, watermark: int = 0, schemas: dict[SchemaKey, bytes] | None = None) -> None:
        self.wm = watermark
        self.schemas = schemas or {}
        self.asked: list[SchemaKey] = []

    def watermark(self) -> int:
        return self.wm

    def schema(self, key: SchemaKey) -> bytes | None:
        self.asked.append(key)
        return self.schemas.get(key)


def simple(fmt: str = "json", **kw: Any) -> tuple[Any, SimpleDecoder]:
    options = {"encoding-format": fmt}
    return message_encoder("simple", options), SimpleDecoder(SimpleConfig.from_options(options), **kw)


def feed_all(rows: PartitionRows, messages: list[Message], first: int = 0) -> list[tuple[int, int, int]]:
    out = []
    for offset, m in enumerate(messages, first):
        out += [(at, r.commit_ts, r.after[0] if r.after else r.before[0]) for at, r in rows.feed(offset, m.value)]  # type: ignore[index]
    rows.finish()
    return out


def test_canal_json_rows_keep_their_offsets_and_resends_below_a_watermark_are_dropped() -> None:
    options = {"enable-tidb-extension": True}
    enc = message_encoder("canal-json", options)
    dec = CanalJsonMessageDecoder(CanalJsonConfig.from_options(options))
    ddl = DDLEvent(100, DDLAction.CREATE_TABLE, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "db", "t", T1)
    again = insert(120, T1, 2)
    msgs = [enc.encode_ddl(ddl), enc.encode_row(insert(110, T1, 1)), enc.encode_row(again),
            enc.encode_watermark(125), enc.encode_row(again), enc.encode_row(insert(130, T1, 3))]  # fmt: skip
    rows = PartitionRows(dec, topic="tp", partition=2)
    assert feed_all(rows, msgs, first=40) == [(41, 110, 1), (42, 120, 2), (45, 130, 3)]
    assert rows.fallback == 1 and rows.watermark == 125
    # a range starting after the watermark knows it from the prefix
    later = PartitionRows(CanalJsonMessageDecoder(CanalJsonConfig.from_options(options)), topic="tp", partition=2,
                          prefix=FakePrefix(watermark=125))  # fmt: skip
    assert feed_all(later, msgs[4:], first=44) == [(45, 130, 3)]


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_a_simple_range_after_the_bootstrap_gets_the_schema_from_before_the_range(fmt: str) -> None:
    enc, _ = simple(fmt)
    boot = enc.encode_bootstrap(T1).value
    msgs = [enc.encode_row(insert(110 + i, T1, i)) for i in range(3)]
    prefix = FakePrefix(watermark=105, schemas={("db", "t", 100): boot})
    rows = PartitionRows(simple(fmt)[1], topic="tp", partition=0, prefix=prefix)
    assert feed_all(rows, msgs, first=10) == [(10, 110, 0), (11, 111, 1), (12, 112, 2)]
    assert prefix.asked == [("db", "t", 100)]  # searched once, for the first row only


def test_a_schema_found_before_the_range_is_the_exact_version_never_another() -> None:
    enc, _ = simple()
    prefix = FakePrefix(schemas={("db", "t", 100): enc.encode_bootstrap(T1).value})
    rows = PartitionRows(simple()[1], topic="tp", partition=1, prefix=prefix)
    with pytest.raises(CorruptDataError) as e:
        feed_all(rows, [enc.encode_row(insert(210, T2, 5))], first=77)
    assert "topic tp partition 1" in str(e.value) and "offset 77" in str(e.value)
    assert "db.t schema version 200" in str(e.value) and "skip-undecodable" in str(e.value)
    assert prefix.asked == [("db", "t", 200)]


def test_rows_held_until_a_later_bootstrap_keep_their_own_offsets() -> None:
    enc, dec = simple()
    other = table(150, name="u")
    msgs = [enc.encode_row(insert(110, T1, 1)), enc.encode_bootstrap(other), enc.encode_row(insert(111, other, 2)),
            enc.encode_row(insert(112, T1, 3)), enc.encode_bootstrap(T1),
            enc.encode_row(insert(113, T1, 4))]  # fmt: skip
    rows = PartitionRows(dec, topic="tp", partition=0, prefix=FakePrefix())
    assert feed_all(rows, msgs) == [(2, 111, 2), (0, 110, 1), (3, 112, 3), (5, 113, 4)]


def test_rows_that_can_never_be_decoded_fail_or_are_dropped_and_counted() -> None:
    enc, _ = simple()
    held = [enc.encode_row(insert(110, T1, 1)), enc.encode_row(insert(111, T1, 2))]
    superseded = [*held, enc.encode_bootstrap(T2), enc.encode_row(insert(210, T2, 3))]
    with pytest.raises(CorruptDataError, match=r"topic tp partition 0 offset 2: .*version 100 never arrived"):
        feed_all(PartitionRows(simple()[1], topic="tp", partition=0), superseded)
    with pytest.raises(CorruptDataError, match=r"partition 0: 2 row message\(s\) cannot be decoded \(first: db.t "
                       r"schema version 100 at topic tp partition 0 offset 0\)"):  # fmt: skip
        feed_all(PartitionRows(simple()[1], topic="tp", partition=0), held)
    for messages in (superseded, held):
        skipping = PartitionRows(simple(drop_undecodable=True)[1], topic="tp", partition=0, skip_undecodable=True)
        assert feed_all(skipping, messages) == ([(3, 210, 3)] if messages is superseded else [])
        assert skipping.dropped == 2
    # a DDL carries the version before it as preTableSchema: held rows of that version are decoded
    ddl = DDLEvent(200, DDLAction.ADD_COLUMN, "ALTER TABLE t ADD COLUMN d DECIMAL(8,2)", "db", "t", T2, T1)
    rows = PartitionRows(simple()[1], topic="tp", partition=0)
    assert feed_all(rows, [*held, enc.encode_ddl(ddl)]) == [(0, 110, 1), (1, 111, 2)]


def test_a_foreign_message_fails_naming_topic_partition_and_offset() -> None:
    for protocol, dec in (("canal-json", CanalJsonMessageDecoder()), ("simple", SimpleDecoder())):
        rows = PartitionRows(dec, topic="orders", partition=2)
        with pytest.raises(CorruptDataError, match=r"^topic orders partition 2 offset 9: .*JSON"):
            rows.feed(9, b"hello, not TiCDC")
        with pytest.raises(CorruptDataError, match=r"^topic orders partition 2 offset 10: "):
            rows.feed(10, b'{"some": "other json"}')
        assert protocol


def test_large_messages_without_their_full_row_name_claim_check() -> None:
    big = table(100, ColumnInfo("blob", "varchar", length=9000))
    row = RowChange(110, big, RowOp.INSERT, None, (1, "a", "x" * 3000))
    base = {"max-message-bytes": 1500}
    only_key = message_encoder("simple", {**base, "large-message-handle-option": "handle-key-only"})
    rows = PartitionRows(simple()[1], topic="tp", partition=0)
    rows.feed(0, only_key.encode_bootstrap(big).value)
    with pytest.raises(CorruptDataError, match=r'offset 1: .*handle-key-only.*"claim-check"'):
        rows.feed(1, only_key.encode_row(row).value)
    cc = message_encoder("simple", {**base, "large-message-handle-option": "claim-check",
                                    "claim-check-storage-uri": "file:///tmp/cc"})  # fmt: skip
    encoded = cc.encode_row_checked(row)  # type: ignore[attr-defined]
    rows = PartitionRows(simple()[1], topic="tp", partition=0)
    rows.feed(0, cc.encode_bootstrap(big).value)
    with pytest.raises(CorruptDataError, match=r"offset 1: .*claim-check-storage-uri as an option"):
        rows.feed(1, encoded.message.value)
    files = {encoded.claim_check.name: encoded.claim_check.data}
    rows = PartitionRows(simple(claim_check_reader=files.__getitem__)[1], topic="tp", partition=0)
    rows.feed(0, cc.encode_bootstrap(big).value)
    ((at, got),) = rows.feed(1, encoded.message.value)
    assert at == 1 and got.after == (1, "a", "x" * 3000)


def test_markers_find_watermarks_and_schemas_only() -> None:
    for fmt in ("json", "avro"):
        enc, dec = simple(fmt)
        mark = marker_reader("simple", dec)
        ddl = DDLEvent(200, DDLAction.ADD_COLUMN, "ALTER TABLE t ADD COLUMN d DECIMAL(8,2)", "db", "t", T2, T1)
        assert mark(enc.encode_watermark(5).value) == Marker(watermark=5)
        assert mark(enc.encode_bootstrap(T1).value) == Marker(schemas=(("db", "t", 100),))
        assert mark(enc.encode_ddl(ddl).value) == Marker(schemas=(("db", "t", 200),))
        assert mark(enc.encode_row(insert(1, T1, 1)).value) == Marker()
    options = {"enable-tidb-extension": True}
    enc = message_encoder("canal-json", options)
    mark = marker_reader("canal-json", CanalJsonMessageDecoder(CanalJsonConfig.from_options(options)))
    assert mark(enc.encode_watermark(9).value) == Marker(watermark=9)
    assert mark(enc.encode_row(insert(1, T1, 1)).value) == Marker()


def test_rows_without_commit_ts_are_all_emitted_in_offset_order() -> None:
    """Real TiCDC canal-json without ``_tidb`` (issue 26, item 2): no watermark, commit-ts 0, nothing taken for a
    re-send; read as if it had the extension, the first message fails naming topic, partition and offset."""
    from tests.fixtures.ticdc_canal_json import WITHOUT_EXTENSION

    values = [m.value for m in WITHOUT_EXTENSION]

    def decoder(extension: bool) -> CanalJsonMessageDecoder:
        return CanalJsonMessageDecoder(CanalJsonConfig(enable_tidb_extension=extension), check_extension=True)

    rows = PartitionRows(decoder(False), topic="tp", partition=2)
    out = [pair for offset, value in enumerate(values) for pair in rows.feed(offset, value)]
    rows.finish()
    dml = [o for o, v in enumerate(values) if b'"isDdl":false' in v]
    assert [o for o, _ in out] == dml and all(r.commit_ts == 0 for _, r in out) and rows.fallback == 0
    with pytest.raises(CorruptDataError, match=r"^topic tp partition 2 offset 0: .*carries no commit-ts"):
        PartitionRows(decoder(True), topic="tp", partition=2).feed(0, values[0])
