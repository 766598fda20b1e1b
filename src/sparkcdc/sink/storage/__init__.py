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
        """The storage takes a probe file within 10 s, as TiCDC reaches its bucket at create (``storage.probe``):
        a missing bucket, a wrong endpoint or refused credentials is one line then. ``noop://`` keeps nothing."""
        if config.uri.scheme == "noop":
            return
        from sparkcdc.storage import probe
        from sparkcdc.storage.external import ExternalStorage

        storage = ExternalStorage.from_config(config)
        probe.check_writable(storage, f"the sink's storage {config.uri.masked()}")

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
