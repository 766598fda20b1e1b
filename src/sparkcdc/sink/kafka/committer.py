"""Driver side: a batch's DDLs after all its rows are acknowledged, then the watermark that acknowledges it.

Spark calls the commit only after every writer task returned, and a task returns only when the broker has
acknowledged its messages, so a DDL is sent after every earlier row, as TiCDC's MQ sink sends a DDL only after
flushing the DML before it. DDL messages go to every partition of the table's topic (canal-json: partition 0),
watermarks to every partition of every topic the changefeed has written and of the default topic. The topics
written are remembered in the changefeed's state dir, so watermarks keep reaching every partition after a
restart. A replayed batch sends its DDL again: consumers skip a DDL at or below the one they applied.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sparkcdc.codec.base import message_encoder
from sparkcdc.errors import SparkcdcError, StorageError
from sparkcdc.model import DDLEvent, TableInfo
from sparkcdc.sink.base import SinkContext
from sparkcdc.sink.kafka.client import clients, discard
from sparkcdc.sink.kafka.config import KafkaSinkConfig
from sparkcdc.sink.kafka.dispatcher import bootstrap_partitions, ddl_partitions

TOPICS_FILE = "kafka_topics.json"


class KafkaCommitter:
    def __init__(self, config: KafkaSinkConfig, ctx: SinkContext) -> None:
        self.config = config
        self.ctx = ctx
        self.codec: Any = message_encoder(config.protocol, config.codec_options())
        self._path = Path(ctx.state_dir) / TOPICS_FILE

    def start(self, tables: Callable[[], Sequence[TableInfo]]) -> None:
        """simple with ``send-all-bootstrap-at-start``: a BOOTSTRAP of every table to its topic's partitions."""
        if not (self.config.bootstrap_enabled and self.config.send_all_bootstrap_at_start):
            return
        router, selectors = self.config.event_router(), self.config.column_selectors()
        try:
            client = clients(self.config, self.ctx.changefeed)
            for info in tables():
                topic = router.topic_for_table(info.schema, info.table)
                value = self.codec.encode_bootstrap(selectors.project(info)).value
                count = client.topics.partitions(topic)
                for partition in bootstrap_partitions(self.config.send_bootstrap_to_all_partition, count):
                    client.producer.send(topic, partition, [value])
            client.producer.flush()
        except SparkcdcError:
            discard(self.config, self.ctx.changefeed)
            raise

    def commit(self, results: Sequence[Any], ddls: Sequence[DDLEvent]) -> None:
        written = {topic for r in results for topic, _ in r.topics}
        known = self._topics()
        if not written <= known:
            self._save(known | written)
        if not ddls:
            return
        try:
            client = clients(self.config, self.ctx.changefeed)
            router = self.config.event_router()
            for ddl in ddls:
                topic = router.topic_for_ddl(ddl)
                value = self.codec.encode_ddl(ddl).value
                for partition in ddl_partitions(self.config.protocol, client.topics.partitions(topic)):
                    client.producer.send(topic, partition, [value])
            client.producer.flush()
        except SparkcdcError:
            discard(self.config, self.ctx.changefeed)
            raise

    def checkpoint(self, ts: int) -> None:
        """A watermark at ``ts`` to every partition (canal-json sends them only with ``enable-tidb-extension``)."""
        if self.config.protocol == "canal-json" and not self.config.enable_tidb_extension:
            return
        value = self.codec.encode_watermark(ts).value
        topics = sorted(self._topics() | {self.config.topic})
        try:
            client = clients(self.config, self.ctx.changefeed)
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
        tmp = self._path.with_name(TOPICS_FILE + ".tmp")
        try:
            tmp.write_text(json.dumps(sorted(topics)))
            os.replace(tmp, self._path)
        except OSError as e:
            raise StorageError(f"{self._path}: cannot record the changefeed's Kafka topics: {e.strerror}") from e
