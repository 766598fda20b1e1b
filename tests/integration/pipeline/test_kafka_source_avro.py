"""format("ticdc-kafka") on TiCDC's ``protocol=avro``, on real Spark over Apache Kafka with a real schema registry:
messages made by our avro encoder (TiCDC's testing mode: watermarks, DDL messages, delete markers) are read back
with their keys, schemas fetched from the registry by id; ``up-to-watermark`` keeps what the last watermarks cover;
a re-send below its partition's watermark is left out, as for the other protocols. Tables sharing one hard-coded
topic share its subjects, as in TiCDC."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.codec.avro.config import AvroConfig
from sparkcdc.codec.avro.encoder import AvroEncoder
from sparkcdc.codec.base import Message
from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.schema_registry import SchemaRegistry
from sparkcdc.errors import RegistryError
from sparkcdc.model import DDLAction, DDLEvent, RowChange, RowOp
from sparkcdc.pipeline import kafka_source
from sparkcdc.schema_registry.client import registry_client
from tests.integration.pipeline.test_kafka_source import ALL, PARTITIONS, B, create_topic, produce, table

pytestmark = pytest.mark.integration

TOPIC = "ks-avro"
A = table("a", 100)
QUERY = "protocol=avro&enable-tidb-extension=true&avro-enable-watermark=true"


def img(i: int, v: str) -> tuple[Any, ...]:
    return (i, v, i * 10, Decimal(f"{i}.250"), i + 0.5, bytes([i, 0, 255]), f"2024-01-0{i} 10:00:00")


def messages(registry: SchemaRegistry) -> list[tuple[int, Message]]:
    enc = AvroEncoder(AvroConfig(enable_tidb_extension=True, enable_watermark=True), registry_client(registry.url))
    out: list[tuple[int, Message]] = []

    def row(r: RowChange) -> None:
        out.append((r.values[0] % PARTITIONS, enc.encode_row(r, TOPIC)))

    ddl = enc.encode_ddl(DDLEvent(100, DDLAction.CREATE_TABLE, "CREATE TABLE a (...)", "kdb", "a"))
    assert ddl is not None
    out.append((ALL, ddl))
    for i in range(1, 7):
        row(RowChange(110, A, RowOp.INSERT, None, img(i, f"v{i}")))
    row(RowChange(120, A, RowOp.UPDATE, img(2, "v2"), img(2, "u2")))
    watermark = enc.encode_watermark(125)
    assert watermark is not None
    out.append((ALL, watermark))
    row(RowChange(120, A, RowOp.UPDATE, img(2, "v2"), img(2, "u2")))  # re-sent below watermark 125: left out
    row(RowChange(130, A, RowOp.DELETE, img(3, "v3"), None))
    return out


@pytest.fixture(scope="module")
def kspark(spark: Any) -> Any:
    kafka_source.register(spark)
    return spark


def test_avro_rows_are_read_with_their_keys_through_the_registry(
    kspark: Any, apache_kafka: ApacheKafka, schema_registry: SchemaRegistry
) -> None:
    create_topic(apache_kafka, TOPIC)
    produce(apache_kafka, TOPIC, messages(schema_registry))
    uri = f"kafka://{apache_kafka.bootstrap}/{TOPIC}?{QUERY}"
    df = kspark.read.format("ticdc-kafka").option("schema-registry", schema_registry.url).load(uri)
    got = sorted(((r.commit_ts, r.op, r.before, r.after) for r in df.collect()), key=repr)
    after = {(ts, op): a for ts, op, _, a in got if a is not None}
    assert len(got) == 8, got  # 6 inserts, the update, the delete: the re-send is left out
    assert after[(120, "UPDATE")]["v"] == "u2" and after[(120, "UPDATE")]["d"] == "2.250"
    update = next(b for ts, op, b, _ in got if op == "UPDATE")
    assert update == {"id": "2", **{c.name: None for c in A.columns[1:]}}  # TiCDC writes no old value: the key
    assert [(b, a) for _, op, b, a in got if op == "DELETE"] == [({"id": "3"}, None)]  # the key's columns
    inserted = sorted(int(a["id"]) for ts, op, _, a in got if op == "INSERT")
    assert inserted == [1, 2, 3, 4, 5, 6]
    assert {r.file for r in df.collect()} == {f"{TOPIC}/{p}" for p in range(PARTITIONS)}

    covered = kspark.read.format("ticdc-kafka").option("schema-registry", schema_registry.url) \
        .option("up-to-watermark", "true").load(uri)  # fmt: skip
    assert sorted(r.commit_ts for r in covered.collect()) == [110] * 6 + [120]  # the delete is past watermark 125


def test_tables_in_one_hard_coded_topic_share_its_subjects(
    kspark: Any, apache_kafka: ApacheKafka, schema_registry: SchemaRegistry
) -> None:
    """TiCDC names the subjects after the topic, whatever the table (``<topic>-key``, ``<topic>-value``), and takes a
    hard-coded dispatcher topic for several tables as given. Under the registry's default rule (BACKWARD) the second
    table's schema is refused: one ``CDC:ErrAvroSchemaAPIError`` line naming the subject and what to do, which the
    changefeed retries (as TiCDC) and which the same row then passes once the subjects' compatibility is NONE. With
    it both tables' schemas are versions of them, each message carries its table's schema id, and both Confluent's
    own deserializer and format("ticdc-kafka") read every row as its table's."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = "ks-avro-shared"
    registry = registry_client(schema_registry.url)
    enc = AvroEncoder(AvroConfig(enable_tidb_extension=True, enable_watermark=True), registry)
    rows = [
        RowChange(110, A, RowOp.INSERT, None, img(1, "a1")),
        RowChange(111, B, RowOp.INSERT, None, img(2, "b2")),
        RowChange(112, A, RowOp.INSERT, None, img(3, "a3")),
        RowChange(113, B, RowOp.INSERT, None, img(4, "b4")),
    ]
    first = enc.encode_row(rows[0], topic)
    with pytest.raises(RegistryError) as refused:
        enc.encode_row(rows[1], topic)
    assert f"subject '{topic}-key'" in refused.value.message and "compatibility to NONE" in refused.value.message
    assert "\n" not in refused.value.message and refused.value.code == "CDC:ErrAvroSchemaAPIError"
    assert not refused.value.retryable and not refused.value.permanent  # not tried again at once; the changefeed does

    http = SchemaRegistryClient({"url": schema_registry.url})
    for subject in (f"{topic}-key", f"{topic}-value"):
        http.set_compatibility(subject, "NONE")
    sent = [first, *(enc.encode_row(r, topic) for r in rows[1:])]
    assert [len(http.get_versions(f"{topic}-{f}")) for f in ("key", "value")] == [2, 2]
    values = AvroDeserializer(http)
    context = SerializationContext(topic, MessageField.VALUE)
    assert [values(m.value, context)["v"] for m in sent] == ["a1", "b2", "a3", "b4"]

    watermark = enc.encode_watermark(120)
    assert watermark is not None
    create_topic(apache_kafka, topic)
    produce(apache_kafka, topic, [*((r.values[0] % PARTITIONS, m) for r, m in zip(rows, sent, strict=True)),
                                  (ALL, watermark)])  # fmt: skip
    df = kspark.read.format("ticdc-kafka").option("schema-registry", schema_registry.url) \
        .load(f"kafka://{apache_kafka.bootstrap}/{topic}?{QUERY}")  # fmt: skip
    got = sorted((r.table, r.commit_ts, r.after["v"]) for r in df.collect())
    assert got == [("a", 110, "a1"), ("a", 112, "a3"), ("b", 111, "b2"), ("b", 113, "b4")]
