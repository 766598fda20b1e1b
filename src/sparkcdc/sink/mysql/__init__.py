"""The MySQL sink (mysql://, mysql+ssl://, tidb://, tidb+ssl://): rows applied to a MySQL-compatible database,
effectively once, with DDLs at the barrier."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sparkcdc.model import TableInfo
from sparkcdc.sink.base import SinkContext


class _MysqlSink:
    redo = True  # [consistent] level = "eventual": the writers' batches go to the redo log first

    def config(self, uri: str, toml: Mapping[str, Any]) -> Any:
        from sparkcdc.sink.mysql.config import MysqlSinkConfig

        return MysqlSinkConfig.from_uri(uri, toml)

    def check(self, config: Any, tables: Callable[[], Sequence[TableInfo]]) -> None:
        from sparkcdc.sink.mysql.config import check_reachable

        check_reachable(config)
        if config.redo is not None:
            from sparkcdc.redo.writer import check_writable

            check_writable(config.redo)

    def encoder(self, config: Any, ctx: SinkContext) -> Any:
        from sparkcdc.sink.mysql.encoder import MysqlEncoder

        return MysqlEncoder(config)

    def writer(self, config: Any, ctx: SinkContext) -> Any:
        from sparkcdc.sink.mysql.writer import MysqlTaskWriter

        return MysqlTaskWriter(config, ctx)

    def committer(self, config: Any, ctx: SinkContext) -> Any:
        from sparkcdc.sink.mysql.committer import MysqlCommitter

        return MysqlCommitter(config, ctx)


SINK = _MysqlSink()
