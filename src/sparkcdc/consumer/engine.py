"""The apply engine for ordered sources: steps of rows in commit-ts order and DDL barriers, applied to a MySQL
downstream effectively once.

A source (the Kafka source) hands over :class:`~sparkcdc.consumer.kafka_order.Step` s: either every row with
commit-ts <= ``upto`` that was not applied yet, in commit-ts order, or one DDL whose earlier rows were all applied.
Per table the downstream checkpoint row (``sparkcdc_consumer.checkpoint``, partition ``ORDERED_PARTITION``) holds
the largest applied commit-ts and is written in the same transaction as the rows; the table's DDL stream (partition
``DDL_PARTITION``, as the storage consumer's) holds the last DDL run. So a row at or below its table's checkpoint,
or a DDL at or below the DDL stream's, is a replay of at-least-once delivery and is skipped. A transaction is
never split over two downstream transactions, so a crash leaves each table exactly at a transaction boundary.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sparkcdc.consumer.kafka_order import Step
from sparkcdc.consumer.mysql_applier import DDL_PARTITION, Checkpoint, MysqlApplier
from sparkcdc.model import DDLEvent, RowChange

log = logging.getLogger(__name__)

ORDERED_PARTITION = -2  # checkpoint rows of tables applied from an ordered source (storage streams use >= 0)
DEFAULT_BATCH_ROWS = 20000


@dataclass
class EngineStats:
    rows_applied: int = 0
    upserts: int = 0
    deletes: int = 0
    replayed_skipped: int = 0
    ddls_executed: int = 0
    ddls_skipped: int = 0
    applied_ts: int = 0


class ApplyEngine:
    """Applies steps through one downstream connection. Raises SparkcdcError from :meth:`apply` (``retryable``
    for connection loss, deadlocks); after an error the step may be applied again."""

    def __init__(self, applier: MysqlApplier, *, batch_rows: int = DEFAULT_BATCH_ROWS) -> None:
        self.applier = applier
        self.batch_rows = max(1, batch_rows)
        self.stats = EngineStats()
        self._checkpoints = {
            key: cp for key, cp in applier.load_checkpoints().items() if key[2] in (ORDERED_PARTITION, DDL_PARTITION)
        }

    def apply(self, step: Step) -> None:
        if step.ddl is not None:
            self._ddl(step.ddl)
        else:
            self._rows(step.rows)
        self.stats.applied_ts = max(self.stats.applied_ts, step.upto)

    def _rows(self, rows: Sequence[RowChange]) -> None:
        tables: dict[tuple[str, str], list[RowChange]] = {}
        for r in rows:
            tables.setdefault((r.table.schema, r.table.table), []).append(r)
        for (schema, table), changes in tables.items():
            key = (schema, table, ORDERED_PARTITION)
            done = self._checkpoints[key].commit_ts if key in self._checkpoints else 0
            fresh = [r for r in changes if r.commit_ts > done]
            self.stats.replayed_skipped += len(changes) - len(fresh)
            for batch in _batches(fresh, self.batch_rows):
                cp = Checkpoint(schema, table, ORDERED_PARTITION, commit_ts=batch[-1].commit_ts)
                applied = self.applier.apply(batch, cp)
                self._checkpoints[key] = cp
                self.stats.rows_applied += applied.rows_in
                self.stats.upserts += applied.upserts
                self.stats.deletes += applied.deletes

    def _ddl(self, ddl: DDLEvent) -> None:
        key = (ddl.schema, ddl.table, DDL_PARTITION)
        current = self._checkpoints.get(key)
        if current is not None and current.table_version >= ddl.commit_ts and not current.pending_version:
            self.stats.ddls_skipped += 1
            return
        replay = current is not None and current.pending_version == ddl.commit_ts
        cp = Checkpoint(ddl.schema, ddl.table, DDL_PARTITION, table_version=ddl.commit_ts)
        if self.applier.execute_ddl(ddl.schema, ddl.query, int(ddl.action), cp, replay=replay):
            self.stats.ddls_executed += 1
        else:
            self.stats.ddls_skipped += 1
        self._checkpoints[key] = cp


def _batches(rows: Sequence[RowChange], size: int) -> Iterator[Sequence[RowChange]]:
    """Batches of about ``size`` rows, cut only between transactions (commit-ts changes)."""
    start = 0
    while start < len(rows):
        end = min(start + size, len(rows))
        while end < len(rows) and rows[end].commit_ts == rows[end - 1].commit_ts:
            end += 1
        yield rows[start:end]
        start = end
