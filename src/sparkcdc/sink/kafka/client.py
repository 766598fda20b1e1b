"""The Kafka clients of one sink config in one process: a producer that checks every delivery, and the topics.

Clients stay in the Python worker while the changefeed uses them (Spark reuses workers across tasks and
micro-batches; ``worker_cache`` closes them once idle), so a connection is made once, not per batch, as TiCDC keeps
one producer per changefeed. A client that failed is dropped (:func:`discard`): an idempotent producer that timed
out may be fenced, and the next batch starts clean.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Final

from sparkcdc.errors import ConfigError, KafkaError, SparkcdcError
from sparkcdc.sink.kafka.config import KafkaSinkConfig
from sparkcdc.sink.kafka.limits import resolve_partition_num
from sparkcdc.sink.worker_cache import WorkerCache

log = logging.getLogger(__name__)
# librdkafka's own log lines (connection failures while a broker is down, ...) go through logging, not stderr.
_client_log = logging.getLogger("sparkcdc.kafka.librdkafka")

ERR_TOPIC_NOT_EXISTS: Final = "CDC:ErrKafkaTopicNotExists"
_ADMIN_TIMEOUT: Final = 10.0


class DeliveryProducer:
    """A confluent-kafka producer whose :meth:`flush` raises unless the broker acknowledged every message."""

    def __init__(self, config: KafkaSinkConfig, client_id: str) -> None:
        from confluent_kafka import KafkaException, Producer

        self.config = config
        self._exception = KafkaException
        # one callback for the producer, called for failed messages only: flush() waits for all of them anyway
        settings = {**config.producer_config(client_id), "on_delivery": self._delivered,
                    "delivery.report.only.error": True}  # fmt: skip
        self._producer = Producer(settings, logger=_client_log)
        self._errors: list[Any] = []
        self.sent = 0

    def _delivered(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self._errors.append(err)

    def send(
        self, topic: str, partition: int, values: Sequence[bytes], keys: Sequence[bytes | None] | None = None
    ) -> None:
        """Queue messages for one partition, in order; waits while the client's queue is full. ``keys`` (avro only)
        pairs with ``values``; a keyed message with an empty value is sent with a null value (a tombstone).
        Raises KafkaError."""
        produce = self._producer.produce
        for i, value in enumerate(values):
            key = keys[i] if keys is not None else None
            if key is not None and not value:
                value = None  # type: ignore[assignment]
            while True:
                try:
                    produce(topic, value, key, partition)
                    break
                except BufferError:
                    self._producer.poll(0.05)
                except self._exception as e:
                    raise _kafka_error(e.args[0], f"cannot send to {topic}[{partition}]") from None
        self.sent += len(values)
        self._producer.poll(0)

    def flush(self) -> None:
        """Wait until every queued message is acknowledged. Raises KafkaError naming the first failure; then
        nothing of the batch counts as delivered."""
        timeout = self.config.producer_config()["message.timeout.ms"] / 1000 + 5
        left = self._producer.flush(timeout)
        errors, self._errors = self._errors, []
        if errors:
            raise _kafka_error(errors[0], f"{len(errors)} message(s) not acknowledged by the Kafka cluster")
        if left:
            raise KafkaError(f"{left} message(s) not acknowledged by the Kafka cluster within {timeout:.0f}s")

    def close(self) -> None:
        try:
            self._producer.purge()
            self._producer.flush(0)
        except Exception:  # a broken producer is being thrown away; nothing to report
            log.debug("closing a producer failed", exc_info=True)


class Topics:
    """Partition counts of the topics the sink writes, creating missing ones as TiCDC does (``partition-num``
    partitions, 3 by default, with ``replication-factor``) unless ``auto-create-topic=false``."""

    def __init__(self, config: KafkaSinkConfig, client_id: str, timeout: float = _ADMIN_TIMEOUT) -> None:
        from confluent_kafka.admin import AdminClient

        self.config = config
        self._admin = AdminClient(config.connection_config(client_id), logger=_client_log)
        self._partitions: dict[str, int] = {}
        self._timeout = timeout

    def partitions(self, topic: str) -> int:
        """Partitions rows of ``topic`` are dispatched over. Raises KafkaError (cluster unreachable), ConfigError
        (topic missing and not to be created, or fewer partitions than ``partition-num``)."""
        count = self._partitions.get(topic)
        if count is None:
            count = self._partitions[topic] = self._resolve(topic)
        return count

    def _existing(self, topic: str) -> int | None:
        from confluent_kafka import KafkaException

        try:
            # all topics: a metadata request naming a missing topic makes brokers auto-create it their way
            found = self._admin.list_topics(timeout=self._timeout).topics.get(topic)
        except KafkaException as e:
            raise _kafka_error(e.args[0], "cannot read the topics of the Kafka cluster") from None
        if found is None or found.error is not None or not found.partitions:
            return None
        return len(found.partitions)

    def _resolve(self, topic: str) -> int:
        actual = self._existing(topic)
        if actual is not None:
            return resolve_partition_num(self.config.partition_num, actual)
        if not self.config.auto_create_topic:
            raise ConfigError(
                f"topic {topic!r} does not exist and auto-create-topic is false; create it or set "
                "auto-create-topic=true",
                code=ERR_TOPIC_NOT_EXISTS,
            )
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        count = resolve_partition_num(self.config.partition_num, None)
        futures = self._admin.create_topics(
            [NewTopic(topic, count, self.config.replication_factor)], request_timeout=self._timeout
        )
        try:
            futures[topic].result()
            log.info("created topic %s with %d partitions", topic, count)
        except KafkaException as e:
            if e.args[0].name() != "TOPIC_ALREADY_EXISTS":
                raise _kafka_error(e.args[0], f"cannot create topic {topic!r}") from None
        deadline = time.monotonic() + self._timeout
        while (actual := self._existing(topic)) is None:
            if time.monotonic() > deadline:
                raise KafkaError(f"topic {topic!r} was created but is not visible after {self._timeout:.0f}s")
            time.sleep(0.05)
        return resolve_partition_num(self.config.partition_num, actual)


class Clients:
    def __init__(self, config: KafkaSinkConfig, changefeed: str) -> None:
        import socket

        namespace, _, changefeed_id = changefeed.rpartition("/")
        client_id = config.kafka_client_id(socket.gethostname(), namespace or "default", changefeed_id)
        self.topics = Topics(config, client_id)
        self._producer: DeliveryProducer | None = None
        self._client_id = client_id
        self.config = config

    @property
    def producer(self) -> DeliveryProducer:
        if self._producer is None:
            self._producer = DeliveryProducer(self.config, self._client_id)
        return self._producer

    def close(self) -> None:
        """Drop what the producer still holds (the admin client has nothing to close)."""
        if self._producer is not None:
            self._producer.close()


def check_reachable(config: KafkaSinkConfig) -> None:
    """TiCDC's check when a changefeed is created or updated: the cluster answers within dial-timeout (at most
    10 s), and the default topic exists with at least partition-num partitions or is created (as TiCDC creates it
    then). Raises ConfigError naming the brokers and the reason."""
    from confluent_kafka import KafkaException

    timeout = min(_ADMIN_TIMEOUT, max(1.0, config.dial_timeout_ns / 1e9))
    try:
        topics = Topics(config, config.client_id or "sparkcdc_check", timeout)
    except KafkaException as e:  # librdkafka refuses a setting (a TLS file, a SASL mechanism it lacks)
        raise ConfigError(f"the Kafka client refuses the sink's settings: {e.args[0].str() if e.args else e}; "
                          "check the TLS and SASL settings of the sink URI and [sink.kafka-config]",
                          code="CDC:ErrKafkaInvalidConfig") from None  # fmt: skip
    try:
        topics.partitions(config.uri.topic)
    except KafkaError as e:
        raise ConfigError(f"cannot reach the Kafka cluster at {','.join(config.uri.brokers)}: {e.message}; check "
                          "the broker addresses in the sink URI and that the cluster is running",
                          code="CDC:ErrKafkaNewProducer") from None  # fmt: skip
    if config.protocol == "avro":  # TiCDC tests the registry's connection when it builds the encoder
        from sparkcdc.schema_registry.client import registry_client

        try:
            registry_client(config.schema_registry).check()
        except SparkcdcError as e:
            raise ConfigError(f"{e.message}; check --schema-registry", code="CDC:ErrAvroSchemaAPIError") from None


# keyed by the frozen config itself: the encoder asks once per transaction and table, and hashing it costs a tenth
# of pickling it
_clients: WorkerCache[tuple[str, KafkaSinkConfig], Clients] = WorkerCache(Clients.close)


def clients(config: KafkaSinkConfig, changefeed: str) -> AbstractContextManager[Clients]:
    """This process's clients for ``config``, held for a ``with`` block (created on first use, closed once idle:
    ``worker_cache``)."""
    return _clients.use((changefeed, config), lambda: Clients(config, changefeed))


def discard(config: KafkaSinkConfig, changefeed: str) -> None:
    """Forget (and close) this process's clients for ``config`` after a failure."""
    found = _clients.pop((changefeed, config))
    if found is not None:
        found.close()


def _kafka_error(err: Any, what: str) -> KafkaError:
    name = err.name() if hasattr(err, "name") else type(err).__name__
    text = err.str() if hasattr(err, "str") else str(err)
    if name == "MSG_SIZE_TOO_LARGE":
        return KafkaError(
            f"{what}: {text}; the message is above the broker's limit: lower max-message-bytes or set "
            "large-message-handle-option",
            code="CDC:ErrMessageTooLarge",
            retryable=False,
        )
    return KafkaError(f"{what}: {name}: {text}")
