"""``cdc kafka-consumer``'s loop: a TiCDC Kafka topic (canal-json, simple JSON or Avro) applied to a MySQL-compatible
downstream, in order and effectively once.

One Kafka consumer owns every partition of the topic (global ordering needs all of them, so partitions are
assigned, not balanced over a group); each partition has its own decoder (the simple decoder keeps its schema
cache per partition, as TiCDC's). Decoded events go to :class:`PartitionOrder` (commit-ts order up to the
watermarks), or for canal-json without the TiDB extension, which has neither, to :class:`ArrivalOrder` (the order
they are read); the order's steps go to the :class:`ApplyEngine`, and only after a step is durable downstream are
the group's offsets committed (the partition offsets that never pass an unapplied event). Every message is
applied, left out as a re-send and counted in a warning, or stops the consumer naming it: none is passed over in
silence. A restart resumes from the committed offsets; what it reads again is skipped against the downstream
checkpoint (rows without a commit-ts are applied again: statements are idempotent).

A consumer that starts with no committed offsets on a simple topic joins mid-stream when the topic's start was
deleted: rows it cannot decode before the first BOOTSTRAP of their table are dropped (and counted) instead of
stopping it (``join_mid_stream``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sparkcdc.codec.base import Message
from sparkcdc.consumer import downstream_guard
from sparkcdc.consumer.engine import ApplyEngine, DdlStep, EngineStats, RowsStep, ordered_step
from sparkcdc.consumer.kafka_client import Connection, connect, rewind
from sparkcdc.consumer.kafka_order import ArrivalOrder, Order, PartitionOrder, Step
from sparkcdc.errors import ConfigError, CorruptDataError, DecodeError, KafkaError
from sparkcdc.model.events import Event
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.sink.kafka.config import KafkaSinkConfig
from sparkcdc.storage.claim_check import claim_check_reader

log = logging.getLogger(__name__)

_POLL_SECONDS = 0.2
_MAX_MESSAGES = 5000
_HELD_REPORT_SECONDS = 30.0  # how often a consumer says it still holds rows waiting for their schema


@dataclass
class KafkaConsumerConfig:
    """``--upstream-uri`` (TiCDC's sink-URI form) with the producer's changefeed TOML, and our settings."""

    source: KafkaSinkConfig
    group_id: str
    changefeed: str = "default"
    time_zone: str | None = None
    batch_rows: int = 20000
    workers: int = 4

    @classmethod
    def from_uri(cls, uri: str, toml: Mapping[str, Any], group_id: str, **kw: Any) -> KafkaConsumerConfig:
        """Raises ConfigError: a malformed URI, an empty group. A plain ``protocol=canal-json`` is accepted, as
        TiCDC's consumer accepts it (see :attr:`ordered`)."""
        source = KafkaSinkConfig.from_uri(uri, toml)
        if source.protocol == "avro":
            raise ConfigError("cdc kafka-consumer does not read protocol=avro yet; use canal-json or simple",
                              code="CDC:ErrSinkUnknownProtocol")  # fmt: skip
        if not group_id:
            raise ConfigError("--consumer-group-id must not be empty")
        return cls(source, group_id, **kw)

    @property
    def ordered(self) -> bool:
        """Whether the messages carry commit-ts and watermarks, so rows are applied in commit-ts order; canal-json
        without ``enable-tidb-extension`` has neither, and is applied in the order it is read (``ArrivalOrder``)."""
        return self.source.protocol != "canal-json" or self.source.enable_tidb_extension

    def decoder(self, *, mid_stream: bool = False) -> Any:
        """A fresh decoder for one partition, reading claim-check files from the configured storage;
        ``mid_stream``: a simple decoder drops rows it can never decode (see the module docstring)."""
        options = self.source.codec_options()
        reader = claim_check_reader(self.source.claim_check_storage_uri)
        if self.source.protocol == "canal-json":
            from sparkcdc.codec.canal_json.config import CanalJsonConfig
            from sparkcdc.codec.canal_json.decoder import CanalJsonMessageDecoder

            return CanalJsonMessageDecoder(CanalJsonConfig.from_options(options), claim_check_reader=reader,
                                           check_extension=True)  # fmt: skip
        from sparkcdc.codec.simple.config import SimpleConfig
        from sparkcdc.codec.simple.decoder import SimpleDecoder

        return SimpleDecoder(SimpleConfig.from_options(options), claim_check_reader=reader, drop_undecodable=mid_stream)


class KafkaConsumer:
    """Runs until ``stop`` is set. Raises SparkcdcError: CorruptDataError naming topic, partition and offset for
    a message that cannot be decoded (nothing after it is applied), KafkaError for the cluster (``connected`` says
    whether it ever answered), the ``downstream_guard`` refusal when the downstream lost tables the checkpoints name,
    downstream errors from the applier (``retryable`` when a retry may help)."""

    def __init__(self, config: KafkaConsumerConfig, target: MysqlTarget, *, start_over: bool = False) -> None:
        self.config = config
        self.target = target
        self.start_over = start_over  # --reset-checkpoints: rewind the group, forget the checkpoints, apply again
        self.topic = config.source.topic
        self.stats = EngineStats()
        self._decoders: dict[int, Any] = {}
        self._consumer: Any = None
        self._engine: ApplyEngine | None = None
        self.connected = False  # whether the cluster answered (see ``kafka_client``)
        self._replayed = 0  # re-sent rows the order left out, as last reported

    def _connect(self) -> Connection:
        return connect(self.config.source, self.config.group_id)

    def run(self, stop: threading.Event, on_progress: Callable[[KafkaConsumer], None] | None = None) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        connection = self._connect()
        self._consumer = connection.client
        self.connected = True
        engine = self._engine = self._new_engine()
        self.stats = engine.stats
        fresh = self.start_over or not connection.committed
        if self.start_over:  # offsets first: a crash before the checkpoints are gone leaves the guard to speak
            first = rewind(connection, self.topic)
            log.warning("--reset-checkpoints: the group %s reads topic %s again from %s; %d checkpoints of %r "
                        "forgotten", self.config.group_id, self.topic, first, engine.reset_checkpoints(),
                        self.config.changefeed)  # fmt: skip
            self.start_over = False  # done: a retry resumes from what this run commits
        else:
            downstream_guard.check(engine.main_applier)
        consumer, partitions, committed = connection.client, connection.partitions, connection.committed
        mid_stream = fresh and self.config.source.protocol == "simple"
        decoders = self._decoders = {p: self.config.decoder(mid_stream=mid_stream) for p in partitions}
        held: dict[int, int | None] = dict.fromkeys(partitions)
        order: Order = PartitionOrder(partitions) if self.config.ordered else ArrivalOrder(partitions)
        reported = 0
        held_since: float | None = None
        consumer.assign([TopicPartition(self.topic, p, committed.get(p, OFFSET_BEGINNING)) for p in partitions])
        log.info("kafka consumer topic=%s partitions=%d group=%s resuming at %s", self.topic, len(partitions),
                 self.config.group_id, committed or "the beginning")  # fmt: skip
        if not self.config.ordered:
            log.warning("topic %s: canal-json without enable-tidb-extension carries no commit-ts and no watermarks: "
                        "rows are applied in the order they are read, each partition in its own order; see the "
                        "README for what that keeps", self.topic)  # fmt: skip
        while not stop.is_set():
            for m in consumer.consume(_MAX_MESSAGES, _POLL_SECONDS):
                err = m.error()
                if err is not None:
                    if err.code() == -191:  # _PARTITION_EOF
                        continue
                    raise KafkaError(f"topic {self.topic}: {err.str()}", retryable=err.retriable())
                p, offset = m.partition(), m.offset()
                try:
                    events = self._decode(decoders[p], p, offset, m)
                except CorruptDataError:
                    self._apply_ready(order, engine)  # everything released before the bad message, then stop
                    raise
                origin = held[p]
                pending = getattr(decoders[p], "pending", 0)
                held[p] = (origin if origin is not None else offset) if pending else None
                order.add(p, offset, events, origin=origin)
                order.hold(p, held[p])
            self._apply_ready(order, engine)
            connection.errors.report()
            if mid_stream and self.dropped > reported:
                log.warning("joined mid-stream: dropped %d rows sent before their table's schema was announced "
                            "(%d so far)", self.dropped - reported, self.dropped)  # fmt: skip
                reported = self.dropped
            held_since = self._report_held(held_since)
            if on_progress is not None:
                on_progress(self)

    def _report_held(self, since: float | None) -> float | None:
        """Every 30 s while rows wait for their table's schema, a warning naming the schemas they wait for; returns
        when the current wait (or report period) began, None when nothing is held."""
        held = sum(int(getattr(d, "pending", 0)) for d in self._decoders.values())
        if not held:
            return None
        now = time.monotonic()
        if since is None:
            return now
        if now - since < _HELD_REPORT_SECONDS:
            return since
        waiting = sorted({name for d in self._decoders.values() for name in getattr(d, "waiting_for", ())})
        log.warning("holding %d rows that wait for the schema of %s: no BOOTSTRAP or DDL message carrying it has "
                    "arrived yet (the changefeed sends BOOTSTRAPs every send-bootstrap-interval-in-sec while the "
                    "table has changes); up to max-pending-dml rows are held", held, ", ".join(waiting))  # fmt: skip
        return now

    def _new_engine(self) -> ApplyEngine:
        return ApplyEngine(self.target, changefeed=self.config.changefeed, time_zone=self.config.time_zone,
                           workers=self.config.workers)  # fmt: skip

    def _apply_ready(self, order: Order, engine: ApplyEngine) -> None:
        """Apply every step the order releases; commit the group's offsets after each. First says how many re-sent
        rows the order left out since the last call: they are behind the offsets committed next."""
        from confluent_kafka import TopicPartition

        if order.replayed > self._replayed:
            log.warning("left out %d rows or DDLs re-sent by the changefeed (commit-ts at or below what was already "
                        "released; delivery is at least once), %d so far", order.replayed - self._replayed,
                        order.replayed)  # fmt: skip
            self._replayed = order.replayed
        while (step := order.next_step()) is not None:
            engine.apply(self._engine_step(step))
            if step.offsets:
                self._consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in step.offsets.items()],
                                      asynchronous=False)  # fmt: skip

    def _engine_step(self, step: Step) -> RowsStep | DdlStep:
        ddl = step.ddl
        if ddl is None:
            return ordered_step(step.rows, step.upto, self.config.batch_rows)
        return DdlStep(ddl.schema, ddl.table, ddl.query, int(ddl.action), ddl.commit_ts)

    @property
    def dropped(self) -> int:
        """Rows a consumer that joined mid-stream could not decode (sent before their table's BOOTSTRAP)."""
        return sum(int(getattr(d, "dropped", 0)) for d in self._decoders.values())

    def _decode(self, decoder: Any, partition: int, offset: int, m: Any) -> list[Event]:
        where = f"topic {self.topic} partition {partition} offset {offset}"
        try:
            return list(decoder.decode(Message(m.key(), m.value() or b"")))
        except DecodeError as e:
            text = e.message
            if "handle-key-only" in text:
                text += (
                    "; a MySQL/MariaDB upstream cannot be read again at a past commit-ts, so handle-key-only "
                    "messages cannot be applied: set large-message-handle-option = \"claim-check\" on the changefeed"
                )
            raise CorruptDataError(f"{where}: {text}; nothing after it was applied") from None
        except Exception as e:  # a foreign or truncated message the decoder did not anticipate
            raise CorruptDataError(f"{where}: not a TiCDC {self.config.source.protocol} message: {e}") from None

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        if self._engine is not None:
            self._engine.close()
            self._engine = None
