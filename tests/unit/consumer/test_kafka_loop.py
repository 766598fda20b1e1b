"""``cdc kafka-consumer``'s loop with a fake Kafka client and a fake engine (issue 26, item 2): no message is passed
over in silence while the group's offsets move past it. Every message below a committed offset had its rows and
DDLs applied, or was left out as a re-send and said so in a warning; a message the consumer cannot take stops it,
naming topic, partition and offset, and no commit passes it. Real TiCDC canal-json messages without ``_tidb`` are
applied when the URI does not ask for the extension, in each partition's order, and refused when it does."""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from sparkcdc.codec.base import Message, message_encoder
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.decoder import CanalJsonMessageDecoder
from sparkcdc.consumer.kafka_client import ClientErrors, Connection
from sparkcdc.consumer.kafka_consumer import KafkaConsumerConfig, KafkaSource
from sparkcdc.consumer.runner import Consumer
from sparkcdc.errors import CorruptDataError
from sparkcdc.model import ColumnInfo, DDLEvent, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.steps import DdlStep, EngineStats, RowsStep
from sparkcdc.model.table import with_handle_keys
from sparkcdc.mysql import downstream_guard
from tests.fixtures.ticdc_canal_json import WITHOUT_EXTENSION

TOPIC = "t"
_IDX = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
T = TableInfo("db", "k", 1, with_handle_keys((ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "int")), _IDX),
              _IDX, 1)  # fmt: skip
TS = 450_000_000_000_000_000


class FakeMessage:
    def __init__(self, partition: int, offset: int, value: bytes) -> None:
        self._partition, self._offset, self._value = partition, offset, value

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> None:
        return None

    def value(self) -> bytes:
        return self._value


class FakeClient:
    """Serves each partition in order, partitions interleaved at random, 1 to 4 messages a poll; records commits
    and calls ``on_commit`` with each. Sets ``stop`` after three empty polls."""

    def __init__(self, topic: dict[int, list[bytes]], seed: int, stop: threading.Event,
                 on_commit: Callable[[dict[int, int]], None]) -> None:  # fmt: skip
        self.queues = {p: [FakeMessage(p, o, v) for o, v in enumerate(values)] for p, values in topic.items()}
        self.commits: list[dict[int, int]] = []
        self._on_commit = on_commit
        self._rnd = random.Random(seed)
        self._stop = stop
        self._idle = 0

    def consume(self, num_messages: int, timeout: float) -> list[FakeMessage]:
        batch = []
        for _ in range(self._rnd.randint(1, 4)):
            live = [p for p, q in self.queues.items() if q]
            if not live:
                break
            batch.append(self.queues[self._rnd.choice(live)].pop(0))
        self._idle = 0 if batch else self._idle + 1
        if self._idle > 2:
            self._stop.set()
        return batch

    def commit(self, offsets: Sequence[Any], asynchronous: bool) -> None:
        assert not asynchronous
        self.commits.append({tp.partition: tp.offset for tp in offsets})
        self._on_commit(self.commits[-1])

    def assign(self, partitions: Sequence[Any]) -> None:
        pass

    def close(self) -> None:
        pass


class FakeApplier:
    """A downstream with no checkpoints yet, for the start check."""

    changefeed = "g"
    checkpoint_schema = "sparkcdc_consumer"

    def stream_times(self) -> list[tuple[str, str, int, float]]:
        return []

    def table_times(self, schemas: Sequence[str]) -> dict[tuple[str, str], float | None]:
        return {}

    def is_empty(self, schema: str, table: str) -> bool:
        return True


class FakeEngine:
    """Records what reaches the downstream: row values per table in apply order, and DDL queries."""

    def __init__(self) -> None:
        self.stats = EngineStats()
        self.main_applier = FakeApplier()
        self.rows: list[RowChange] = []
        self.ddls: list[str] = []

    def check_start(self) -> None:
        downstream_guard.check(self.main_applier)  # type: ignore[arg-type]

    def apply(self, step: RowsStep | DdlStep) -> None:
        if isinstance(step, DdlStep):
            self.ddls.append(step.query)
            return
        for key in sorted(step.streams):
            for batch in step.streams[key]:
                self.rows.extend(batch.rows)

    def close(self) -> None:
        pass


def run(monkeypatch: pytest.MonkeyPatch, query: str, topic: dict[int, list[bytes]],
        seed: int = 0) -> tuple[KafkaSource, FakeClient, FakeEngine]:  # fmt: skip
    """Run the consumer loop over ``topic`` until it is drained (or raises). At every commit, the rows and DDLs of
    the messages below the committed offsets must all have reached the engine or be counted as left-out re-sends
    (the consumer says the count before it commits)."""
    config = KafkaConsumerConfig.from_uri(f"kafka://127.0.0.1:9/{TOPIC}?{query}", {}, "g")
    consumer = KafkaSource(config)
    stop = threading.Event()
    engine = FakeEngine()
    lenient = CanalJsonMessageDecoder(CanalJsonConfig())
    changes = {p: [len([e for e in lenient.decode(Message(None, v)) if isinstance(e, RowChange | DDLEvent)])
                   for v in values] for p, values in topic.items()}  # fmt: skip

    def on_commit(offsets: dict[int, int]) -> None:
        below = sum(sum(changes[p][:o]) for p, o in offsets.items())
        assert below <= len(engine.rows) + len(engine.ddls) + consumer._replayed, (offsets, engine.rows)

    client = FakeClient(topic, seed, stop, on_commit)
    connection = Connection(client, sorted(topic), {}, ClientErrors("127.0.0.1:9"))
    monkeypatch.setattr(KafkaSource, "_connect", lambda self: connection)
    Consumer(consumer, engine).run(stop)  # type: ignore[arg-type]
    return consumer, client, engine


