"""The Kafka consumer against the real broker and a real downstream, without a changefeed: topics built from our
encoders, and real TiCDC canal-json messages from public repositories. Bad input stops it with topic, partition and
offset, nothing after it applied; a restart resumes from the committed offsets without applying anything twice."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from sparkcdc.codec.base import message_encoder
from sparkcdc.consumer.kafka_client import connect
from sparkcdc.consumer.kafka_consumer import KafkaConsumerConfig, KafkaSource
from sparkcdc.consumer.runner import Consumer
from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.errors import CorruptDataError, KafkaError, SparkcdcError
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from sparkcdc.mysql.downstream_guard import ERR_AHEAD
from sparkcdc.mysql.engine import ApplyEngine
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.sink.kafka.config import KafkaSinkConfig
from tests.fixtures.ticdc_canal_json import WITHOUT_EXTENSION
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


def topic_with(broker: ApacheKafka, name: str, values: list[bytes]) -> None:
    """``values`` on partition 0 of a new 1-partition topic."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(name, 1, 1)])[name].result()
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for v in values:
        producer.produce(name, v, partition=0)
    assert producer.flush(10) == 0


def kafka_consumer(config: KafkaConsumerConfig, target: MysqlTarget, start_over: bool = False) -> Consumer:
    return Consumer(KafkaSource(config, start_over=start_over), ApplyEngine(target, workers=4))


def run(broker: ApacheKafka, topic: str, target: MysqlTarget, query: str = "protocol=simple",
        start_over: bool = False) -> Consumer:  # fmt: skip
    """Run the consumer until it raises or has applied everything (then stop it)."""
    config = KafkaConsumerConfig.from_uri(f"kafka://{broker.bootstrap}/{topic}?{query}", {}, f"g-{topic}")
    consumer = kafka_consumer(config, target, start_over=start_over)
    stop = threading.Event()
    polls = [0, 0]  # all, since everything was applied

    def progress(c: Consumer) -> None:
        polls[0] += 1
        polls[1] = polls[1] + 1 if c.stats.applied_ts >= TS + 3 else 0
        if polls[1] > 5 or polls[0] > 50:  # done, or (a restart with nothing new) 10 s of polls
            stop.set()

    try:
        consumer.run(stop, on_progress=progress)
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
    apache_kafka: ApacheKafka, downstream: MysqlTarget
) -> None:
    values = messages()
    topic_with(apache_kafka, "kc-foreign", [*values[:3], b"hello, not TiCDC", *values[3:]])
    with pytest.raises(CorruptDataError) as e:
        run(apache_kafka, "kc-foreign", downstream)
    assert "topic kc-foreign partition 0 offset 3" in e.value.message and "\n" not in e.value.message
    assert rows(downstream) == [(1, "a")]  # the row before it, nothing after


def test_truncated_message(apache_kafka: ApacheKafka, downstream: MysqlTarget) -> None:
    values = messages()
    topic_with(apache_kafka, "kc-truncated", [*values[:3], values[3][:25], *values[4:]])
    with pytest.raises(CorruptDataError, match="topic kc-truncated partition 0 offset 3"):
        run(apache_kafka, "kc-truncated", downstream)
    assert rows(downstream) == [(1, "a")]


def test_a_restart_resumes_without_applying_twice(apache_kafka: ApacheKafka, downstream: MysqlTarget) -> None:
    topic_with(apache_kafka, "kc-restart", messages())
    first = run(apache_kafka, "kc-restart", downstream)
    assert first.stats.rows_applied == 2 and rows(downstream) == [(1, "a"), (2, "b")]
    run_sql(downstream, f"UPDATE {DB}.t SET v = 'changed downstream' WHERE id = 1")
    second = run(apache_kafka, "kc-restart", downstream)  # the same group: from the committed offsets
    assert second.stats.rows_applied == 0
    assert rows(downstream) == [(1, "changed downstream"), (2, "b")]


