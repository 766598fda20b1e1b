"""Driver side: a batch's DDLs after all its rows are acknowledged, then the watermark that acknowledges it.

Spark calls the commit only after every writer task returned, and a task returns only when the broker has
acknowledged its messages, so a DDL is sent after every earlier row, as TiCDC's MQ sink sends a DDL only after
flushing the DML before it. DDL messages go to every partition of the table's topic (canal-json: partition 0),
watermarks to every partition of every topic the changefeed has written and of the default topic. The topics
written are remembered in the changefeed's state dir, so watermarks keep reaching every partition after a
restart. A replayed batch sends its DDL again: consumers skip a DDL at or below the one they applied.

The simple protocol's periodic BOOTSTRAPs are sent here too, after the batch's DDLs: TiCDC's 5 s ticker, run at
every batch commit, announces again every table that had rows in the last 30 minutes once its interval has passed
(the writers announce a table before its first rows and when its rows come late; see ``codec.simple.bootstrap``).
"""

from __future__ import annotations

import json
import logging
import pickle
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sparkcdc.codec.simple.bootstrap import BootstrapTracker
from sparkcdc.errors import SparkcdcError, StorageError
from sparkcdc.local_file import write_atomic
from sparkcdc.model import DDLEvent, TableInfo
from sparkcdc.sink.base import SinkContext
from sparkcdc.sink.kafka.client import clients, discard
from sparkcdc.sink.kafka.codec import message_codec
from sparkcdc.sink.kafka.config import KafkaSinkConfig
from sparkcdc.sink.kafka.dispatcher import bootstrap_partitions, ddl_partitions

log = logging.getLogger(__name__)

TOPICS_FILE = "kafka_topics.json"
BOOTSTRAP_FILE = "kafka_bootstrap.pickle"


class KafkaCommitter:
    def __init__(self, config: KafkaSinkConfig, ctx: SinkContext) -> None:
        self.config = config
        self.ctx = ctx
        self.codec: Any = message_codec(config, ctx.changefeed)
        self._path = Path(ctx.state_dir) / TOPICS_FILE

    def recover(self) -> None:
        return None  # a killed writer leaves nothing behind that a batch's retry does not replace

    def start(self, tables: Callable[[], Sequence[TableInfo]]) -> None:
        """simple with ``send-all-bootstrap-at-start``: a BOOTSTRAP of every table to its topic's partitions."""
        if not (self.config.bootstrap_enabled and self.config.send_all_bootstrap_at_start):
            return
        router = self.config.event_router()
        self._send([], [(router.topic_for_table(info.schema, info.table), info) for info in tables()])

    def commit(self, results: Sequence[Any], ddls: Sequence[DDLEvent]) -> None:
        written = {topic for r in results for topic, _ in r.topics}
        known = self._topics()
        if not written <= known:
            self._save(known | written)
        tracker = self._bootstrap_tracker() if self.config.bootstrap_enabled else None
        tables = [t for r in results for t in r.tables]
        bootstraps: list[tuple[str, TableInfo]] = []
        if tracker is not None:
            for topic, info, rows, bootstrapped in tables:
                tracker.record(topic, info, rows, bootstrapped=bootstrapped)
            bootstraps = tracker.due()
        if ddls or bootstraps:
            self._send(ddls, bootstraps)
        if tracker is not None and (tables or bootstraps):
            path = Path(self.ctx.state_dir) / BOOTSTRAP_FILE
            write_atomic(path, pickle.dumps(tracker), what="the bootstrap schedule")

    def _send(self, ddls: Sequence[DDLEvent], bootstraps: list[tuple[str, TableInfo]]) -> None:
        try:
            with clients(self.config, self.ctx.changefeed) as client:
                router = self.config.event_router()
                for ddl in ddls:
                    topic = router.topic_for_ddl(ddl)
                    message = self.codec.encode_ddl(ddl)
                    if message is None:  # avro outside TiCDC's testing mode sends no DDL
                        continue
                    value = message.value
                    for partition in ddl_partitions(self.config.protocol, client.topics.partitions(topic)):
                        client.producer.send(topic, partition, [value])
                selectors = self.config.column_selectors()
                for topic, info in bootstraps:
                    value = self.codec.encode_bootstrap(selectors.project(info)).value
                    count = client.topics.partitions(topic)
                    for partition in bootstrap_partitions(self.config.send_bootstrap_to_all_partition, count):
                        client.producer.send(topic, partition, [value])
                client.producer.flush()
        except SparkcdcError:
            discard(self.config, self.ctx.changefeed)
            raise

    def _bootstrap_tracker(self) -> BootstrapTracker:
        """TiCDC's bootstrap ticker runs at every batch commit, on a tracker kept in the state dir (wall clock: the
        commit may run in any process). It is saved after the BOOTSTRAPs went out: a failure repeats them (harmless
        to consumers) rather than skipping them. An unreadable tracker (e.g. written by another version) starts
        afresh: tables are announced again when their rows come."""
        path = Path(self.ctx.state_dir) / BOOTSTRAP_FILE
        interval, count = self.config.send_bootstrap_interval_in_sec, self.config.send_bootstrap_in_msg_count
        try:
            tracker = pickle.loads(path.read_bytes())
            if not isinstance(tracker, BootstrapTracker):
                raise TypeError(type(tracker).__name__)
        except FileNotFoundError:
            return BootstrapTracker(interval, count, clock=time.time)
        except Exception as e:  # any unreadable schedule is replaced, never fatal
            log.warning("%s: BOOTSTRAP schedule unreadable (%s); starting a new one", path, e)
            return BootstrapTracker(interval, count, clock=time.time)
        tracker.interval, tracker.count = interval, count  # the changefeed may have been updated
        return tracker

    def checkpoint(self, ts: int) -> None:
        """A watermark at ``ts`` to every partition (canal-json sends them only with ``enable-tidb-extension``, avro
        only in TiCDC's testing mode: ``enable-tidb-extension`` and ``avro-enable-watermark``)."""
        if self.config.protocol == "canal-json" and not self.config.enable_tidb_extension:
            return
        message = self.codec.encode_watermark(ts)
        if message is None:
            return
        value = message.value
        topics = sorted(self._topics() | {self.config.topic})
        try:
            with clients(self.config, self.ctx.changefeed) as client:
                for topic in topics:
                    for partition in range(client.topics.partitions(topic)):
                        client.producer.send(topic, partition, [value])
                client.producer.flush()
        except SparkcdcError:
            discard(self.config, self.ctx.changefeed)
            raise

    def _topics(self) -> set[str]:
        try:
            return set(json.loads(self._path.read_text()))
        except FileNotFoundError:
            return set()
        except (OSError, ValueError) as e:
            raise StorageError(f"{self._path}: cannot read the changefeed's Kafka topics: {e}") from e

    def _save(self, topics: set[str]) -> None:
        write_atomic(self._path, json.dumps(sorted(topics)).encode(), what="the changefeed's Kafka topics")
