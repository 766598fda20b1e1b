"""Kafka client helpers for tests, benchmarks and demos: is a broker up (``kafka_ping``), and every message of a
topic (``read_topic``). The private broker itself is Apache Kafka (``sparkcdc.devtools.apache_kafka``).
"""

from __future__ import annotations

import logging
import socket
import struct
import time

from sparkcdc.codec.base import Message
from sparkcdc.errors import SparkcdcError

log = logging.getLogger(__name__)


def kafka_ping(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when ``host:port`` answers a Kafka ApiVersions (v0) request without an error code."""
    correlation = 0x5C0C
    client = b"sparkcdc-devtools"
    body = struct.pack(">hhih", 18, 0, correlation, len(client)) + client
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack(">i", len(body)) + body)
            head = _recv_exact(s, 10)
    except OSError:
        return False
    if head is None:
        return False
    _size, got, error = struct.unpack(">iih", head)
    return bool(got == correlation and error == 0)


def _recv_exact(s: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


Partitions = dict[int, list[Message]]


def read_topic(bootstrap: str, topic: str, timeout: float = 60.0, idle: float = 1.0) -> Partitions:
    """Every message of every partition of ``topic`` in offset order (empty partitions included), read with a
    plain consumer (assign, no group). For tests, benchmarks and the quickstart.

    The end is where every partition reported EOF once and then a poll of ``idle`` seconds is empty, not the high
    watermark: that holds on brokers whose watermark lags their last batch (tansu's did).
    Raises SparkcdcError when the topic does not exist, a fetch fails, offsets have a gap or the end is not
    reached in ``timeout``.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    # librdkafka wants a group.id even without subscribe; assign() never joins the group.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "sparkcdc-read-topic",
                         "enable.auto.commit": False, "enable.partition.eof": True},
                        logger=log)  # fmt: skip
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        if meta.error is not None:
            raise SparkcdcError(f"topic {topic}: {meta.error}")
        out: Partitions = {p: [] for p in sorted(meta.partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in out])
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout
        while True:
            batch = consumer.consume(1000, idle)
            if not batch and at_end == set(out):
                return out
            if time.monotonic() > deadline:
                got = {p: len(m) for p, m in out.items()}
                raise SparkcdcError(f"topic {topic}: end not reached in {timeout}s (messages so far {got})")
            for m in batch:
                err = m.error()
                if err is not None and err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition() or 0)
                elif err is not None:
                    raise SparkcdcError(f"topic {topic}: fetch failed: {err}")
                else:
                    part = out[m.partition() or 0]
                    if m.offset() != len(part):
                        raise SparkcdcError(f"topic {topic} partition {m.partition()}: offset gap at {len(part)}")
                    part.append(Message(m.key(), m.value() or b""))
    finally:
        consumer.close()