# The tables the real messages' rows need downstream (their CREATE TABLEs are not among the messages), as TiDB had
# them: types from the messages' mysqlType, keys from pkNames, lengths wide enough for the values.
REAL_TABLES = (
    "CREATE DATABASE test",
    "CREATE TABLE test.employee (id INT PRIMARY KEY, FirstName VARCHAR(32), LastName VARCHAR(32), HireDate DATE, "
    "OfficeLocation VARCHAR(32))",
    "CREATE TABLE test.student (id VARCHAR(20) PRIMARY KEY, name VARCHAR(20), age VARCHAR(100), `desc` VARCHAR(100))",
    "CREATE TABLE test.data_type (id INT PRIMARY KEY, `tinyint` TINYINT, `smallint` SMALLINT, `mediumint` MEDIUMINT, "
    "`int` INT, `bigint` BIGINT, `float` FLOAT, `double` DOUBLE, `decimal` DECIMAL(20,8), `date` DATE, "
    "`datetime` DATETIME, `time` TIME, `timestamp` TIMESTAMP NULL, `char` CHAR(16), `varchar` VARCHAR(64), "
    "`binary` BINARY(10), `varbinary` VARBINARY(16), `blob` BLOB, `text` TEXT, `enum` ENUM('a','b'), "
    "`set` SET('a','b'), `json` JSON)",
    "CREATE DATABASE bdp_admin",
    "CREATE TABLE bdp_admin.bdp_job_node_run_history (id INT PRIMARY KEY, name VARCHAR(32), type VARCHAR(32))",
    "CREATE TABLE bdp_admin.t1 (id INT PRIMARY KEY, name VARCHAR(32), type VARCHAR(32))",
)


@pytest.fixture
def real_downstream(target: MysqlTarget) -> Iterator[MysqlTarget]:
    drop = ("DROP DATABASE IF EXISTS test", "DROP DATABASE IF EXISTS bdp_admin", "DROP DATABASE IF EXISTS jan",
            "DROP DATABASE IF EXISTS sparkcdc_consumer")  # fmt: skip
    run_sql(target, *drop, *REAL_TABLES)
    yield target
    run_sql(target, *drop)


def real_topic(broker: ApacheKafka, name: str) -> None:
    """The 17 real TiCDC canal-json messages without ``_tidb`` on one partition, in the order their changefeeds
    committed them (``es``: each source's tables are its own)."""
    topic_with(broker, name, [m.value for m in sorted(WITHOUT_EXTENSION, key=lambda m: json.loads(m.value)["es"])])


