"""Executor side, sink stage: a task's payloads (whole tables) -> rows applied downstream, effectively once.

The task's rows go through the MySQL apply engine (:class:`~sparkcdc.mysql.engine.ApplyEngine`, also the consumers'
MySQL target) in the steps TiCDC's conflict detection gives them (:mod:`~sparkcdc.sink.mysql.conflict`: per table,
transactions on different key slots in parallel, those on the same keys in commit order), upstream transactions
grouped into downstream transactions of about ``max-txn-row`` rows (an upstream transaction is never split: its
table's part commits atomically), each with its slot's checkpoint row in ``tidb_cdc.checkpoint`` in the same
downstream transaction. A batch Spark replays after a crash therefore skips every transaction at or below its slot's
checkpoint and applies the rest: a kill -9 at any point leaves every slot of every table exactly at a transaction
boundary. The engine (and its connections) stays in the worker process while the changefeed uses it, so batches
reuse connections.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager

from sparkcdc.model.steps import AppliedRow
from sparkcdc.mysql.engine import ApplyEngine
from sparkcdc.sink.base import Routed, SinkContext, by_table
from sparkcdc.sink.mysql.config import MysqlSinkConfig
from sparkcdc.sink.mysql.conflict import SLOTS, plan_steps
from sparkcdc.sink.mysql.encoder import as_rendered
from sparkcdc.sink.mysql.retry import with_retries
from sparkcdc.sink.mysql.session import CHECKPOINT_SCHEMA, session_statements
from sparkcdc.sink.row_payload import unpack
from sparkcdc.sink.worker_cache import WorkerCache

_TABLE_THREADS = SLOTS  # streams (tables, key slots of a table) applied in parallel, one connection each
_engines: WorkerCache[tuple[str, MysqlSinkConfig], ApplyEngine] = WorkerCache(ApplyEngine.close)


def engine_for(config: MysqlSinkConfig, changefeed: str) -> AbstractContextManager[ApplyEngine]:
    """This process's engine for the changefeed, held for a ``with`` block (its connections reconnect after errors;
    closed once idle: ``worker_cache``)."""
    return _engines.use((changefeed, config), lambda: ApplyEngine(
        config.target, changefeed=changefeed, time_zone=config.time_zone, workers=_TABLE_THREADS,
        checkpoint_schema=CHECKPOINT_SCHEMA, session=session_statements(config),
    ))  # fmt: skip


class MysqlTaskWriter:
    def __init__(self, config: MysqlSinkConfig, ctx: SinkContext) -> None:
        self.config = config
        self.ctx = ctx

    def write(self, payloads: Iterable[Routed]) -> int:
        """Returns the number of rows handed to the downstream (replays included). The conflict slots take each
        table's payloads in the commit order they come in (checked by :func:`~sparkcdc.sink.base.by_table`: a
        SparkcdcError before anything is applied when they do not)."""
        tables = by_table(payloads)
        if not tables:
            return 0
        rows: list[AppliedRow] = []
        for chunks in tables.values():
            table_rows: list[AppliedRow] = []
            for c in chunks:
                table_rows.extend(unpack(c.data, c.info))
            rows.extend(as_rendered(table_rows))
        steps = plan_steps(rows, max(r.commit_ts for r in rows), self.config.max_txn_row)

        def apply() -> None:
            with engine_for(self.config, self.ctx.changefeed) as engine:  # connects: may fail too
                engine.reload()  # after a failure some streams committed: their checkpoints moved
                for step in steps:
                    engine.apply(step)

        with_retries(apply, f"writing {len(rows)} rows to {self.config.target}")
        return len(rows)
