"""``cdc kafka-consumer`` on TiCDC's ``protocol=avro`` (``sparkcdc.consumer.kafka_avro``): malformed settings are
one line each with no secret in it; an avro topic (ours, with an in-memory registry) runs through the consumer loop
with a fake Kafka client and a fake engine: the DDL once, rows in commit-ts order up to the watermarks, re-sends left
out, every offset committed only once what is below it was applied; a registry that does not answer is a retryable
error, not a corrupt message."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sparkcdc.codec.avro.config import AvroConfig
from sparkcdc.codec.avro.decoder import AvroDecoder
from sparkcdc.codec.avro.encoder import AvroEncoder
from sparkcdc.consumer.kafka_client import ClientErrors, Connection
from sparkcdc.consumer.kafka_consumer import KafkaConsumerConfig, KafkaSource
from sparkcdc.consumer.runner import Consumer
from sparkcdc.errors import ConfigError, RegistryError
from sparkcdc.model import DDLEvent, RowChange, RowOp
from sparkcdc.model.ddl_action import DDLAction
from tests.unit.codec.avro_support import MemoryRegistry
from tests.unit.consumer.test_kafka_loop import TS, FakeClient, FakeEngine, T

TOPIC = "t"
APPLIED = "protocol=avro&enable-tidb-extension=true&avro-enable-watermark=true"
REGISTRY = "http://127.0.0.1:8081"
SECRET = "s3cr%2Fet"


def config(query: str, registry: str = REGISTRY, toml: dict[str, Any] | None = None) -> KafkaConsumerConfig:
    return KafkaConsumerConfig.from_uri(f"kafka://127.0.0.1:9/{TOPIC}?{query}", toml or {}, "g",
                                        schema_registry=registry)  # fmt: skip


@pytest.mark.parametrize(
    ("query", "registry", "toml", "expected"),
    [
        (APPLIED, "", {}, "[CDC:ErrAvroSchemaAPIError] protocol=avro is read through the changefeed's schema registry: "
                          "pass --schema-registry-uri http://host:8081"),
        ("enable-tidb-extension=true&avro-enable-watermark=true", "", {"sink": {"protocol": "avro"}},
         "pass --schema-registry-uri http://host:8081"),
        (APPLIED, f"ftp://u:{SECRET}@h:8081", {}, "--schema-registry-uri 'ftp://u:xxxxx@h:8081' must start with"),
        (APPLIED, f"http://u:{SECRET}@h:8081/?x=1", {}, "--schema-registry-uri 'http://u:xxxxx@h:8081/?x=1' must not"),
        (APPLIED, "http://:8081", {}, "--schema-registry-uri 'http://:8081' names no host"),
        (APPLIED, "http://h:0", {}, "has port 0"),
        (APPLIED, "http://h:99999", {}, "is not a valid URL"),
        (APPLIED, "http://h :8081", {}, "contains whitespace"),
        (APPLIED, f"http://:{SECRET}@h:8081", {}, "must give credentials as user:password@"),
        ("protocol=avro", REGISTRY, {}, "[CDC:ErrKafkaInvalidConfig] cdc kafka-consumer applies protocol=avro only "
                                        "from a changefeed with enable-tidb-extension=true and avro-enable-watermark"),
        ("protocol=avro&enable-tidb-extension=true", REGISTRY, {}, "avro-enable-watermark=true (set both"),
        ("protocol=avro&avro-enable-watermark=true", REGISTRY, {}, "avro-enable-watermark=true (set both"),
        (f"{APPLIED}&avro-decimal-handling-mode=exact", REGISTRY, {},
         'avro-decimal-handling-mode value could only be "string" or "precise"'),
        (f"{APPLIED}&avro-bigint-unsigned-handling-mode=int", REGISTRY, {},
         'avro-bigint-unsigned-handling-mode value could only be "string" or "long"'),
        (f"{APPLIED}&avro-enable-watermark=yes", REGISTRY, {}, "avro-enable-watermark"),
        (f"{APPLIED}&schema-registry=http://u:s3cret@h", "", {"force-replicate": True},
         "force-replicate must be disabled"),
        (f"{APPLIED}&schema-registry=http://u:{SECRET}@h", "", {}, "'http://u:xxxxx@h' is not a valid URL"),
        (f"{APPLIED}&schema-registry=tcp://u:s3cret@h", "", {}, "'tcp://u:xxxxx@h' must start with http://"),
    ],
)  # fmt: skip
def test_malformed_avro_consumer_settings_are_one_line_without_the_secret(
    query: str, registry: str, toml: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigError) as e:
        config(query, registry, toml)
    text = f"[{e.value.code}] {e.value.message}"
    assert expected in text, text
    assert "\n" not in text and SECRET not in text and "s3cr" not in text, text


def test_the_registry_comes_from_the_flag_then_the_uri_then_the_toml() -> None:
    flag = config(f"{APPLIED}&schema-registry=http://uri:1", "http://flag:1")
    assert flag.source.schema_registry == "http://uri:1"  # the URI beats [sink], as on the changefeed
    assert config(APPLIED, "http://flag:1").source.schema_registry == "http://flag:1"
    toml = config(APPLIED, "", {"sink": {"schema-registry": "http://toml:1"}})
    assert toml.source.schema_registry == "http://toml:1"
    decoder = config(f"{APPLIED}&avro-decimal-handling-mode=string").decoder()
    assert isinstance(decoder, AvroDecoder) and decoder.config.decimal_handling_mode == "string"
    assert decoder.config.enable_tidb_extension and decoder.config.watermarks
    assert config(APPLIED).ordered


class KeyedMessage:
    def __init__(self, partition: int, offset: int, key: bytes | None, value: bytes) -> None:
        self._p, self._o, self._k, self._v = partition, offset, key, value

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def key(self) -> bytes | None:
        return self._k

    def value(self) -> bytes | None:
        return self._v or None  # a tombstone has no value


def avro_topic(registry: MemoryRegistry, *, tombstones: bool = False) -> dict[int, list[tuple[bytes | None, bytes]]]:
    """A 3-partition topic as our avro changefeed writes it in TiCDC's testing mode: the CREATE TABLE and each
    watermark on every partition, rows on the partition of their key; ``tombstones``: each DELETE without a commit ts
    (as tiflow's TiCDC writes it), not pingcap/ticdc's marker."""
    enc = AvroEncoder(AvroConfig(enable_tidb_extension=True, enable_watermark=True), registry)
    deletes = AvroEncoder(AvroConfig(enable_tidb_extension=True), registry) if tombstones else enc
    topic: dict[int, list[tuple[bytes | None, bytes]]] = {p: [] for p in range(3)}

    def everywhere(message: Any) -> None:
        for p in topic:
            topic[p].append((message.key, message.value))

    def row(ts: int, op: RowOp, before: tuple[Any, ...] | None, after: tuple[Any, ...] | None) -> None:
        m = (deletes if op is RowOp.DELETE else enc).encode_row(RowChange(ts, T, op, before, after), TOPIC)
        topic[(after or before or (0,))[0] % 3].append((m.key, m.value))

    everywhere(enc.encode_ddl(DDLEvent(TS, DDLAction.CREATE_TABLE, "CREATE TABLE k (id INT PRIMARY KEY, v INT)",
                                       "db", "k")))  # fmt: skip
    for i in range(1, 10):
        row(TS + i, RowOp.INSERT, None, (i, i))
    everywhere(enc.encode_watermark(TS + 10))
    row(TS + 11, RowOp.UPDATE, (4, 4), (4, 40))
    row(TS + 12, RowOp.DELETE, (5, 5), None)  # a key change: DELETE of the old key, INSERT of the new
    row(TS + 12, RowOp.INSERT, None, (50, 5))
    everywhere(enc.encode_watermark(TS + 20))
    return topic


@pytest.mark.parametrize("tombstones", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_an_avro_topic_is_applied_in_commit_order_and_committed_after_it(
    monkeypatch: pytest.MonkeyPatch, seed: int, tombstones: bool
) -> None:
    registry = MemoryRegistry()
    monkeypatch.setattr("sparkcdc.schema_registry.client.registry_client", lambda url: registry)
    topic = avro_topic(registry, tombstones=tombstones)
    source = KafkaSource(config(APPLIED))
    stop = threading.Event()
    engine = FakeEngine()
    client = FakeClient({p: [v for _, v in msgs] for p, msgs in topic.items()}, seed, stop, lambda offsets: None)
    client.queues = {p: [KeyedMessage(p, o, k, v) for o, (k, v) in enumerate(msgs)] for p, msgs in topic.items()}
    connection = Connection(client, sorted(topic), {}, ClientErrors("127.0.0.1:9"))
    monkeypatch.setattr(KafkaSource, "_connect", lambda self: connection)
    Consumer(source, engine).run(stop)  # type: ignore[arg-type]

    assert engine.ddls == ["CREATE TABLE k (id INT PRIMARY KEY, v INT)"]  # three copies, applied once
    assert [r.commit_ts - TS for r in engine.rows] == sorted(r.commit_ts - TS for r in engine.rows)
    assert len(engine.rows) == 12
    assert [(r.op, r.before, r.after) for r in engine.rows[-3:-1]] == [
        (RowOp.UPDATE, (4, None), (4, 40)), (RowOp.DELETE, (5,), None)
    ]  # an UPDATE's before image is its key (TiCDC writes no old value), a DELETE's its key's columns  # fmt: skip
    latest: dict[int, tuple[Any, ...] | None] = {}
    for r in engine.rows:
        image = r.after or r.before
        assert image is not None
        latest[image[0]] = r.after
    assert {k: v for k, v in latest.items() if v is not None} == {
        **{i: (i, i) for i in range(1, 10) if i not in (4, 5)}, 4: (4, 40), 50: (50, 5)
    }  # fmt: skip
    assert all(r.table.schema == "db" and r.table.table == "k" for r in engine.rows)
    assert client.commits[-1] == {p: len(msgs) for p, msgs in topic.items()}


def test_a_tombstone_gets_the_smallest_commit_ts_it_can_have_in_its_partition() -> None:
    """tiflow's TiCDC writes a DELETE as a tombstone even with watermarks: ordered by the commit ts of what came
    before it on its partition, it is never taken for a re-send (at or below what was released)."""
    registry = MemoryRegistry()
    enc = AvroEncoder(AvroConfig(enable_tidb_extension=True, enable_watermark=True), registry)
    tombstone = AvroEncoder(AvroConfig(enable_tidb_extension=True), registry).encode_row(
        RowChange(TS + 99, T, RowOp.DELETE, (5, 5), None), TOPIC
    )
    assert tombstone.value == b""
    decoder = AvroDecoder(AvroConfig(enable_tidb_extension=True, enable_watermark=True), registry)
    plain = AvroDecoder(AvroConfig(enable_tidb_extension=True), registry)
    ddl = enc.encode_ddl(DDLEvent(TS + 30, DDLAction.ADD_COLUMN, "ALTER TABLE k ADD COLUMN x INT", "db", "k"))
    sequence = [
        (enc.encode_row(RowChange(TS + 10, T, RowOp.INSERT, None, (1, 1)), TOPIC), None),
        (tombstone, TS + 10),  # the row's
        (enc.encode_watermark(TS + 20), None),
        (tombstone, TS + 21),  # just above the watermark
        (ddl, None),
        (tombstone, TS + 31),  # just above the DDL, released after it
    ]
    for message, expected in sequence:
        assert message is not None
        (event,) = decoder.decode(message)
        if expected is not None:
            assert isinstance(event, RowChange) and event.op is RowOp.DELETE and event.commit_ts == expected
    (event,) = plain.decode(tombstone)  # without watermarks there is nothing to order by
    assert isinstance(event, RowChange) and event.commit_ts == 0


def test_a_registry_that_does_not_answer_is_retried_not_a_corrupt_message(monkeypatch: pytest.MonkeyPatch) -> None:
    class Down:
        def schema(self, schema_id: int) -> str:
            raise RegistryError(f"cannot read schema {schema_id} at {REGISTRY}: connection refused")

    registry = MemoryRegistry()
    topic = avro_topic(registry)
    monkeypatch.setattr("sparkcdc.schema_registry.client.registry_client", lambda url: Down())
    source = KafkaSource(config(APPLIED))
    source.reached = True
    key, value = topic[1][1]
    with pytest.raises(RegistryError) as e:
        source._decode(source.config.decoder(), 1, 1, KeyedMessage(1, 1, key, value))
    assert source.retryable(e.value) and "connection refused" in e.value.message
