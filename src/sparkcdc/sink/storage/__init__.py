"""The storage sink (file, s3, gcs, azure, noop): TiCDC's storage layout with csv and canal-json."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sparkcdc.model import TableInfo
from sparkcdc.sink.base import SinkContext
from sparkcdc.storage.sink_config import StorageSinkConfig


class _StorageSink:
    def config(self, uri: str, toml: Mapping[str, Any]) -> StorageSinkConfig:
        return StorageSinkConfig.from_uri(uri, toml)

    def check(self, config: StorageSinkConfig, tables: Callable[[], Sequence[TableInfo]]) -> None:
        return None

    def encoder(self, config: StorageSinkConfig, ctx: SinkContext) -> Any:
        from sparkcdc.sink.storage.encoder import StorageEncoder

        return StorageEncoder(config)

    def writer(self, config: StorageSinkConfig, ctx: SinkContext) -> Any:
        from sparkcdc.sink.storage.writer import StorageTaskWriter

        return StorageTaskWriter(config, ctx)

    def committer(self, config: StorageSinkConfig, ctx: SinkContext) -> Any:
        from sparkcdc.sink.storage.committer import StorageCommitter

        return StorageCommitter(config)


SINK = _StorageSink()
