"""The Kafka task writer sends as its input comes (no gathering first), in input order per partition, and a failed
input drops the producer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sparkcdc.errors import CorruptDataError
from sparkcdc.sink.base import Routed, SinkContext
from sparkcdc.sink.kafka import writer
from sparkcdc.sink.kafka.config import KafkaSinkConfig
from sparkcdc.sink.kafka.encoder import pack
from tests.unit.sink.kafka.tables import table

URI = "kafka://127.0.0.1:1/cdc?protocol=canal-json&enable-tidb-extension=true"
T = table("db", "t", ["id", "v"], pk=("id",))
CTX = SinkContext("default/cf", 0, "/nonexistent")


class FakeProducer:
    """Records every send with how many payloads the input had yielded by then."""

    def __init__(self, pulled: list[int]) -> None:
        self.pulled = pulled
        self.sends: list[tuple[str, int, tuple[bytes, ...], int]] = []
        self.flushed = False

    def send(self, topic: str, partition: int, values: Any, keys: Any = None) -> None:
        self.sends.append((topic, partition, tuple(values), self.pulled[0]))

    def flush(self) -> None:
        self.flushed = True


class FakeTopics:
    def partitions(self, topic: str) -> int:
        return 3


class FakeClients:
    def __init__(self, producer: FakeProducer) -> None:
        self.producer = producer
        self.topics = FakeTopics()


def _fake(monkeypatch: pytest.MonkeyPatch, producer: FakeProducer) -> list[str]:
    discarded: list[str] = []

    @contextmanager
    def clients(config: Any, changefeed: str) -> Iterator[FakeClients]:
        yield FakeClients(producer)

    monkeypatch.setattr(writer, "clients", clients)
    monkeypatch.setattr(writer, "discard", lambda config, changefeed: discarded.append(changefeed))
    return discarded


def _payloads(n: int, pulled: list[int], fail_at: int | None = None) -> Iterator[Routed]:
    """``n`` payloads in commit order over partitions 0-2, counting in ``pulled[0]`` how many were taken."""
    for i in range(n):
        if i == fail_at:
            raise CorruptDataError("relay chunk 7: truncated rows event")
        pulled[0] += 1
        data = pack("cdc", i % 3, [f"m{i}a".encode(), f"m{i}b".encode()])
        yield Routed("db", "t", 1, 1, 100 + i, i + 1, 2, data, T)


def test_sends_before_its_input_is_exhausted_in_order_per_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    pulled = [0]
    producer = FakeProducer(pulled)
    _fake(monkeypatch, producer)
    config = KafkaSinkConfig.from_uri(URI, {})
    result = writer.KafkaTaskWriter(config, CTX).write(_payloads(30, pulled))
    # the first message left when one payload had been read, not after all 30
    assert producer.sends[0][3] == 1
    assert [s[3] for s in producer.sends] == list(range(1, 31))
    assert producer.flushed
    for partition in range(3):
        sent = [v for _t, p, values, _n in producer.sends if p == partition for v in values]
        expected = [f"m{i}{x}".encode() for i in range(partition, 30, 3) for x in "ab"]
        assert sent == expected
    assert (result.messages, result.rows, result.topics) == (60, 60, (("cdc", 3),))


def test_a_failed_input_drops_the_producer_and_acknowledges_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    pulled = [0]
    producer = FakeProducer(pulled)
    discarded = _fake(monkeypatch, producer)
    config = KafkaSinkConfig.from_uri(URI, {})
    with pytest.raises(CorruptDataError, match="truncated"):
        writer.KafkaTaskWriter(config, CTX).write(_payloads(10, pulled, fail_at=4))
    assert len(producer.sends) == 4  # sent as read, until the input failed
    assert not producer.flushed
    assert discarded == ["default/cf"]  # what it queued goes with it; the batch is replayed


def test_no_input_makes_no_producer(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []

    @contextmanager
    def clients(config: Any, changefeed: str) -> Iterator[FakeClients]:
        made.append(changefeed)
        yield FakeClients(FakeProducer([0]))

    monkeypatch.setattr(writer, "clients", clients)
    result = writer.KafkaTaskWriter(KafkaSinkConfig.from_uri(URI, {}), CTX).write(iter(()))
    assert result == writer.KafkaResult() and made == []
