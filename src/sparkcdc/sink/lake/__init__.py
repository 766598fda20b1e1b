"""The lake sinks (``delta://``, ``iceberg://``): each upstream table kept equal in a Delta or Iceberg table, one
MERGE per table per micro-batch, exactly once (:mod:`sparkcdc.lake`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sparkcdc.model import TableInfo
from sparkcdc.sink.base import SinkContext


class _LakeSink:
    def config(self, uri: str, toml: Mapping[str, Any]) -> Any:
        from sparkcdc.sink.lake.config import LakeSinkConfig

        return LakeSinkConfig.from_uri(uri)

    def check(self, config: Any, tables: Callable[[], Sequence[TableInfo]]) -> None:
        from sparkcdc.errors import ConfigError
        from sparkcdc.lake.keyless import check_change_log
        from sparkcdc.sink.lake.config import check_writable

        for info in tables():
            check_change_log(info, ConfigError)
        check_writable(config)

    def encoder(self, config: Any, ctx: SinkContext) -> Any:
        from sparkcdc.sink.lake.writer import LakeEncoder

        return LakeEncoder()

    def writer(self, config: Any, ctx: SinkContext) -> Any:
        from sparkcdc.sink.lake.writer import LakeTaskWriter

        return LakeTaskWriter(config, ctx)

    def committer(self, config: Any, ctx: SinkContext) -> Any:
        from sparkcdc.sink.lake.committer import LakeCommitter

        return LakeCommitter(config, ctx)


SINK = _LakeSink()
