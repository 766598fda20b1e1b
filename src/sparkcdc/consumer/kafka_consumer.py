"""``cdc kafka-consumer``'s source: a TiCDC Kafka topic (canal-json, simple JSON or Avro, or TiCDC's avro through a
schema registry: ``kafka_avro``) read as steps for a consumer target, in order and effectively once.

One Kafka consumer owns every partition of the topic (global ordering needs all of them, so partitions are
assigned, not balanced over a group); each partition has its own decoder (the simple decoder keeps its schema
cache per partition, as TiCDC's). Decoded events go to :class:`PartitionOrder` (commit-ts order up to the
watermarks), or for canal-json without the TiDB extension, which has neither, to :class:`ArrivalOrder` (the order
they are read); the order's steps go to the target, and only after a step is durable downstream are
the group's offsets committed (the partition offsets that never pass an unapplied event). Every message is
applied, left out as a re-send and counted in a warning, or stops the consumer naming it: none is passed over in
silence. A restart resumes from the committed offsets; what it reads again is skipped against the downstream
checkpoint (rows without a commit-ts are applied again: statements are idempotent).

On a simple topic each commit also carries where the schemas in use came from, so a restart can decode the rows
after its offsets (``kafka_schemas``). A consumer that starts with no committed offsets on a simple topic joins
mid-stream when the topic's start was deleted: rows it cannot decode before the first BOOTSTRAP of their table are
dropped (and counted) instead of stopping it (``join_mid_stream``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sparkcdc.codec.base import Message
from sparkcdc.consumer.kafka_avro import avro_decoder, check_applicable, with_registry
from sparkcdc.consumer.kafka_client import Connection, connect, read_at, rewind
from sparkcdc.consumer.kafka_order import ArrivalOrder, Order, PartitionOrder
from sparkcdc.consumer.kafka_order import Step as OrderStep
from sparkcdc.consumer.kafka_schemas import SchemaOffsets, parse, schema_tables
from sparkcdc.consumer.target import Target
from sparkcdc.errors import ConfigError, CorruptDataError, DecodeError, KafkaError, SparkcdcError
from sparkcdc.model.events import Event
from sparkcdc.model.steps import DdlStep, EngineStats, Step, ordered_step
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
    batch_rows: int = 20000

    @classmethod
    def from_uri(cls, uri: str, toml: Mapping[str, Any], group_id: str, *, schema_registry: str = "",
                 **kw: Any) -> KafkaConsumerConfig:  # fmt: skip
        """``schema_registry``: ``--schema-registry-uri`` (``consumer.kafka_avro``). Raises ConfigError: a malformed
        URI or registry URL, an avro topic that cannot be applied in order, an empty group. A plain
        ``protocol=canal-json`` is accepted, as TiCDC's consumer accepts it (see :attr:`ordered`)."""
        toml = with_registry(uri, toml, schema_registry, "--schema-registry-uri")
        source = KafkaSinkConfig.from_uri(uri, toml)
        check_applicable(source, "cdc kafka-consumer")
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
        if self.source.protocol == "avro":
            return avro_decoder(self.source)
        reader = claim_check_reader(self.source.claim_check_storage_uri)
        if self.source.protocol == "canal-json":
            from sparkcdc.codec.canal_json.config import CanalJsonConfig
            from sparkcdc.codec.canal_json.decoder import CanalJsonMessageDecoder

            return CanalJsonMessageDecoder(CanalJsonConfig.from_options(options), claim_check_reader=reader,
                                           check_extension=True)  # fmt: skip
        from sparkcdc.codec.simple.config import SimpleConfig
        from sparkcdc.codec.simple.decoder import SimpleDecoder

        return SimpleDecoder(SimpleConfig.from_options(options), claim_check_reader=reader, drop_undecodable=mid_stream)


