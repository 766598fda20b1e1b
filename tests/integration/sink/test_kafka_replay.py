"""The Kafka replay harness on a real broker: messages made by our encoders go to a 3-partition topic the way the
Kafka sink sends them, are read back, replayed and checked; every checker is shown to fail on a broken topic."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from sparkcdc.codec.base import Message, message_encoder
from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.kafka import Partitions, read_topic
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from tests.integration.sink.kafka_replay import (
    Header,
    bootstrap_violations,
    commit_ts_order_violations,
    ddl_on_every_partition,
    headers,
    replay_partitions,
    watermarks_on_every_partition,
)

pytestmark = pytest.mark.integration

DB = "db1"
PARTITIONS = 3
ALL = -1  # a message for every partition
CODECS = [("canal-json", {"enable-tidb-extension": True}), ("simple", {}), ("simple", {"encoding-format": "avro"})]


def table(name: str, version: int, *extra: ColumnInfo) -> TableInfo:
    columns = (ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "varchar", length=40),
               ColumnInfo("n", "bigint"), ColumnInfo("d", "decimal", length=12, decimal=3), *extra)  # fmt: skip
    indexes = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
    return TableInfo(DB, name, version % 1000, with_handle_keys(columns, indexes), indexes, version)


def image(i: int, v: str | None = None, n: int | None = None, *extra: int) -> tuple[Any, ...]:
    return (i, v or f"v{i}", i * 10 if n is None else n, Decimal(f"{i}.250"), *extra)


W0 = table("w0", 100)
W0_C1 = table("w0", 140, ColumnInfo("c1", "int", nullable=False, default="1"))
W1 = table("w1", 101)
W1_TRUNCATED = table("w1", 135)
W2 = table("w2", 155)


def stream(protocol: str, options: dict[str, Any]) -> tuple[list[tuple[int, Message]], int]:
    """(partition or ALL, message) as the sink sends them: rows by ``id % 3``, DDLs to every partition (canal-json:
    partition 0), watermarks everywhere, simple BOOTSTRAPs everywhere before a table's rows; and the position
    after watermark 125, where a sink restarted at that checkpoint starts sending again."""
    enc = message_encoder(protocol, options)
    simple = protocol == "simple"
    out: list[tuple[int, Message]] = []

    def rows(ts: int, t: TableInfo, op: RowOp, *images: tuple[Any, ...]) -> None:
        for img in images:
            before, after = (img, None) if op is RowOp.DELETE else (None, img)
            out.append((img[0] % PARTITIONS, enc.encode_row(RowChange(ts, t, op, before, after))))

    def update(ts: int, t: TableInfo, before: tuple[Any, ...], after: tuple[Any, ...]) -> None:
        out.append((after[0] % PARTITIONS, enc.encode_row(RowChange(ts, t, RowOp.UPDATE, before, after))))

    def ddl(ts: int, action: DDLAction, query: str, t: TableInfo, pre: TableInfo | None = None) -> None:
        event = DDLEvent(ts, action, query, DB, t.table, t, pre)
        out.append((ALL if simple else 0, enc.encode_ddl(event)))

    def bootstrap(t: TableInfo) -> None:
        if simple:
            out.append((ALL, enc.encode_bootstrap(t)))

    create = "CREATE TABLE {} (id INT PRIMARY KEY, v VARCHAR(40), n BIGINT, d DECIMAL(12,3))"
    ddl(100, DDLAction.CREATE_TABLE, create.format("w0"), W0)
    ddl(101, DDLAction.CREATE_TABLE, create.format("w1"), W1)
    bootstrap(W0)
    bootstrap(W1)
    rows(110, W0, RowOp.INSERT, *(image(i) for i in range(1, 7)))
    rows(111, W1, RowOp.INSERT, *(image(i) for i in range(1, 4)))
    update(120, W0, image(2), image(2, "u2", 21))
    out.append((ALL, enc.encode_watermark(125)))
    restart = len(out)
    rows(130, W0, RowOp.DELETE, image(3), image(4))  # the DELETE half of a key change 4 -> 7
    rows(130, W0, RowOp.INSERT, image(7, "v4", 40))
    ddl(135, DDLAction.TRUNCATE_TABLE, "TRUNCATE TABLE w1", W1_TRUNCATED, W1)
    rows(137, W1_TRUNCATED, RowOp.INSERT, image(9))
    ddl(140, DDLAction.ADD_COLUMN, "ALTER TABLE w0 ADD COLUMN c1 INT NOT NULL DEFAULT 1", W0_C1, W0)
    update(150, W0_C1, image(1, None, None, 1), image(1, "u1", None, 5))
    rows(150, W0_C1, RowOp.INSERT, image(8, None, None, 8))
    ddl(155, DDLAction.RENAME_TABLE, "RENAME TABLE w1 TO w2", W2, W1_TRUNCATED)
    bootstrap(W2)
    rows(160, W2, RowOp.INSERT, image(10))
    out.append((ALL, enc.encode_watermark(170)))
    return out, restart


def expected_row(i: int, v: str | None = None, n: int | None = None, c1: int | None = None) -> dict[str, str | None]:
    row: dict[str, str | None] = {
        "id": str(i),
        "v": v or f"v{i}",
        "n": str(i * 10 if n is None else n),
        "d": f"{i}.250",
    }
    return row if c1 is None else row | {"c1": str(c1)}


EXPECTED = {
    f"{DB}.w0": {"1": expected_row(1, "u1", c1=5), "2": expected_row(2, "u2", 21, c1=1), "5": expected_row(5, c1=1),
                 "6": expected_row(6, c1=1), "7": expected_row(7, "v4", 40, c1=1), "8": expected_row(8, c1=8)},
    f"{DB}.w2": {"9": expected_row(9), "10": expected_row(10)},
}  # fmt: skip


@dataclass
class Topics:
    protocol: str
    options: dict[str, Any]
    sent: list[tuple[int, Message]]
    parts: Partitions  # the sink's topic, read back
    dup_parts: Partitions  # the same, then everything after watermark 125 again (a restart at that checkpoint)

    def heads(self, parts: Partitions | None = None) -> dict[int, list[Header]]:
        return headers(self.parts if parts is None else parts, self.protocol, self.options)


def produce(broker: ApacheKafka, topic: str, messages: list[tuple[int, Message]]) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "log.connection.close": False})
    for n, (target, message) in enumerate(messages, 1):
        for p in range(PARTITIONS) if target == ALL else [target]:
            producer.produce(topic, message.value, message.key, partition=p)
        if n % 4 == 0:
            assert producer.flush(30) == 0  # several produce batches, as the sink's
    assert producer.flush(30) == 0


@pytest.fixture(scope="module", params=CODECS, ids=["canal-json", "simple-json", "simple-avro"])
def topics(apache_kafka: ApacheKafka, request: pytest.FixtureRequest) -> Iterator[Topics]:
    protocol, options = request.param
    sent, restart = stream(protocol, options)
    name = f"replay-{protocol}-{options.get('encoding-format', 'json')}"
    produce(apache_kafka, name, sent)
    produce(apache_kafka, name + "-dup", sent + sent[restart:])
    yield Topics(protocol, options, sent, read_topic(apache_kafka.bootstrap, name),
                 read_topic(apache_kafka.bootstrap, name + "-dup"))  # fmt: skip


def test_read_topic_gets_every_message_past_the_high_watermark(topics: Topics) -> None:
    sent = {p: [m.value for t, m in topics.sent if t in (p, ALL)] for p in range(PARTITIONS)}
    assert {p: [m.value for m in ms] for p, ms in topics.parts.items()} == sent
    assert all(m.key is None for ms in topics.parts.values() for m in ms)


def test_replay_rebuilds_the_tables(topics: Topics) -> None:
    summary, rows = replay_partitions({"t": topics.parts}, topics.protocol, topics.options)
    assert rows == EXPECTED
    assert [d.commit_ts for d in summary.ddls] == [100, 101, 135, 140, 155]
    assert summary.resolved_ts == 170 and summary.pending == 0
    assert summary.bootstraps == (0 if topics.protocol == "canal-json" else 3 * PARTITIONS)
    _, early = replay_partitions({"t": topics.parts}, topics.protocol, topics.options, upto=125)
    assert early == {
        f"{DB}.w0": {str(i): expected_row(i, "u2", 21) if i == 2 else expected_row(i) for i in range(1, 7)},
        f"{DB}.w1": {str(i): expected_row(i) for i in range(1, 4)},
    }


def test_replayed_duplicates_give_the_same_state(topics: Topics) -> None:
    summary, rows = replay_partitions({"t": topics.dup_parts}, topics.protocol, topics.options)
    assert rows == EXPECTED
    assert [d.commit_ts for d in summary.ddls] == [100, 101, 135, 140, 155]
    heads = topics.heads(topics.dup_parts)
    assert commit_ts_order_violations(heads) != []  # the re-sent run steps back...
    assert commit_ts_order_violations(heads, allow_replays=True) == []  # ...but only as a replay
    assert ddl_on_every_partition(heads, topics.protocol) == watermarks_on_every_partition(heads) == []


def edit(parts: Partitions, p: int, change: Callable[[list[Message]], list[Message]]) -> Partitions:
    return {q: change(list(ms)) if q == p else list(ms) for q, ms in parts.items()}


def first(heads: dict[int, list[Header]], p: int, kind: str, ts: int | None = None) -> int:
    return next(h.offset for h in heads[p] if h.kind == kind and (ts is None or h.ts == ts))


def test_checkers_pass_on_the_sink_layout_and_fail_when_it_breaks(topics: Topics) -> None:
    heads = topics.heads()
    canal = topics.protocol == "canal-json"
    assert ddl_on_every_partition(heads, topics.protocol) == []
    assert watermarks_on_every_partition(heads) == []
    assert commit_ts_order_violations(heads) == []

    # canal-json: a DDL beyond partition 0; simple: a DDL missing from partition 2 (where it comes first).
    ddl = topics.parts[0][first(heads, 0, "ddl")]
    broken = edit(topics.parts, 2, (lambda ms: [ddl, *ms]) if canal else (lambda ms: ms[1:]))
    [violation] = ddl_on_every_partition(topics.heads(broken), topics.protocol)
    assert violation.startswith(f"partition 2: {'DDL' if canal else 'no DDL'} at commit-ts 100 (CREATE TABLE w0")

    wm = first(heads, 1, "watermark", 125)
    lost_watermark = edit(topics.parts, 1, lambda ms: ms[:wm] + ms[wm + 1 :])
    assert watermarks_on_every_partition(topics.heads(lost_watermark)) == [
        "partition 1: 1 watermark(s) sent elsewhere are missing, first 125"
    ]
    no_watermark = edit(topics.parts, 2, lambda ms: [m for i, m in enumerate(ms) if heads[2][i].kind != "watermark"])
    assert watermarks_on_every_partition(topics.heads(no_watermark)) == ["partition 2: no watermark"]

    rows = [h.offset for h in heads[1] if h.kind == "row"]  # w2's row at 160 last

    def early(ms: list[Message]) -> list[Message]:
        return [*ms[: rows[0]], ms[rows[-1]], *ms[rows[0] : rows[-1]], *ms[rows[-1] + 1 :]]

    reordered = topics.heads(edit(topics.parts, 1, early))
    assert commit_ts_order_violations(reordered) == [
        f"partition 1 offset {rows[0] + 1}: commit-ts 110 after 160 (offset {rows[0]})"
    ]
    assert commit_ts_order_violations(reordered, allow_replays=True) == commit_ts_order_violations(reordered)


def test_bootstrap_checker_fails_without_a_bootstrap_before_the_rows(topics: Topics) -> None:
    heads = topics.heads()
    if topics.protocol != "simple":  # canal-json has no BOOTSTRAP message at all
        assert [h for hs in heads.values() for h in hs if h.kind == "bootstrap"] == []
        return
    assert bootstrap_violations(heads) == []
    boot = first(heads, 2, "bootstrap")  # w0's
    row = first(heads, 2, "row")
    lost = edit(topics.parts, 2, lambda ms: ms[:boot] + ms[boot + 1 :])
    assert bootstrap_violations(topics.heads(lost)) == [
        f"partition 2 offset {row - 1}: first row of {DB}.w0 (schema version 100) has no BOOTSTRAP of that "
        "version before it"
    ]
    late = edit(topics.parts, 2, lambda ms: ms[:boot] + ms[boot + 1 : row + 1] + [ms[boot]] + ms[row + 1 :])
    assert len(bootstrap_violations(topics.heads(late))) == 1
    # A row whose schema version nobody announced on the partition: the ALTER's DDL message is gone.
    alter = first(heads, 2, "ddl", 140)
    lost_alter = edit(topics.parts, 2, lambda ms: ms[:alter] + ms[alter + 1 :])
    assert bootstrap_violations(topics.heads(lost_alter)) == [
        f"partition 2 offset {first(heads, 2, 'row', 150) - 1}: row of {DB}.w0 uses schema version 140, "
        "announced by no earlier BOOTSTRAP or DDL on this partition"
    ]