def real_topic(partitions: int) -> dict[int, list[bytes]]:
    """The real messages as a TiCDC changefeed would spread them: DDLs on partition 0, each table's rows on one
    partition (the ``table`` dispatcher), in the order the sources show them."""
    topic: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    tables = sorted({(d["database"], d["table"]) for d in map(json.loads, (m.value for m in WITHOUT_EXTENSION))})
    for m in WITHOUT_EXTENSION:
        doc = json.loads(m.value)
        p = 0 if doc["isDdl"] else tables.index((doc["database"], doc["table"])) % partitions
        topic[p].append(m.value)
    return topic


def identity(row: RowChange) -> tuple[Any, ...]:
    return (row.table.schema, row.table.table, row.op.value, row.before, row.after)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("partitions", [1, 3])
def test_canal_json_without_the_extension_is_applied_in_the_order_read(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, partitions: int, seed: int
) -> None:
    caplog.set_level(logging.WARNING)
    topic = real_topic(partitions)
    _, client, engine = run(monkeypatch, "protocol=canal-json", topic, seed)
    assert len(engine.rows) == 12 and len(engine.ddls) == 5  # every DML row and every DDL of the 17 messages
    assert client.commits[-1] == {p: len(values) for p, values in topic.items()}
    decoder = KafkaConsumerConfig.from_uri(f"kafka://h:9/{TOPIC}?protocol=canal-json", {}, "g").decoder()
    for values in topic.values():  # each table's rows in their partition's order (tables are applied in parallel)
        rows = [r for v in values for r in decoder.decode(Message(None, v)) if isinstance(r, RowChange)]
        for table in {(r.table.schema, r.table.table) for r in rows}:
            expected = [identity(r) for r in rows if (r.table.schema, r.table.table) == table]
            assert [identity(r) for r in engine.rows if identity(r) in expected] == expected
    if partitions == 1:  # one partition: exactly the changefeed's order, DDLs in their place
        assert engine.ddls[0] == "CREATE TABLE `test`.`simple1` (`id` INT PRIMARY KEY,`val` INT)"
    assert "rows are applied in the order they are read" in caplog.text


@pytest.mark.parametrize("seed", range(4))
def test_read_with_the_extension_they_stop_it_at_the_first_and_no_commit_passes_it(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    topic = real_topic(3)
    with pytest.raises(CorruptDataError) as e:
        run(monkeypatch, "protocol=canal-json&enable-tidb-extension=true", topic, seed)
    text = e.value.message
    assert text.startswith(f"topic {TOPIC} partition ") and " offset 0: " in text and "\n" not in text
    assert "carries no commit-ts" in text and "nothing after it was applied" in text


@pytest.mark.parametrize("seed", range(6))
def test_with_the_extension_re_sends_are_left_out_and_said_and_everything_else_applied(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, seed: int
) -> None:
    """Two partitions of our encoder's canal-json with the extension; partition 1 re-sends a row below its
    watermark twice (a sink restarted from an older checkpoint), and partition 0 a watermark; the commits end at
    the end of both partitions."""
    caplog.set_level(logging.WARNING)
    enc = message_encoder("canal-json", {"enable-tidb-extension": True})

    def insert(ts: int, k: int) -> bytes:
        return enc.encode_row(RowChange(TS + ts, T, RowOp.INSERT, None, (k, ts))).value

    def watermark(ts: int) -> bytes:
        return enc.encode_watermark(TS + ts).value

    topic = {
        0: [insert(1, 1), insert(3, 3), watermark(4), watermark(4), insert(6, 6), watermark(9)],
        1: [insert(2, 2), watermark(4), insert(2, 2), insert(2, 2), insert(5, 5), watermark(9)],
    }
    consumer, client, engine = run(monkeypatch, "protocol=canal-json&enable-tidb-extension=true", topic, seed)
    applied = [r.after for r in engine.rows]
    assert sorted(set(applied)) == [(1, 1), (2, 2), (3, 3), (5, 5), (6, 6)] and applied == sorted(applied)
    assert client.commits[-1] == {0: 6, 1: 6}
    # a re-send read before everything up to it was released is applied again (at least once; the engine's
    # checkpoint skips it downstream); one read after is left out, and counted in a warning
    assert len(applied) + consumer._replayed == 7
    said = [r.getMessage() for r in caplog.records if "re-sent by the changefeed" in r.getMessage()]
    assert sum(int(s.split()[2]) for s in said) == consumer._replayed