def committed(broker: ApacheKafka, topic: str, group: str) -> int:
    """The group's committed offset of partition 0 (-1001: none)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        return int(c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset)
    finally:
        c.close()


def drain(consumer: Consumer, until: Callable[[Consumer], bool]) -> None:
    """Run ``consumer`` until ``until`` holds for 5 polls in a row (at most 200 polls, about 40 s)."""
    stop = threading.Event()
    polls = [0, 0]

    def progress(c: Consumer) -> None:
        polls[0] += 1
        polls[1] = polls[1] + 1 if until(c) else 0
        if polls[1] > 5 or polls[0] > 200:
            stop.set()

    try:
        consumer.run(stop, on_progress=progress)
    finally:
        consumer.close()


def test_real_canal_json_without_the_tidb_extension_is_applied(
    apache_kafka: ApacheKafka, real_downstream: MysqlTarget
) -> None:
    """A plain ``?protocol=canal-json`` URI is accepted, as TiCDC's consumer accepts it, and every real message is
    applied in the order read (one partition: the changefeeds' order); the group's offset ends after the last."""
    real_topic(apache_kafka, "kc-real-plain")
    config = KafkaConsumerConfig.from_uri(f"kafka://{apache_kafka.bootstrap}/kc-real-plain?protocol=canal-json", {},
                                          "g-kc-real-plain")  # fmt: skip
    consumer = kafka_consumer(config, real_downstream)
    drain(consumer, lambda c: c.stats.rows_applied >= 12 and c.stats.ddls_executed >= 5)
    assert (consumer.stats.rows_applied, consumer.stats.ddls_executed) == (12, 5)
    t = real_downstream
    assert run_sql(t, "SELECT COUNT(*) FROM test.employee") == [(0,)]  # INSERT, UPDATE, DELETE of one row
    assert run_sql(t, "SELECT id, `desc` FROM test.student ORDER BY id") == [
        ("21", " 好学生 "), ("22", " 也是个好学生 "), ("23", " 更是个好学生 ")]  # fmt: skip
    assert run_sql(t, "SELECT * FROM bdp_admin.bdp_job_node_run_history") == [(3, "工商银行A", "bank")]
    assert run_sql(t, "SELECT * FROM bdp_admin.t1") == [(100, "test", "a")]
    assert run_sql(t, "SELECT * FROM test.simple1") == [(1, 1)]  # created by its CREATE TABLE message
    assert run_sql(t, "SELECT id, k FROM jan.sbtest1 ORDER BY id") == [(1, 1), (2, 2)]  # database, table: messages
    assert run_sql(t, "SHOW INDEX FROM jan.sbtest1 WHERE Key_name = 'k_1'")  # and the CINDEX message
    assert run_sql(t, "SELECT COUNT(*) FROM test.sbtest5") == [(0,)]
    row = run_sql(t, "SELECT `binary`, `enum`, `set`, `decimal`, `json`, `time` FROM test.data_type")[0]
    assert row[:4] == (b"Joseph\0\0\0\0", "a", "a", Decimal("1.20364700")) and json.loads(row[4]) == {"a": 1, "b": 2}
    assert str(row[5]) == "20:23:41"
    assert committed(apache_kafka, "kc-real-plain", "g-kc-real-plain") == 17


def test_real_canal_json_without_the_tidb_extension_read_with_it_is_refused_at_the_first(
    apache_kafka: ApacheKafka, real_downstream: MysqlTarget
) -> None:
    """With ``enable-tidb-extension=true`` in the URI, the first message without ``_tidb`` stops the consumer in one
    line naming topic, partition and offset; nothing is applied and no offset is committed (it was dropped in
    silence, and the offsets committed past it)."""
    real_topic(apache_kafka, "kc-real-ext")
    uri = f"kafka://{apache_kafka.bootstrap}/kc-real-ext?protocol=canal-json&enable-tidb-extension=true"
    consumer = kafka_consumer(KafkaConsumerConfig.from_uri(uri, {}, "g-kc-real-ext"), real_downstream)
    with pytest.raises(CorruptDataError) as e:
        drain(consumer, lambda c: False)
    assert e.value.message.startswith("topic kc-real-ext partition 0 offset 0: ") and "\n" not in e.value.message
    assert "carries no commit-ts ('_tidb.commitTs') although enable-tidb-extension=true is set" in e.value.message
    assert consumer.stats.rows_applied == 0 and consumer.stats.ddls_executed == 0
    assert committed(apache_kafka, "kc-real-ext", "g-kc-real-ext") < 0
    assert run_sql(real_downstream, "SELECT COUNT(*) FROM test.student") == [(0,)]


def test_a_dropped_or_recreated_downstream_stops_it_until_it_starts_over(
    apache_kafka: ApacheKafka, downstream: MysqlTarget
) -> None:
    """Issue 26, item 7: after a DROP DATABASE downstream, the same group read nothing (its offsets are at the end)
    and said nothing. Now it refuses in one line, missing or recreated empty, and --reset-checkpoints (start_over)
    reads the topic again from its first offset and applies it all."""
    topic_with(apache_kafka, "kc-again", messages())
    assert run(apache_kafka, "kc-again", downstream).stats.rows_applied == 2
    run_sql(downstream, f"DROP DATABASE {DB}")
    with pytest.raises(SparkcdcError) as e:
        run(apache_kafka, "kc-again", downstream)
    assert e.value.code == ERR_AHEAD and "\n" not in e.value.message
    assert f"consumer 'default' applied rows to {DB}.t (last at " in e.value.message
    assert "but that table is missing" in e.value.message and "--reset-checkpoints" in e.value.message
    run_sql(downstream, "UPDATE sparkcdc_consumer.checkpoint SET updated_at = updated_at - INTERVAL 1 MINUTE",
            f"CREATE DATABASE {DB}", f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))")  # fmt: skip
    with pytest.raises(SparkcdcError, match="but that table is empty and was created after"):
        run(apache_kafka, "kc-again", downstream)
    over = run(apache_kafka, "kc-again", downstream, start_over=True)
    assert over.stats.rows_applied == 2 and rows(downstream) == [(1, "a"), (2, "b")]
    assert committed(apache_kafka, "kc-again", "g-kc-again") == 5
    assert run(apache_kafka, "kc-again", downstream).stats.rows_applied == 0  # and the next run goes on from there


def test_joining_mid_stream_applies_from_the_first_bootstrap(
    apache_kafka: ApacheKafka, downstream: MysqlTarget
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
    topic_with(apache_kafka, "kc-mid", tail)
    consumer = run(apache_kafka, "kc-mid", downstream)
    assert rows(downstream) == [(2, "r2"), (3, "r3")] and consumer.source.dropped == 1


def append(broker: ApacheKafka, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for v in values:
        producer.produce(topic, v, partition=0)
    assert producer.flush(10) == 0


def later_rows() -> list[bytes]:
    """Row 3 and its watermark, after :func:`messages`: no BOOTSTRAP or DDL before them."""
    enc = message_encoder("simple", {})
    row = RowChange(TS + 4, T, RowOp.INSERT, None, (3, "c"))
    return [enc.encode_row(row).value, enc.encode_watermark(TS + 5).value]


def test_a_restart_past_the_schema_message_reads_it_again_and_applies_what_follows(
    apache_kafka: ApacheKafka, downstream: MysqlTarget, caplog: pytest.LogCaptureFixture
) -> None:
    """The group's offsets are past the BOOTSTRAP that brought the table's schema, and no other comes (the
    changefeed is gone): the restarted consumer reads that BOOTSTRAP again, named in the commit's metadata, and
    applies the rows after its offsets instead of holding them forever."""
    topic_with(apache_kafka, "kc-schema", messages())
    assert run(apache_kafka, "kc-schema", downstream).stats.rows_applied == 2
    append(apache_kafka, "kc-schema", later_rows())
    caplog.set_level(logging.INFO)
    again = run(apache_kafka, "kc-schema", downstream)
    assert again.stats.rows_applied == 1 and rows(downstream) == [(1, "a"), (2, "b"), (3, "c")]
    assert "read 1 schema messages before the committed offsets again" in caplog.text


def test_a_schema_message_retention_deleted_is_named_and_its_rows_wait(
    apache_kafka: ApacheKafka, downstream: MysqlTarget, caplog: pytest.LogCaptureFixture
) -> None:
    """The BOOTSTRAP the commit names was deleted (retention): the restart says so and holds the rows after its
    offsets until the table's next BOOTSTRAP, as TiCDC's consumer would, applying nothing it cannot decode."""
    from confluent_kafka import TopicPartition

    topic_with(apache_kafka, "kc-gone", messages())
    assert run(apache_kafka, "kc-gone", downstream).stats.rows_applied == 2
    admin = AdminClient({"bootstrap.servers": apache_kafka.bootstrap})
    [done] = admin.delete_records([TopicPartition("kc-gone", 0, 2)]).values()
    done.result(10)
    append(apache_kafka, "kc-gone", later_rows())
    caplog.set_level(logging.INFO)
    again = run(apache_kafka, "kc-gone", downstream)
    assert again.stats.rows_applied == 0 and rows(downstream) == [(1, "a"), (2, "b")]
    assert "partition 0: the message at offset 0, which announced a table's schema, is gone" in caplog.text


def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.exclusive  # dial-timeout bounds the time
def test_a_cluster_nobody_answers_on_is_given_up_after_dial_timeout(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    port = closed_port()
    source = KafkaSinkConfig.from_uri(f"kafka://127.0.0.1:{port}/t?protocol=simple&dial-timeout=2s")
    started = time.monotonic()
    with pytest.raises(KafkaError) as e:
        connect(source, "g")
    took = time.monotonic() - started
    assert 1.5 < took < 6, took
    assert e.value.code == "CDC:ErrKafkaNewProducer" and "\n" not in e.value.message
    assert e.value.message.startswith(f"no Kafka broker at 127.0.0.1:{port} answered within 2 s (dial-timeout): ")
    assert "Connection refused" in e.value.message
    noisy = [r for r in caplog.records if r.levelno > logging.DEBUG]
    assert not noisy, [r.getMessage() for r in noisy]  # librdkafka's lines, if any, only at DEBUG
