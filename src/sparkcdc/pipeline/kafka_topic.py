"""Reading a Kafka topic's partitions by offset with confluent-kafka (assign, never a consumer group).

The end of a partition: some Kafka-protocol brokers (tansu 0.6) answer ListOffsets(latest) with the base offset of
the partition's *last record batch* + 1, not the offset after its last record (``ENVIRONMENT.md`` §7), so the
high watermark cannot be used as the end. :func:`partition_bounds` reads instead: it starts one message before
the reported high watermark (the base offset of the last batch, so at most one batch is read; on a correct
broker, the last message) and takes the offset of the partition-EOF event, which librdkafka raises when a fetch
at the consumer's position returns nothing. ``fetch.wait.max.ms`` is 10 ms so that empty fetch answers at once.
On a correct broker this costs one short fetch per partition.

Everything here raises KafkaError (retryable) for the cluster and ConfigError for a topic that does not exist.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from sparkcdc.errors import ConfigError, KafkaError
from sparkcdc.pipeline.kafka_partition import Marker, SchemaKey

log = logging.getLogger(__name__)

GROUP_ID: Final = "sparkcdc-ticdc-kafka"  # librdkafka needs one; assign() never joins it, nothing is committed
_PARTITION_EOF: Final = -191  # confluent_kafka.KafkaError._PARTITION_EOF
_POLL: Final = 0.05
_FIRST_CHUNK: Final = 256
_WATERMARK_SCAN_LIMIT: Final = 1 << 16


def consumer_settings(connection: Mapping[str, Any]) -> dict[str, Any]:
    """confluent-kafka Consumer settings over the sink config's connection settings (brokers, security)."""
    return {
        **connection,
        "group.id": GROUP_ID,
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "fetch.wait.max.ms": 10,
        "auto.offset.reset": "error",  # an offset that is gone (retention) is an error, not a silent jump
        "log.connection.close": False,
    }


def open_consumer(settings: Mapping[str, Any]) -> Any:
    from confluent_kafka import Consumer

    return Consumer(dict(settings), logger=log)


def partitions_of(consumer: Any, topic: str) -> list[int]:
    """The topic's partition ids. Raises ConfigError when the topic does not exist, KafkaError when the cluster
    cannot be reached."""
    from confluent_kafka import KafkaException

    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
    except KafkaException as e:
        raise KafkaError(f"cannot read the metadata of topic {topic!r}: {e.args[0].str()}") from None
    if meta is None or meta.error is not None or not meta.partitions:
        raise ConfigError(f"Kafka topic {topic!r} does not exist")
    return sorted(meta.partitions)


def first_offset(consumer: Any, topic: str, partition: int) -> int:
    """The partition's first offset (the low watermark, which such brokers report correctly). Raises KafkaError."""
    from confluent_kafka import KafkaException, TopicPartition

    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)
    except KafkaException as e:
        raise KafkaError(f"cannot list the offsets of topic {topic} partition {partition}: {e.args[0].str()}") from None
    return int(low)


