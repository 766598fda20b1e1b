"""Driver side: a batch's DDLs at the barrier, after every row of the batch is durable downstream.

DDLs run through the apply engine's DDL stream (``tidb_cdc.checkpoint``, partition -1): marked pending, executed
(``USE`` its schema first), marked done; a replayed batch skips a DDL already done and re-runs a pending one
tolerating "already exists"-type errors, as TiCDC's ``ddl_ts`` table does. Retryable failures are retried for a
while (:mod:`~sparkcdc.sink.mysql.retry`); others fail the changefeed with the downstream's error. With
``enable-sync-point``, checkpoints become sync points (:mod:`~sparkcdc.sink.mysql.syncpoint`); with a redo log, each
checkpoint goes to its meta (:mod:`~sparkcdc.redo.meta`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.model import DDLEvent, TableInfo
from sparkcdc.model.steps import DdlStep
from sparkcdc.sink.base import SinkContext
from sparkcdc.sink.mysql.config import MysqlSinkConfig
from sparkcdc.sink.mysql.retry import with_retries
from sparkcdc.sink.mysql.syncpoint import SyncPoints
from sparkcdc.sink.mysql.writer import engine_for


class MysqlCommitter:
    def __init__(self, config: MysqlSinkConfig, ctx: SinkContext) -> None:
        self.config = config
        self.ctx = ctx
        self._sync_points: SyncPoints | None = None

    def recover(self) -> None:
        return None  # a killed writer leaves nothing behind that a batch's retry does not replace

    def start(self, tables: Callable[[], Sequence[TableInfo]]) -> None:
        return None

    def commit(self, results: Sequence[Any], ddls: Sequence[DDLEvent]) -> None:
        if not ddls:
            return
        for ddl in ddls:
            step = DdlStep(ddl.schema, ddl.table, ddl.query, int(ddl.action), ddl.commit_ts)

            def run(step: DdlStep = step) -> None:
                with engine_for(self.config, self.ctx.changefeed) as engine:  # connects: may fail too
                    engine.reload()
                    engine.apply(step)

            with_retries(run, f"executing DDL {ddl.query!r} on {self.config.target}")

    def checkpoint(self, ts: int) -> None:
        if self.config.redo is not None:  # after the batch: its log files were written before it was applied
            from sparkcdc.redo import meta

            meta.advance(self.config.redo, self.ctx.changefeed, ts, self.config.time_zone)
        if not self.config.enable_sync_point:
            return
        def write() -> bool:
            with engine_for(self.config, self.ctx.changefeed) as engine:  # connects: may fail too
                if self._sync_points is None:
                    self._sync_points = SyncPoints(engine.main_applier, self.ctx.changefeed, self.ctx.sink_start_ts,
                                                   self.config.sync_point_interval_ns,
                                                   self.config.sync_point_retention_ns)  # fmt: skip
                return self._sync_points.checkpoint(ts)

        with_retries(write, f"writing a sync point to {self.config.target}")
