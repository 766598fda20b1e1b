"""``cdc redo apply``'s source: a changefeed's redo log read as steps for its MySQL downstream.

The log (``redo.reader``) runs from its meta's checkpoint ts to its resolved ts; every file is read and checked
before anything is applied (a damaged or cut file stops the apply naming it, the downstream untouched). The records
are then applied as the MySQL sink applies them: per table, TiCDC's key slots (``sink.mysql.conflict``) with the
sink's checkpoint rows in ``tidb_cdc.checkpoint`` under the changefeed's own name, and each DDL at its barrier
through the same DDL stream. So the apply continues exactly where the sink stopped: what the sink had applied past
the meta's checkpoint (a batch's tables and slots are applied in parallel) is skipped, not applied twice, and an
apply that is killed, or run again, skips what it did. Afterwards every table is at the log's resolved ts: the
upstream's state at one point.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Iterator
from pathlib import Path

from sparkcdc.consumer.target import Target
from sparkcdc.errors import CorruptDataError, SparkcdcError
from sparkcdc.model import RowChange
from sparkcdc.model.steps import AppliedRow, DdlStep, EngineStats, RenderedRow, RowsStep, Step
from sparkcdc.redo.log_file import DdlRecord, RowsRecord
from sparkcdc.redo.reader import RedoLog, Staged, stage
from sparkcdc.sink.mysql.conflict import plan_steps
from sparkcdc.sink.mysql.encoder import as_rendered
from sparkcdc.sink.row_payload import unpack
from sparkcdc.storage.external import ExternalStorage

log = logging.getLogger(__name__)

WINDOW_ROWS = 200_000  # rows planned at once (cut between transactions): bounds the memory of one step


class RedoSource:
    """One pass over the redo log of ``changefeed`` (None: the storage's only one) in ``storage``; remote files are
    copied into ``tmp_dir``. Reading the log's names and meta happens here (the command needs the changefeed to
    open its target); raises ConfigError, CorruptDataError, StorageError."""

    def __init__(self, storage: ExternalStorage, tmp_dir: Path, *, changefeed: str | None = None,
                 batch_rows: int = 256) -> None:  # fmt: skip
        self.storage = storage
        self.tmp_dir = tmp_dir
        self.batch_rows = max(1, batch_rows)
        self.log = RedoLog.read(storage, changefeed)
        self.finished = False
        self._staged: list[Staged] = []

    @property
    def bounded(self) -> bool:
        return True

    def retryable(self, error: SparkcdcError) -> bool:
        return error.retryable

    def start(self, target: Target) -> None:
        """Check every file before anything is applied (and copy remote ones into the tmp dir); then where the
        downstream stands (again after a retry: a failed step may have committed some of its streams)."""
        self._staged = stage(self.storage, self.log, self.tmp_dir)
        target.reload()

    def close(self) -> None:
        pass

    def progress_line(self, stats: EngineStats) -> str:
        return (f"rows={stats.rows_applied} (+{stats.upserts}/-{stats.deletes}) ddl={stats.ddls_executed} "
                f"replayed-skipped={stats.replayed_skipped} applied-ts={stats.applied_ts} "
                f"resolved-ts={self.log.resolved_ts}")  # fmt: skip

    def steps(self, target: Target) -> Iterator[Step]:
        rows: list[AppliedRow] = []
        for staged in self._staged:
            name = staged.name.format()
            for record in staged.read():
                if isinstance(record, DdlRecord):
                    yield from self._rows(rows, record.commit_ts - 1)
                    rows = []
                    yield DdlStep(record.schema, record.table, record.query, record.action, record.commit_ts,
                                  source=f"redo log {name}")  # fmt: skip
                    continue
                if len(rows) >= WINDOW_ROWS and rows[-1].commit_ts != record.commit_ts:
                    yield from self._rows(rows, rows[-1].commit_ts)
                    rows = []
                rows.extend(_rows_of(record, name))
        yield from self._rows(rows, self.log.resolved_ts)
        self.finished = True
        log.info("redo log of %s applied up to its resolved ts %d", self.log.changefeed, self.log.resolved_ts)

    def _rows(self, rows: list[AppliedRow], upto: int) -> Iterator[Step]:
        if not rows:
            yield RowsStep({}, upto)
            return
        yield from plan_steps(as_rendered(rows), upto, self.batch_rows)


def _rows_of(record: RowsRecord, name: str) -> list[RowChange] | list[RenderedRow]:
    try:
        rows = unpack(record.payload, record.table)
    except (pickle.UnpicklingError, ValueError, TypeError, EOFError) as e:
        raise CorruptDataError(f"redo log {name}: the rows of {record.table.schema}.{record.table.table} at "
                               f"commit-ts {record.commit_ts} cannot be read ({e}); was the file written by "
                               "another program?") from None  # fmt: skip
    if len(rows) != record.nrows:
        raise CorruptDataError(f"redo log {name}: {len(rows)} rows of {record.table.schema}.{record.table.table} at "
                               f"commit-ts {record.commit_ts} where {record.nrows} were written")  # fmt: skip
    return rows
