"""Executor side, sink stage: a task's messages to the broker, in commit order per partition, all acknowledged.

The task owns whole topic partitions (the query routed by partition) and gets their payloads in ``(commit_ts,
seq)`` order, so sending each as it comes keeps every partition in commit order; it sends while its input is
still being read (``SinkWriter``: the input may be an iterator that reads as it goes), holding no more of it than
the payload in hand. The task returns only after every message is
acknowledged (:meth:`DeliveryProducer.flush`); a failure (of the broker, or of the input mid-way) fails the batch,
drops the producer with whatever it still holds, and nothing of the batch is acknowledged: the checkpoint stays and
Spark replays the batch (TiCDC's at-least-once).

The simple protocol's BOOTSTRAP messages are sent here, before the rows of a table: when this worker first sends
the table's rows, then again once ``send-bootstrap-interval-in-sec`` has passed or
``send-bootstrap-in-msg-count`` rows were sent since the last one (checked when the table's rows come), to all
partitions of the table's topic (partition 0 with ``send-bootstrap-to-all-partition = false``). The schema a
BOOTSTRAP describes is the latest version seen. The result tells the driver which tables were written, for its
ticker that keeps announcing tables that stopped changing (``committer``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain
from typing import Any

from sparkcdc.codec.base import message_encoder
from sparkcdc.codec.simple.bootstrap import BootstrapTracker
from sparkcdc.model import TableInfo
from sparkcdc.sink.base import Routed, SinkContext
from sparkcdc.sink.kafka.client import Clients, DeliveryProducer, clients, discard
from sparkcdc.sink.kafka.config import KafkaSinkConfig
from sparkcdc.sink.kafka.dispatcher import bootstrap_partitions
from sparkcdc.sink.kafka.encoder import unpack


@dataclass(frozen=True)
class KafkaResult:
    """What a task delivered: the topics it wrote (with their partition counts, for the watermarks) and, for the
    driver's BOOTSTRAP ticker, per table written: (topic, latest TableInfo, rows, whether a BOOTSTRAP went first)."""

    topics: tuple[tuple[str, int], ...] = ()
    messages: int = 0
    rows: int = 0
    tables: tuple[tuple[str, TableInfo, int, bool], ...] = ()


_trackers: dict[str, BootstrapTracker] = {}


class KafkaTaskWriter:
    def __init__(self, config: KafkaSinkConfig, ctx: SinkContext) -> None:
        self.config = config
        self.ctx = ctx

    def write(self, payloads: Iterable[Routed]) -> KafkaResult:
        """Send ``payloads`` (in commit order, read as they come) and wait for every acknowledgement. Raises
        SparkcdcError, or whatever reading ``payloads`` raises."""
        try:
            it = iter(payloads)
            first = next(it, None)
            if first is None:  # a task with nothing to send makes no producer
                return KafkaResult()
            with clients(self.config, self.ctx.changefeed) as client:
                return self._send(client, chain((first,), it))
        except Exception:
            # what this batch sent may be lost, or still queued behind a failed input: a fresh producer, and
            # BOOTSTRAPs again before the replayed rows
            discard(self.config, self.ctx.changefeed)
            _trackers.pop(self.ctx.changefeed, None)
            raise

    def _send(self, client: Clients, payloads: Iterable[Routed]) -> KafkaResult:
        producer = client.producer
        bootstrap = self._bootstrap(producer, client.topics.partitions) if self.config.bootstrap_enabled else None
        topics: dict[str, int] = {}
        tables: dict[tuple[str, str, str], tuple[str, TableInfo, int, bool]] = {}
        messages = rows = 0
        for p in payloads:
            topic, partition, values, keys = unpack(p.data)
            if topic not in topics:
                topics[topic] = client.topics.partitions(topic)
            if bootstrap is not None:
                sent = bootstrap(topic, p.info, p.nrows)
                key = (topic, p.info.schema, p.info.table)
                _, _, before, was_sent = tables.get(key, (topic, p.info, 0, False))
                tables[key] = (topic, p.info, before + p.nrows, was_sent or sent)
            producer.send(topic, partition, values, keys)
            messages += len(values)
            rows += p.nrows
        producer.flush()
        return KafkaResult(tuple(sorted(topics.items())), messages, rows, tuple(tables.values()))

    def _bootstrap(self, producer: DeliveryProducer, partitions: Callable[[str], int]) -> Callable[..., bool]:
        tracker = _trackers.get(self.ctx.changefeed)
        if tracker is None:
            tracker = _trackers[self.ctx.changefeed] = BootstrapTracker(
                self.config.send_bootstrap_interval_in_sec, self.config.send_bootstrap_in_msg_count
            )
        codec: Any = message_encoder(self.config.protocol, self.config.codec_options())
        selectors = self.config.column_selectors()

        def send(topic: str, table: TableInfo, rows: int) -> bool:
            if not tracker.on_rows(topic, table, rows):
                return False
            message = codec.encode_bootstrap(selectors.project(table))
            for partition in bootstrap_partitions(self.config.send_bootstrap_to_all_partition, partitions(topic)):
                producer.send(topic, partition, [message.value])
            return True

        return send
