"""The Kafka consumer against the real broker and a real downstream, without a changefeed: topics built from our
encoders. Bad input stops it with topic, partition and offset, nothing after it applied; a restart resumes from
the committed offsets without applying anything twice."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from sparkcdc.codec.base import message_encoder
from sparkcdc.consumer.kafka_consumer import KafkaConsumer, KafkaConsumerConfig
from sparkcdc.devtools.kafka import KafkaBroker
from sparkcdc.errors import ConfigError, CorruptDataError
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from sparkcdc.mysql.target import MysqlTarget
from tests.integration.consumer.servers import run_sql

pytestmark = pytest.mark.integration

DB = "kc_db"
_IDX = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
T = TableInfo(DB, "t", 7, with_handle_keys((ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "varchar",
              length=20)), _IDX), _IDX, 100)  # fmt: skip
TS = 450_000_000_000_000_000


@pytest.fixture
def downstream(target: MysqlTarget) -> Iterator[MysqlTarget]:
    run_sql(target, f"DROP DATABASE IF EXISTS {DB}", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            f"CREATE DATABASE {DB}", f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))")  # fmt: skip
    yield target
    run_sql(target, f"DROP DATABASE IF EXISTS {DB}")


def topic_with(broker: KafkaBroker, name: str, values: list[bytes]) -> None:
    """``values`` on partition 0 of a new 1-partition topic."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(name, 1, 1)])[name].result()
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for v in values:
        producer.produce(name, v, partition=0)
    assert producer.flush(10) == 0


def run(broker: KafkaBroker, topic: str, target: MysqlTarget, query: str = "protocol=simple") -> KafkaConsumer:
    """Run the consumer until it raises or has applied everything (then stop it)."""
    config = KafkaConsumerConfig.from_uri(f"kafka://{broker.bootstrap}/{topic}?{query}", {}, f"g-{topic}")
    consumer = KafkaConsumer(config, target)
    stop = threading.Event()
    polls = [0, 0]  # all, since everything was applied

    def progress(c: KafkaConsumer) -> None:
        polls[0] += 1
        polls[1] = polls[1] + 1 if c.stats.applied_ts >= TS + 3 else 0
        if polls[1] > 5 or polls[0] > 50:  # done, or (a restart with nothing new) 10 s of polls
            stop.set()

    try:
        consumer.run(stop, progress)
    finally:
        consumer.close()
    return consumer


def rows(target: MysqlTarget) -> list[tuple[int, str]]:
    return [(int(a), str(b)) for a, b in run_sql(target, f"SELECT id, v FROM {DB}.t ORDER BY id")]


def messages() -> list[bytes]:
    enc = message_encoder("simple", {})
    first, second = (RowChange(TS + k, T, RowOp.INSERT, None, (k, v)) for k, v in ((1, "a"), (2, "b")))
    return [enc.encode_bootstrap(T).value, enc.encode_row(first).value, enc.encode_watermark(TS + 1).value,
            enc.encode_row(second).value, enc.encode_watermark(TS + 3).value]  # fmt: skip


def test_a_foreign_message_stops_it_naming_where_and_nothing_after_is_applied(
    kafka_broker: KafkaBroker, downstream: MysqlTarget
) -> None:
    values = messages()
    topic_with(kafka_broker, "kc-foreign", [*values[:3], b"hello, not TiCDC", *values[3:]])
    with pytest.raises(CorruptDataError) as e:
        run(kafka_broker, "kc-foreign", downstream)
    assert "topic kc-foreign partition 0 offset 3" in e.value.message and "\n" not in e.value.message
    assert rows(downstream) == [(1, "a")]  # the row before it, nothing after


def test_truncated_message(kafka_broker: KafkaBroker, downstream: MysqlTarget) -> None:
    values = messages()
    topic_with(kafka_broker, "kc-truncated", [*values[:3], values[3][:25], *values[4:]])
    with pytest.raises(CorruptDataError, match="topic kc-truncated partition 0 offset 3"):
        run(kafka_broker, "kc-truncated", downstream)
    assert rows(downstream) == [(1, "a")]


def test_a_restart_resumes_without_applying_twice(kafka_broker: KafkaBroker, downstream: MysqlTarget) -> None:
    topic_with(kafka_broker, "kc-restart", messages())
    first = run(kafka_broker, "kc-restart", downstream)
    assert first.stats.rows_applied == 2 and rows(downstream) == [(1, "a"), (2, "b")]
    run_sql(downstream, f"UPDATE {DB}.t SET v = 'changed downstream' WHERE id = 1")
    second = run(kafka_broker, "kc-restart", downstream)  # the same group: from the committed offsets
    assert second.stats.rows_applied == 0
    assert rows(downstream) == [(1, "changed downstream"), (2, "b")]


def test_canal_json_needs_the_tidb_extension(kafka_broker: KafkaBroker) -> None:
    with pytest.raises(ConfigError, match="enable-tidb-extension=true"):
        KafkaConsumerConfig.from_uri(f"kafka://{kafka_broker.bootstrap}/t?protocol=canal-json", {}, "g")


def test_joining_mid_stream_applies_from_the_first_bootstrap(
    kafka_broker: KafkaBroker, downstream: MysqlTarget
) -> None:
    """The topic's head (with the first BOOTSTRAP) is gone, as after retention: a fresh consumer holds the rows
    it cannot decode yet, applies those the next BOOTSTRAP makes decodable, and drops (counts) the one whose
    schema version was replaced before it was ever announced."""
    enc = message_encoder("simple", {})
    old = TableInfo(DB, "t", 7, T.columns, T.indexes, 90)  # a version no message of the tail announces

    def insert(table: TableInfo, ts: int, k: int) -> bytes:
        return enc.encode_row(RowChange(ts, table, RowOp.INSERT, None, (k, f"r{k}"))).value

    tail = [insert(old, TS + 1, 1), insert(T, TS + 2, 2), enc.encode_watermark(TS + 2).value,
            enc.encode_bootstrap(T).value, insert(T, TS + 3, 3), enc.encode_watermark(TS + 3).value]  # fmt: skip
    topic_with(kafka_broker, "kc-mid", tail)
    consumer = run(kafka_broker, "kc-mid", downstream)
    assert rows(downstream) == [(2, "r2"), (3, "r3")] and consumer.dropped == 1
