"""What ``cdc kafka-consumer``'s Kafka client says while it runs (issue 26, item 5): the client's errors summed up in
one warning at most every 30 s while they last (the start, given up after dial-timeout, is tested against a closed
port in ``tests/integration/consumer/test_kafka_consumer.py``)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sparkcdc.consumer import kafka_client
from sparkcdc.consumer.kafka_client import ClientErrors


class Err:
    def __init__(self, text: str) -> None:
        self.text = text

    def str(self) -> str:
        return self.text


def test_errors_are_said_at_once_then_at_most_every_30_seconds(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    errors = ClientErrors("b1:9092,b2:9092", clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger=kafka_client.log.name)
    errors.report()
    assert not caplog.records  # nothing to say
    for n in range(57):  # a broker that refuses: one error per reconnect attempt
        errors(Err(f"b1:9092/bootstrap: Connect failed: Connection refused ({n})"))
    errors.report()
    (first,) = caplog.records
    assert first.getMessage() == ("Kafka cluster at b1:9092,b2:9092: b1:9092/bootstrap: Connect failed: Connection "
                                  "refused (56) (57 client error(s) since the last report); the consumer keeps "
                                  "reconnecting")  # fmt: skip
    for _ in range(3):
        now[0] += 10
        errors(Err("again"))
        errors.report()
    assert len(caplog.records) == 2 and "again (3 client error(s)" in caplog.records[1].getMessage()
    now[0] += 100
    errors.report()
    assert len(caplog.records) == 2  # quiet again: nothing new to say


class _Coordinator:
    """A client whose group coordinator answers after ``not_ready`` lookups (or never, with ``code``)."""

    def __init__(self, not_ready: int, code: int) -> None:
        self.not_ready, self.code, self.calls = not_ready, code, 0

    def committed(self, partitions: list[Any], timeout: float) -> list[Any]:
        from confluent_kafka import KafkaError as Code
        from confluent_kafka import KafkaException

        self.calls += 1
        if self.calls <= self.not_ready:
            raise KafkaException(Code(self.code))
        return partitions


def test_the_offset_lookup_waits_for_a_group_coordinator_that_is_being_made(monkeypatch: pytest.MonkeyPatch) -> None:
    from confluent_kafka import KafkaError as Code

    monkeypatch.setattr(kafka_client.time, "sleep", lambda _: None)
    client = _Coordinator(2, Code.COORDINATOR_NOT_AVAILABLE)
    assert kafka_client._committed(client, ["p0"], 1.0) == ["p0"]
    assert client.calls == 3


def test_the_offset_lookup_fails_at_once_on_other_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from confluent_kafka import KafkaError as Code
    from confluent_kafka import KafkaException

    monkeypatch.setattr(kafka_client.time, "sleep", lambda _: None)
    client = _Coordinator(1, Code.GROUP_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        kafka_client._committed(client, ["p0"], 1.0)
    assert client.calls == 1