class KafkaSource:
    """A Kafka topic as a consumer source; it never finishes. :meth:`steps` raises SparkcdcError: CorruptDataError
    naming topic, partition and offset for a message that cannot be decoded (nothing after it is applied),
    KafkaError for the cluster (retried only once the cluster has answered: :attr:`reached`)."""

    def __init__(self, config: KafkaConsumerConfig, *, start_over: bool = False) -> None:
        self.config = config
        self.start_over = start_over  # --reset-checkpoints: rewind the group, forget the checkpoints, apply again
        self.topic = config.source.topic
        self.reached = False  # whether the cluster ever answered (see ``kafka_client``)
        self._decoders: dict[int, Any] = {}
        self._connection: Connection | None = None
        self._consumer: Any = None
        self._order: Order | None = None
        self._held: dict[int, int | None] = {}
        self._schemas: SchemaOffsets | None = None  # a simple topic's (see ``kafka_schemas``)
        self._mid_stream = False
        self._reported = 0  # dropped rows, as last reported
        self._held_since: float | None = None
        self._replayed = 0  # re-sent rows the order left out, as last reported

    @property
    def bounded(self) -> bool:
        return False

    @property
    def finished(self) -> bool:
        return False

    def retryable(self, error: SparkcdcError) -> bool:
        return error.retryable and self.reached

    def _connect(self) -> Connection:
        return connect(self.config.source, self.config.group_id)

    def start(self, target: Target) -> None:
        """Connect, then rewind the group and forget the target's positions (start over: offsets first, so a
        crash before the positions are gone leaves the start check to speak) or run the start check; assign every
        partition at its committed offset."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        connection = self._connection = self._connect()
        self._consumer = connection.client
        self.reached = True
        fresh = self.start_over or not connection.committed
        if self.start_over:
            first = rewind(connection, self.topic)
            log.warning("--reset-checkpoints: the group %s reads topic %s again from %s; %d checkpoints of %r "
                        "forgotten", self.config.group_id, self.topic, first, target.reset_checkpoints(),
                        self.config.changefeed)  # fmt: skip
            self.start_over = False  # done: a retry resumes from what this run commits
        else:
            target.check_start()
        partitions, committed = connection.partitions, connection.committed
        self._mid_stream = fresh and self.config.source.protocol == "simple"
        self._decoders = {p: self.config.decoder(mid_stream=self._mid_stream) for p in partitions}
        self._held = dict.fromkeys(partitions)
        self._order = PartitionOrder(partitions) if self.config.ordered else ArrivalOrder(partitions)
        self._reported = 0
        self._held_since = None
        self._schemas = None
        if self.config.source.protocol == "simple":
            self._schemas = SchemaOffsets()
            if not fresh:
                self._read_schemas(connection, self._schemas)
        self._consumer.assign([TopicPartition(self.topic, p, committed.get(p, OFFSET_BEGINNING))
                               for p in partitions])  # fmt: skip
        log.info("kafka consumer topic=%s partitions=%d group=%s resuming at %s", self.topic, len(partitions),
                 self.config.group_id, committed or "the beginning")  # fmt: skip
        if not self.config.ordered:
            log.warning("topic %s: canal-json without enable-tidb-extension carries no commit-ts and no watermarks: "
                        "rows are applied in the order they are read, each partition in its own order; see the "
                        "README for what that keeps", self.topic)  # fmt: skip

    def _read_schemas(self, connection: Connection, schemas: SchemaOffsets) -> None:
        """Before resuming: read again the messages that brought the schemas in use at the committed offsets."""
        read = 0
        for p in connection.partitions:
            for offset in parse(connection.metadata.get(p)):
                m = read_at(connection, self.topic, p, offset)
                if m is None:
                    log.warning("topic %s partition %d: the message at offset %d, which announced a table's schema, "
                                "is gone (retention?); rows after the committed offset that need that schema wait for "
                                "its next BOOTSTRAP", self.topic, p, offset)  # fmt: skip
                    continue
                schemas.saw(p, offset, schema_tables(self._decode(self._decoders[p], p, offset, m)))
                read += 1
        if read:
            log.info("topic %s: read %d schema messages before the committed offsets again", self.topic, read)

    def steps(self, target: Target) -> Iterator[Step]:
        """One poll: the messages read, then every step the order releases (the group's offsets committed after
        each step is durable)."""
        assert self._order is not None and self._connection is not None, "start() first"
        order, decoders, held = self._order, self._decoders, self._held
        for m in self._consumer.consume(_MAX_MESSAGES, _POLL_SECONDS):
            err = m.error()
            if err is not None:
                if err.code() == -191:  # _PARTITION_EOF
                    continue
                raise KafkaError(f"topic {self.topic}: {err.str()}", retryable=err.retriable())
            p, offset = m.partition(), m.offset()
            try:
                events = self._decode(decoders[p], p, offset, m)
            except CorruptDataError:
                yield from self._ready(order)  # everything released before the bad message, then stop
                raise
            if self._schemas is not None:
                self._schemas.saw(p, offset, schema_tables(events))
            origin = held[p]
            pending = getattr(decoders[p], "pending", 0)
            held[p] = (origin if origin is not None else offset) if pending else None
            order.add(p, offset, events, origin=origin)
            order.hold(p, held[p])
        yield from self._ready(order)
        self._connection.errors.report()
        if self._mid_stream and self.dropped > self._reported:
            log.warning("joined mid-stream: dropped %d rows sent before their table's schema was announced "
                        "(%d so far)", self.dropped - self._reported, self.dropped)  # fmt: skip
            self._reported = self.dropped
        self._held_since = self._report_held(self._held_since)

    def progress_line(self, stats: EngineStats) -> str:
        return (f"rows={stats.rows_applied} (+{stats.upserts}/-{stats.deletes}) ddl={stats.ddls_executed} "
                f"replayed-skipped={stats.replayed_skipped} dropped={self.dropped} "
                f"applied-ts={stats.applied_ts}")  # fmt: skip

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

    def _ready(self, order: Order) -> Iterator[Step]:
        """Every step the order releases; the group's offsets are committed after each is applied. First says how
        many re-sent rows the order left out since the last call: they are behind the offsets committed next."""
        from confluent_kafka import TopicPartition

        if order.replayed > self._replayed:
            log.warning("left out %d rows or DDLs re-sent by the changefeed (commit-ts at or below what was already "
                        "released; delivery is at least once), %d so far", order.replayed - self._replayed,
                        order.replayed)  # fmt: skip
            self._replayed = order.replayed
        while (step := order.next_step()) is not None:
            yield self._step(step)
            if step.offsets:  # the step is durable in the target now
                schemas = self._schemas
                self._consumer.commit(offsets=[TopicPartition(self.topic, p, o, metadata=schemas.metadata(p, o))
                                               if schemas is not None else TopicPartition(self.topic, p, o)
                                               for p, o in step.offsets.items()], asynchronous=False)  # fmt: skip

    def _step(self, step: OrderStep) -> Step:
        ddl = step.ddl
        if ddl is None:
            return ordered_step(step.rows, step.upto, self.config.batch_rows)
        return DdlStep(ddl.schema, ddl.table, ddl.query, int(ddl.action), ddl.commit_ts,
                       definitions=lambda: (ddl.pre_table_info, ddl.table_info))  # fmt: skip

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
        except SparkcdcError:  # the avro decoder's registry: not answering (retried), or refusing
            raise
        except Exception as e:  # a foreign or truncated message the decoder did not anticipate
            raise CorruptDataError(f"{where}: not a TiCDC {self.config.source.protocol} message: {e}") from None

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        self._connection = None
        self._order = None
