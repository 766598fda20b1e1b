"""What ``cdc kafka-consumer``'s Kafka client says while it runs (issue 26, item 5): the client's errors summed up in
one warning at most every 30 s while they last (the start, given up after dial-timeout, is tested against a closed
port in ``tests/integration/consumer/test_kafka_consumer.py``)."""

from __future__ import annotations

import logging

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
