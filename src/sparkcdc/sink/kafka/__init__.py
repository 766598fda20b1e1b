"""The Kafka sink (kafka://, kafka+ssl://): canal-json and simple (JSON, Avro) messages, TiCDC's routing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sparkcdc.model import TableInfo
from sparkcdc.sink.base import SinkContext


class _KafkaSink:
    def config(self, uri: str, toml: Mapping[str, Any]) -> Any:
        from sparkcdc.sink.kafka.config import KafkaSinkConfig

        return KafkaSinkConfig.from_uri(uri, toml)

    def check(self, config: Any, tables: Callable[[], Sequence[TableInfo]]) -> None:
        from sparkcdc.sink.kafka.client import check_reachable

        check_reachable(config)

    def encoder(self, config: Any, ctx: SinkContext) -> Any:
        from sparkcdc.sink.kafka.encoder import KafkaEncoder

        return KafkaEncoder(config, ctx.changefeed)

    def writer(self, config: Any, ctx: SinkContext) -> Any:
        from sparkcdc.sink.kafka.writer import KafkaTaskWriter

        return KafkaTaskWriter(config, ctx)

    def committer(self, config: Any, ctx: SinkContext) -> Any:
        from sparkcdc.sink.kafka.committer import KafkaCommitter

        return KafkaCommitter(config, ctx)


SINK = _KafkaSink()
