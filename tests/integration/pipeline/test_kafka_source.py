"""format("ticdc-kafka") on real Spark over a real broker: messages made by our encoders, sent to 3-partition topics
the way the Kafka sink sends them, read back in batch and streaming, compared with format("ticdc")."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from sparkcdc.codec.base import Message, message_encoder, txn_encoder
from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from sparkcdc.pipeline import kafka_source, ticdc_source
from sparkcdc.pipeline.source_rows import image
from tests.unit.consumer.trees import Tree

pytestmark = pytest.mark.integration

DB = "kdb"
PARTITIONS = 3
ALL = -1  # every partition
CODECS: dict[str, tuple[str, dict[str, Any]]] = {
    "canal-json": ("canal-json", {"enable-tidb-extension": True}),
    "simple-json": ("simple", {}),
    "simple-avro": ("simple", {"encoding-format": "avro"}),
}
IDX = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)


def table(name: str, version: int, *extra: ColumnInfo) -> TableInfo:
    cols = (ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "varchar", length=4000),
            ColumnInfo("n", "bigint"), ColumnInfo("d", "decimal", length=12, decimal=3),
            ColumnInfo("f", "double"), ColumnInfo("b", "varbinary", length=16),
            ColumnInfo("t", "datetime"), *extra)  # fmt: skip
    return TableInfo(DB, name, version % 1000, with_handle_keys(cols, IDX), IDX, version)


A = table("a", 100)
A2 = table("a", 140, ColumnInfo("c1", "int", default="1"))
B = table("b", 101)


def img(i: int, v: str | None = None, *extra: Any) -> tuple[Any, ...]:
    when = f"2024-01-0{i % 9 + 1} 10:00:0{i % 10}"
    return (i, v or f"v{i}", i * 10, Decimal(f"{i}.250"), i + 0.5, bytes([i, 0, 255]), when, *extra)


@dataclass
class Sent:
    """What was produced: per partition, the rows in offset order (None for a message that is no row or a re-send
    TiCDC's rule drops); the offsets after the first part; claim-check files."""

    rows: dict[int, list[RowChange | None]] = field(default_factory=lambda: {p: [] for p in range(PARTITIONS)})
    part1_end: dict[int, int] = field(default_factory=dict)


def build(
    protocol: str, options: dict[str, Any], claim_dir: Path
) -> tuple[list[tuple[int, Message]], list[tuple[int, Message]], Sent]:
    """Two parts of a changefeed's stream as the sink sends them: rows by ``id % 3``, DDLs everywhere (canal-json:
    partition 0), watermarks everywhere, simple BOOTSTRAPs before a table's rows. Part 2 starts with a re-send of
    part 1's last row (below watermark 125), holds an oversized row sent through claim-check, a re-send below
    watermark 170, and a row after the last watermark."""
    enc = message_encoder(protocol, {**options, "max-message-bytes": 2048, "large-message-handle-option": "claim-check",
                                     "claim-check-storage-uri": claim_dir.as_uri()})  # fmt: skip
    simple = protocol == "simple"
    sent = Sent()
    parts: list[list[tuple[int, Message]]] = [[], []]
    cur = parts[0]

    def put(target: int, message: Message, row: RowChange | None = None) -> None:
        cur.append((target, message))
        for p in range(PARTITIONS) if target == ALL else [target]:
            sent.rows[p].append(row)

    def row(r: RowChange, keep: bool = True) -> None:
        encoded = enc.encode_row_checked(r)  # type: ignore[attr-defined]
        if encoded.claim_check is not None:
            (claim_dir / encoded.claim_check.name).write_bytes(encoded.claim_check.data)
        put(r.values[0] % PARTITIONS, encoded.message, r if keep else None)

    def ddl(ts: int, action: DDLAction, query: str, t: TableInfo, pre: TableInfo | None = None) -> None:
        put(ALL if simple else 0, enc.encode_ddl(DDLEvent(ts, action, query, DB, t.table, t, pre)))

    create = "CREATE TABLE {} (id INT PRIMARY KEY, v VARCHAR(4000), n BIGINT, d DECIMAL(12,3), f DOUBLE, " \
             "b VARBINARY(16), t DATETIME)"  # fmt: skip
    ddl(100, DDLAction.CREATE_TABLE, create.format("a"), A)
    ddl(101, DDLAction.CREATE_TABLE, create.format("b"), B)
    if simple:
        put(ALL, enc.encode_bootstrap(A))
        put(ALL, enc.encode_bootstrap(B))
    for i in range(1, 7):
        row(RowChange(110, A, RowOp.INSERT, None, img(i)))
    for i in range(1, 4):
        row(RowChange(111, B, RowOp.INSERT, None, img(i, None if i != 2 else "ü 'x'")))
    update = RowChange(120, A, RowOp.UPDATE, img(2), img(2, "u2"))
    row(update)
    put(ALL, enc.encode_watermark(125))
    sent.part1_end = {p: len(rs) for p, rs in sent.rows.items()}
    cur = parts[1]
    row(update, keep=False)  # re-sent at or below watermark 125: dropped
    row(RowChange(130, A, RowOp.DELETE, img(3), None))
    ddl(140, DDLAction.ADD_COLUMN, "ALTER TABLE a ADD COLUMN c1 INT DEFAULT 1", A2, A)
    seven = RowChange(150, A2, RowOp.INSERT, None, img(7, None, 7))
    row(seven)
    row(RowChange(150, A2, RowOp.UPDATE, img(1, None, 1), img(1, "u1", None)))
    row(RowChange(152, A2, RowOp.INSERT, None, img(8, "x" * 3000, 8)))  # through claim-check
    put(ALL, enc.encode_watermark(170))
    row(seven, keep=False)  # re-sent at or below watermark 170: dropped
    row(RowChange(180, B, RowOp.INSERT, None, img(4)))
    return parts[0], parts[1], sent


def create_topic(broker: ApacheKafka, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(30)


def produce(broker: ApacheKafka, topic: str, messages: list[tuple[int, Message]]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "log.connection.close": False})
    for n, (target, message) in enumerate(messages, 1):
        for p in range(PARTITIONS) if target == ALL else [target]:
            producer.produce(topic, message.value, message.key, partition=p)
        if n % 4 == 0:
            assert producer.flush(30) == 0  # several produce batches, as the sink's
    assert producer.flush(30) == 0


def expected(topic: str, protocol: str, sent: Sent, *, start: dict[int, int] | None = None,
             upto: int | None = None) -> list[tuple[Any, ...]]:  # fmt: skip
    out = []
    for p, rows in sent.rows.items():
        for offset, r in enumerate(rows):
            if r is None or offset < (start or {}).get(p, 0) or (upto is not None and r.commit_ts > upto):
                continue
            names = [c.name for c in r.table.columns]
            version = r.table.version if protocol == "simple" else 0
            out.append((DB, r.table.table, version, 0, r.commit_ts, r.op.value, image(names, r.before),
                        image(names, r.after), f"{topic}/{p}", offset))  # fmt: skip
    return sorted(out, key=repr)


def collect(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


@dataclass
class Topic:
    name: str
    protocol: str
    options: dict[str, Any]
    claim_dir: Path
    sent: Sent
    part2: list[tuple[int, Message]]

    def uri(self, broker: ApacheKafka) -> str:
        query = "&".join(f"{k}={str(v).lower()}" for k, v in {"protocol": self.protocol, **self.options}.items())
        return f"kafka://{broker.bootstrap}/{self.name}?{query}"


@pytest.fixture(scope="module")
def kspark(spark: Any) -> Any:
    kafka_source.register(spark)
    ticdc_source.register(spark)
    return spark


@pytest.fixture(scope="module", params=list(CODECS))
def topic(apache_kafka: ApacheKafka, request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Topic:  # fmt: skip
    protocol, options = CODECS[request.param]
    claim_dir = tmp_path_factory.mktemp("claim-check")
    part1, part2, sent = build(protocol, options, claim_dir)
    name = f"ks-{request.param}"
    create_topic(apache_kafka, name)
    produce(apache_kafka, name, part1 + part2)
    return Topic(name, protocol, options, claim_dir, sent, part2)


def read(kspark: Any, t: Topic, broker: ApacheKafka, **options: str) -> Any:
    reader = kspark.read.format("ticdc-kafka").option("claim-check-storage-uri", t.claim_dir.as_uri())
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(t.uri(broker))


def test_batch_read_gives_every_row_once_with_its_offset(kspark: Any, apache_kafka: ApacheKafka, topic: Topic) -> None:
    df = read(kspark, topic, apache_kafka)
    assert df.columns == ["database", "table", "table_version", "partition", "commit_ts", "op", "before", "after",
                          "file", "row_number"]  # fmt: skip
    assert df.rdd.getNumPartitions() == PARTITIONS
    got = collect(df)
    assert got == expected(topic.name, topic.protocol, topic.sent)
    assert len(got) == 15  # 17 row messages, 2 of them re-sent below a watermark
    assert any(r[7] and r[7]["v"] == "x" * 3000 for r in got)  # the claim-check row


def test_batch_up_to_watermark_and_from_offsets_after_the_bootstrap(kspark: Any, apache_kafka: ApacheKafka,
                                                                    topic: Topic) -> None:  # fmt: skip
    up_to = collect(read(kspark, topic, apache_kafka, **{"up-to-watermark": "true"}))
    assert up_to == expected(topic.name, topic.protocol, topic.sent, upto=170)
    assert max(r[4] for r in up_to) == 152
    start = topic.sent.part1_end  # after every BOOTSTRAP and DDL of the tables part 2 writes (but the ALTER)
    later = collect(
        read(kspark, topic, apache_kafka, startingOffsets=orjson.dumps({str(p): o for p, o in start.items()}).decode())
    )
    assert later == expected(topic.name, topic.protocol, topic.sent, start=start)
    assert {r[4] for r in later} == {130, 150, 152, 180}


def test_the_same_rows_as_format_ticdc(kspark: Any, apache_kafka: ApacheKafka, topic: Topic, tmp_path: Path) -> None:
    """The storage sink's canal-json tree of the same rows reads back to the same columns (but ``file``,
    ``row_number``, and ``table_version`` for Kafka canal-json, which carries none)."""
    tree = Tree(tmp_path, protocol="canal-json", date="")
    enc = txn_encoder("canal-json", {"enable-tidb-extension": True})
    rows = [r for rs in topic.sent.rows.values() for r in rs if r is not None]
    for n, t in enumerate((A, A2, B), 1):
        tree.schema(t, t.version)
        mine = sorted((r for r in rows if r.table is t), key=lambda r: r.commit_ts)
        tree.put(tree.data_path(DB, t.table, t.version, n), enc.encode_txn(mine))
    tree.metadata(200)
    storage = collect(kspark.read.format("ticdc").option("protocol", "canal-json").load(tmp_path.as_uri()))
    kafka = collect(read(kspark, topic, apache_kafka))
    head = 3 if topic.protocol == "simple" else 2  # database, table (, table_version)
    assert len(kafka) == len(storage) == 15
    assert sorted((r[:head] + r[4:8] for r in kafka), key=repr) == sorted(
        (r[:head] + r[4:8] for r in storage), key=repr
    )


def test_streaming_reads_in_two_micro_batches_with_offsets_per_partition(kspark: Any, apache_kafka: ApacheKafka,
                                                                         tmp_path: Path) -> None:  # fmt: skip
    """The second micro-batch starts after every BOOTSTRAP: its readers find the schema before their range."""
    protocol, options = CODECS["simple-json"]
    (tmp_path / "cc").mkdir()
    part1, part2, sent = build(protocol, options, tmp_path / "cc")
    t = Topic("ks-stream", protocol, options, tmp_path / "cc", sent, part2)
    create_topic(apache_kafka, t.name)
    produce(apache_kafka, t.name, part1)
    ckpt, out = tmp_path / "ckpt", tmp_path / "out"

    def run() -> list[tuple[Any, ...]]:
        q = (kspark.readStream.format("ticdc-kafka").option("claim-check-storage-uri", t.claim_dir.as_uri())
             .load(t.uri(apache_kafka)).writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())  # fmt: skip
        q.awaitTermination()
        assert q.exception() is None
        return collect(kspark.read.parquet(str(out)))

    assert run() == expected(t.name, protocol, sent, upto=125)
    produce(apache_kafka, t.name, part2)
    assert run() == expected(t.name, protocol, sent)
    offsets = [orjson.loads((ckpt / "offsets" / str(n)).read_text().splitlines()[-1]) for n in (0, 1)]
    assert offsets[0] == {str(p): o for p, o in sent.part1_end.items()}
    assert offsets[1] == {str(p): len(rs) for p, rs in sent.rows.items()}


def test_a_foreign_message_fails_naming_topic_partition_and_offset(kspark: Any, apache_kafka: ApacheKafka,
                                                                    tmp_path: Path) -> None:  # fmt: skip
    protocol, options = CODECS["canal-json"]
    part1, _, sent = build(protocol, options, tmp_path)
    t = Topic("ks-foreign", protocol, options, tmp_path, sent, [])
    create_topic(apache_kafka, t.name)
    produce(apache_kafka, t.name, [*part1, (1, Message(None, b"hello from another producer"))])
    with pytest.raises(Exception) as e:
        read(kspark, t, apache_kafka).collect()
    assert f"topic ks-foreign partition 1 offset {sent.part1_end[1]}: " in str(e.value)
    assert "invalid JSON" in str(e.value)


def test_real_canal_json_without_the_tidb_extension_reads_every_row(kspark: Any, apache_kafka: ApacheKafka) -> None:
    """Real TiCDC canal-json without ``_tidb`` (issue 26, item 2) on 3 partitions, as a changefeed spreads it (DDLs
    on partition 0, each table on one partition): a plain ``protocol=canal-json`` path reads every row once with
    commit_ts 0 (none was dropped as a re-send); with ``enable-tidb-extension=true`` the read fails at the first
    message, naming topic, partition and offset."""
    from tests.fixtures.ticdc_canal_json import WITHOUT_EXTENSION

    docs = [orjson.loads(m.value) for m in WITHOUT_EXTENSION]
    tables = sorted({(d["database"], d["table"]) for d in docs})
    spread = [(0 if d["isDdl"] else tables.index((d["database"], d["table"])) % PARTITIONS, Message(None, m.value))
              for d, m in zip(docs, WITHOUT_EXTENSION)]  # fmt: skip
    create_topic(apache_kafka, "ks-real")
    produce(apache_kafka, "ks-real", spread)
    plain = collect(kspark.read.format("ticdc-kafka").load(f"kafka://{apache_kafka.bootstrap}/ks-real?protocol=canal-json"))
    assert len(plain) == 12 and {r[4] for r in plain} == {0}
    assert sorted(r[7]["id"] for r in plain if r[1] == "student") == ["21", "22", "23"]
    with pytest.raises(Exception) as e:
        kspark.read.format("ticdc-kafka").option("enable-tidb-extension", "true").load(
            f"kafka://{apache_kafka.bootstrap}/ks-real?protocol=canal-json").collect()  # fmt: skip
    assert "topic ks-real partition " in str(e.value) and " offset 0: " in str(e.value)
    assert "carries no commit-ts" in str(e.value)
