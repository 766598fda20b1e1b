"""A consumer that holds rows waiting for their table's schema says so every 30 s, naming the schema, instead of
waiting in silence (a changefeed whose BOOTSTRAPs never reach the topic would otherwise look hung)."""

from __future__ import annotations

import logging

import pytest

from sparkcdc.codec.base import Message
from sparkcdc.consumer import kafka_consumer
from sparkcdc.consumer.kafka_consumer import KafkaConsumerConfig, KafkaSource
from sparkcdc.model import RowChange, RowOp

from ..codec.simple_support import codec, user_table

V1 = 447984074911121426


def test_held_rows_are_reported_every_30_seconds_naming_their_schema(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    config = KafkaConsumerConfig.from_uri("kafka://127.0.0.1:9/t?protocol=simple", {}, "g")
    consumer = KafkaSource(config)
    enc, dec = codec("json")
    t1 = user_table(V1)
    for i in (1, 2):
        msg = enc.encode_row(RowChange(V1 + i, t1, RowOp.INSERT, None, (i, f"u{i}", 20, 1.5), 148))
        assert list(dec.decode(Message(msg.key, msg.value))) == []
    consumer._decoders = {0: dec, 1: config.decoder()}
    now = [1000.0]
    monkeypatch.setattr(kafka_consumer.time, "monotonic", lambda: now[0])
    caplog.set_level(logging.WARNING, logger=kafka_consumer.log.name)

    since = consumer._report_held(None)
    assert since == 1000.0 and not caplog.records  # the wait begins: nothing said yet
    now[0] = 1029.0
    assert consumer._report_held(since) == since and not caplog.records
    now[0] = 1031.0
    since = consumer._report_held(since)
    assert since == 1031.0
    (record,) = caplog.records
    assert f"holding 2 rows that wait for the schema of simple.user version {V1}" in record.getMessage()
    assert consumer._report_held(since) == since and len(caplog.records) == 1  # next report 30 s later

    bootstrap = enc.encode_bootstrap(t1)
    assert len(list(dec.decode(Message(bootstrap.key, bootstrap.value)))) == 3  # the bootstrap and both rows
    assert consumer._report_held(since) is None  # nothing held: the next wait starts afresh
