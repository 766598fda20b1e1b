"""The confluent-kafka client of ``cdc kafka-consumer``: its settings, the first contact with the cluster, and what
the client has to say.

librdkafka logs every reconnect attempt while a broker is down (779 lines in 45 s against a port nobody answers
on), so its own log lines go to DEBUG here and the consumer says what matters itself:

* at start (:func:`connect`), the cluster must answer within ``dial-timeout`` (TiCDC's Kafka URI parameter,
  default 10 s, the bound ``changefeed create`` uses too); otherwise one KafkaError names the brokers, the wait
  and the client's last error;
* while it runs, the client's errors (a broker restarting, the network gone) are summed up in one warning at most
  every 30 s while they last, and the client keeps reconnecting, as TiCDC's consumer keeps retrying.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from sparkcdc.errors import ConfigError, KafkaError
from sparkcdc.sink.kafka.config import KafkaSinkConfig

log = logging.getLogger(__name__)

REPORT_SECONDS: Final = 30.0
# librdkafka's codes for "no broker answered": transport failure, timed out, all brokers down, unresolvable name
_UNREACHABLE: Final = frozenset({-195, -185, -187, -193})


class ClientErrors:
    """The client's ``error_cb``: remembers the errors, and :meth:`report` sums them up in one warning, at once for
    the first and then at most every ``every`` seconds while more come."""

    def __init__(self, brokers: str, every: float = REPORT_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.brokers = brokers
        self.last = ""  # the text of the last error
        self._every = every
        self._clock = clock
        self._unreported = 0
        self._reported_at: float | None = None

    def __call__(self, err: Any) -> None:
        self.last = err.str()
        self._unreported += 1

    def report(self) -> None:
        if not self._unreported:
            return
        now = self._clock()
        if self._reported_at is not None and now - self._reported_at < self._every:
            return
        log.warning("Kafka cluster at %s: %s (%d client error(s) since the last report); the consumer keeps "
                    "reconnecting", self.brokers, self.last, self._unreported)  # fmt: skip
        self._unreported = 0
        self._reported_at = now


class _DebugLog:
    """confluent-kafka's ``logger``: librdkafka's own lines, at DEBUG (see the module docstring)."""

    def log(self, level: int, msg: str, *args: Any) -> None:
        log.debug("librdkafka: " + msg, *args)


@dataclass
class Connection:
    """A client that reached the cluster: the topic's partitions and the group's committed offsets, with the
    metadata committed with each."""

    client: Any
    partitions: list[int]
    committed: dict[int, int]
    errors: ClientErrors
    wait: float = 10.0  # dial-timeout, seconds
    metadata: dict[int, str] = field(default_factory=dict)


def connect(source: KafkaSinkConfig, group_id: str) -> Connection:
    """A consumer client of ``group_id`` for ``source``'s topic. Raises ConfigError when the topic does not exist,
    KafkaError (``CDC:ErrKafkaNewProducer``, TiCDC's code when no client can reach the cluster, as ``changefeed
    create`` raises it) when no broker answers within ``dial-timeout``, KafkaError for other refusals."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    brokers = source.uri.bootstrap_servers
    errors = ClientErrors(brokers)
    settings = {
        **source.connection_config(f"sparkcdc_consumer_{group_id}"),
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "log.connection.close": False,
        "error_cb": errors,
    }
    client = Consumer(settings, logger=_DebugLog())
    wait = max(1.0, source.dial_timeout_ns / 1e9)
    topic = source.topic
    try:
        meta = client.list_topics(topic, timeout=wait).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise ConfigError(f"topic {topic!r} does not exist on {brokers}")
        partitions = sorted(meta.partitions)
        committed = _committed(client, [TopicPartition(topic, p) for p in partitions], wait)
    except KafkaException as e:
        client.close()
        err = e.args[0]
        if err.code() in _UNREACHABLE:
            raise KafkaError(
                f"no Kafka broker at {brokers} answered within {wait:g} s (dial-timeout): {errors.last or err.str()}; "
                "check the broker addresses in --upstream-uri and that the cluster is running (dial-timeout in the "
                "URI sets how long to wait)",
                code="CDC:ErrKafkaNewProducer",
            ) from None
        raise KafkaError(f"cannot read topic {topic!r} at {brokers}: {err.str()}") from None
    except BaseException:
        client.close()
        raise
    offsets = {tp.partition: tp.offset for tp in committed if tp.offset >= 0}
    metadata = {tp.partition: tp.metadata for tp in committed if tp.offset >= 0 and tp.metadata}
    return Connection(client, partitions, offsets, errors, wait, metadata)


def read_at(connection: Connection, topic: str, partition: int, offset: int) -> Any | None:
    """The message at ``offset`` of ``partition``, or None when it is not there any more (retention deleted it) or
    did not come within dial-timeout. Moves the client's assignment: assign the partitions again afterwards. Raises
    KafkaError."""
    from confluent_kafka import KafkaException, TopicPartition

    client = connection.client
    deadline = time.monotonic() + connection.wait
    try:
        client.assign([TopicPartition(topic, partition, offset)])
        while (left := deadline - time.monotonic()) > 0:
            for m in client.consume(1, left):
                err = m.error()
                if err is not None and err.code() != -191:  # anything but _PARTITION_EOF
                    raise KafkaError(f"topic {topic} partition {partition} offset {offset}: {err.str()}",
                                     retryable=err.retriable())  # fmt: skip
                if err is None and m.partition() == partition:
                    return m if m.offset() == offset else None
                if err is not None:
                    return None  # the end of the partition: the offset is not there
    except KafkaException as e:
        raise KafkaError(f"cannot read topic {topic!r} partition {partition}: {e.args[0].str()}") from None
    return None


def _committed(client: Any, partitions: list[Any], wait: float) -> list[Any]:
    """The group's committed offsets. A cluster makes a group's coordinator on the group's first request (Apache
    Kafka creates its offsets topic then): while it is not there yet the lookup is asked again, for up to three
    times ``wait``, instead of failing a consumer started on a fresh cluster."""
    from confluent_kafka import KafkaError as Code
    from confluent_kafka import KafkaException

    transient = {Code.COORDINATOR_NOT_AVAILABLE, Code.COORDINATOR_LOAD_IN_PROGRESS, Code.NOT_COORDINATOR,
                 Code._TIMED_OUT}  # fmt: skip
    deadline = time.monotonic() + 3 * wait
    while True:
        try:
            return client.committed(partitions, timeout=wait)  # type: ignore[no-any-return]
        except KafkaException as e:
            if e.args[0].code() not in transient or time.monotonic() >= deadline:
                raise
            log.info("the group's coordinator is not ready (%s): asking again", e.args[0].str())
            time.sleep(0.5)


def rewind(connection: Connection, topic: str) -> dict[int, int]:
    """Commit each partition's first offset for the group (``--reset-checkpoints``: the group reads the topic from
    its beginning again, also after a restart); returns them. Raises KafkaError."""
    from confluent_kafka import KafkaException, TopicPartition

    client = connection.client
    try:
        first = {p: int(client.get_watermark_offsets(TopicPartition(topic, p), timeout=connection.wait,
                                                     cached=False)[0]) for p in connection.partitions}  # fmt: skip
        client.commit(offsets=[TopicPartition(topic, p, o) for p, o in first.items()], asynchronous=False)
    except KafkaException as e:
        raise KafkaError(f"cannot rewind the group's offsets of topic {topic!r}: {e.args[0].str()}") from None
    connection.committed = dict(first)
    return first