def partition_bounds(consumer: Any, topic: str, timeout: float = 30.0) -> dict[int, tuple[int, int]]:
    """``{partition: (first offset, offset after the last message)}`` of every partition of ``topic``, the end
    found by reading (see the module docstring). Raises ConfigError, KafkaError."""
    from confluent_kafka import KafkaException, TopicPartition

    parts = partitions_of(consumer, topic)
    marks: dict[int, tuple[int, int]] = {}
    try:
        for p in parts:
            marks[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
    except KafkaException as e:
        raise KafkaError(f"cannot list the offsets of topic {topic!r}: {e.args[0].str()}") from None
    consumer.assign([TopicPartition(topic, p, max(low, high - 1)) for p, (low, high) in marks.items()])
    ends: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(ends) < len(parts):
            if time.monotonic() > deadline:
                missing = sorted(set(parts) - set(ends))
                raise KafkaError(f"topic {topic}: the end of partition(s) {missing} not found in {timeout:.0f} s")
            for m in consumer.consume(1000, _POLL):
                err = m.error()
                if err is None:
                    continue
                if err.code() != _PARTITION_EOF:
                    raise KafkaError(f"topic {topic} partition {m.partition()}: {err.str()}", retryable=err.retriable())
                ends[m.partition()] = m.offset()
    finally:
        consumer.unassign()
    return {p: (marks[p][0], max(ends[p], marks[p][0])) for p in parts}


def read_range(
    consumer: Any, topic: str, partition: int, start: int, end: int, idle: float = 60.0
) -> Iterator[tuple[int, bytes | None, bytes]]:
    """``(offset, key, value)`` of the messages of ``[start, end)`` in offset order (a null value as ``b""``; only
    avro's rows have keys).
    Raises KafkaError when the broker fails or no message arrives for ``idle`` seconds (the range was planned
    from offsets that existed: the topic was deleted, or the broker is unreachable)."""
    from confluent_kafka import TopicPartition

    if end <= start:
        return
    consumer.assign([TopicPartition(topic, partition, start)])
    at = start
    last = time.monotonic()
    try:
        while at < end:
            batch = consumer.consume(min(1000, end - at), 0.5)
            if not batch and time.monotonic() - last > idle:
                raise KafkaError(
                    f"topic {topic} partition {partition}: no message at offset {at} for {idle:.0f} s (the range "
                    f"ends at {end}); was the topic deleted, or is the broker unreachable?"
                )
            for m in batch:
                err = m.error()
                if err is not None:
                    if err.code() == _PARTITION_EOF:
                        if m.offset() >= end:
                            return  # offsets up to ``end`` held no message (transaction markers, compaction)
                        continue  # the broker may still be appending what the plan saw; the idle bound decides
                    raise KafkaError(f"topic {topic} partition {partition} offset {at}: {err.str()}",
                                     retryable=err.retriable())  # fmt: skip
                offset = m.offset()
                if offset >= end:
                    at = end
                    break
                last = time.monotonic()
                at = offset + 1
                yield offset, m.key(), m.value() or b""
    finally:
        consumer.unassign()


class PrefixScan:
    """A :class:`~sparkcdc.pipeline.kafka_partition.Prefix` over the messages of a partition before ``start``:
    chunks are read backwards (256 messages, then twice as many each time) with their own consumer, opened on
    first use; what each chunk holds is remembered, so searches share reads. The watermark search stops after
    65 536 messages (0 when none: rows are then not checked for re-sends); the schema search reads back to the
    partition's first offset if it must. Messages the ``marker`` cannot read are skipped here: they belong to
    earlier ranges, whose readers report them."""

    def __init__(
        self,
        open_consumer: Callable[[], Any],
        topic: str,
        partition: int,
        low: int,
        start: int,
        marker: Callable[[bytes], Marker],
    ) -> None:
        self._open = open_consumer
        self._consumer: Any = None
        self.topic = topic
        self.partition = partition
        self._low = low
        self._start = start
        self._from = start  # [self._from, start) has been read
        self._chunk = _FIRST_CHUNK
        self._marker = marker
        self._schemas: dict[SchemaKey, bytes] = {}
        self._watermark: int | None = None

    def watermark(self, limit: int | None = _WATERMARK_SCAN_LIMIT) -> int:
        """The last watermark before ``start``, searched through at most ``limit`` messages (None: all)."""
        while self._watermark is None and (limit is None or self._start - self._from < limit) and self._more():
            pass
        return self._watermark or 0

    def schema(self, key: SchemaKey) -> bytes | None:
        while key not in self._schemas and self._more():
            pass
        return self._schemas.get(key)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _more(self) -> bool:
        if self._from <= self._low:
            return False
        if self._consumer is None:
            self._consumer = self._open()
        begin = max(self._low, self._from - self._chunk)
        self._chunk *= 2
        latest: int | None = None
        for offset, _key, value in read_range(self._consumer, self.topic, self.partition, begin, self._from):
            try:
                mark = self._marker(value)
            except Exception as e:  # not ours to report (see the class docstring)
                log.debug("topic %s partition %d offset %d skipped in the backward scan: %s", self.topic,
                          self.partition, offset, e)  # fmt: skip
                continue
            if mark.watermark is not None:
                latest = mark.watermark
            for key in mark.schemas:
                self._schemas.setdefault(key, value)
        if self._watermark is None and latest is not None:
            self._watermark = latest
        self._from = begin
        return True


def last_watermark(
    open_consumer: Callable[[], Any], topic: str, partition: int, low: int, end: int, marker: Callable[[bytes], Marker]
) -> int:
    """The last watermark of ``partition`` before offset ``end`` (0 when it has none)."""
    scan = PrefixScan(open_consumer, topic, partition, low, end, marker)
    try:
        return scan.watermark(limit=None)
    finally:
        scan.close()
