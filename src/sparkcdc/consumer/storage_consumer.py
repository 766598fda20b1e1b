"""The storage consumer: replay a storage-sink tree into MySQL/MariaDB, effectively once, as a source of the
:class:`~sparkcdc.consumer.engine.ApplyEngine`.

One *round* (``run_once``) turns the tree into engine steps:

1. ``C`` = the ``metadata`` checkpoint, then list the tree (``storage_reader.scan``).
2. ``D`` = the smallest DDL version (schema file with a query) not yet executed downstream with ``D <= C``.
3. Every data stream ``(schema, table, partition)`` applies, in its file order and in parallel with the
   other streams, the rows with ``commit-ts < D`` and ``<= C`` (a DDL is a barrier for *all* tables: a
   RENAME or DROP DATABASE must not overtake another table's earlier rows).
4. Every DDL of version ``D`` runs (``USE <schema>`` first; "already done" errors ignored), then back to 2.
   When no DDL is left, the streams apply everything up to ``C``.

Per stream the position in the engine's checkpoint is exact (version, date, file index, row offset) with the
largest applied commit-ts, so a crash at any moment resumes exactly. Rows whose commit-ts is *below* the
stream's applied commit-ts are replays of the producer's at-least-once delivery; the engine skips them.

CSV written without ``include-commit-ts`` carries no commit-ts: such rows count as committed at their
version directory's TableVersion (a lower bound), so cross-table ordering degrades to TiCDC's own
(per table version) and replay detection to positions only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from sparkcdc.consumer import downstream_guard
from sparkcdc.consumer.engine import DEFAULT_BATCH_ROWS, ApplyEngine, Batch, DdlStep, EngineStats, RowsStep, Step
from sparkcdc.consumer.storage_reader import (
    DataFile,
    FileReader,
    ReaderConfig,
    SchemaEntry,
    Snapshot,
    StreamKey,
    scan,
)
from sparkcdc.consumer.table_def import create_database_sql, create_table_sql
from sparkcdc.model import RowChange
from sparkcdc.model.tso import physical
from sparkcdc.mysql.applier import Checkpoint
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.storage.external import ExternalStorage

log = logging.getLogger(__name__)


@dataclass
class Progress(EngineStats):
    """The engine's counters and the storage checkpoint, for the terminal."""

    storage_checkpoint: int = 0
    rounds: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def lag_seconds(self) -> float:
        """How far the applied position (the storage checkpoint of the last finished round) is behind the
        current storage checkpoint."""
        if not self.storage_checkpoint or not self.applied_ts:
            return 0.0
        return max(0.0, (physical(self.storage_checkpoint) - physical(self.applied_ts)) / 1000)

    def line(self) -> str:
        rate = self.rows_applied / max(time.monotonic() - self.started, 1e-9)
        return (
            f"rows={self.rows_applied} (+{self.upserts}/-{self.deletes}) rate={rate:.0f}/s files={self.files} "
            f"ddl={self.ddls_executed} replayed-skipped={self.replayed_skipped} "
            f"storage-checkpoint={self.storage_checkpoint} lag={self.lag_seconds:.1f}s"
        )


class StorageConsumer:
    """Applies a storage-sink tree to a downstream through the apply engine (``workers`` streams in parallel).

    Raises SparkcdcError subclasses from ``run_once``: CorruptDataError naming the path for bad input,
    StorageError for storage failures, downstream errors with ``retryable`` set when a retry may help.
    """

    def __init__(
        self,
        storage: ExternalStorage,
        reader: ReaderConfig,
        target: MysqlTarget,
        *,
        changefeed: str = "default",
        time_zone: str | None = None,
        workers: int = 4,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.storage = storage
        self.reader_cfg = reader
        self.batch_rows = max(1, batch_rows)
        self.progress = Progress()
        self._schema_cache: dict[str, SchemaEntry] = {}
        self._local = threading.local()
        self._guarded = False
        notify = (lambda: on_progress(self.progress)) if on_progress is not None else None
        self.engine = ApplyEngine(target, changefeed=changefeed, time_zone=time_zone, workers=workers,
                                  stats=self.progress, on_progress=notify)  # fmt: skip

    def _reader(self) -> FileReader:
        r: FileReader | None = getattr(self._local, "reader", None)
        if r is None:
            r = FileReader(self.storage, self.reader_cfg)
            self._local.reader = r
        return r

    def close(self) -> None:
        self.engine.close()

    # -- one round ----------------------------------------------------------------------------------
    def run_once(self) -> bool:
        """Apply everything available up to the storage checkpoint. Returns False when there is no
        ``metadata`` yet (nothing can be applied safely). The first round first checks that the downstream still
        has what the checkpoints say was applied (``downstream_guard``)."""
        if not self._guarded:
            downstream_guard.check(self.engine.main_applier)
            self._guarded = True
        snap = scan(self.storage, self.reader_cfg, self._schema_cache)
        self.progress.rounds += 1
        if snap.checkpoint_ts is None:
            log.info("no metadata file yet under %s; waiting", self.storage.uri.masked())
            return False
        self.engine.reload()
        if not self.progress.applied_ts:  # where a restarted consumer stands: a lower bound of the last round's
            self.progress.applied_ts = max((cp.commit_ts for cp in self.engine.checkpoints.values()), default=0)
        self.progress.storage_checkpoint = snap.checkpoint_ts
        for step in self._steps(snap, snap.checkpoint_ts):
            self.engine.apply(step)
        return True

    def _steps(self, snap: Snapshot, c: int) -> Iterator[Step]:
        """The round's steps, computed lazily: which DDLs are pending depends on the DDLs applied before."""
        while True:
            pending = [e for e in snap.ddls() if c >= e.version > self.engine.ddl_version(*_table_of(e))]
            d = pending[0].version if pending else None
            cutoff = c if d is None else min(c, d - 1)
            yield RowsStep({k: self._batches(snap, k, cutoff) for k in sorted(snap.streams)}, cutoff)
            if d is None:
                return
            for e in (e for e in pending if e.version == d):
                defn = e.definition
                yield DdlStep(defn.schema, defn.table, defn.query, defn.type, defn.table_version, source=e.path)

    def _batches(self, snap: Snapshot, key: StreamKey, cutoff: int) -> Iterator[Batch]:
        """One stream's rows with commit-ts <= ``cutoff`` after its checkpoint, in batches of about
        ``batch_rows`` rows cut at file boundaries (runs in the engine's worker thread)."""
        schema, table, part = key
        start = self.engine.checkpoints.get(key) or Checkpoint(schema, table, part)
        reader = self._reader()
        batch: list[RowChange] = []
        pos = start
        files = 0
        create: Callable[[], Sequence[str]] | None = None
        for f in snap.streams[key]:
            if f.sort_key < (pos.table_version, pos.date, pos.file_index):
                continue
            if f.table_version > cutoff:
                break
            entry = snap.schema_for(schema, table, f.table_version)
            rows = reader.decode(f, entry)
            first = pos.row_offset if f.sort_key == (pos.table_version, pos.date, pos.file_index) else 0
            if first >= len(rows) and first > 0:
                continue
            end, stop, max_ts = first, False, pos.commit_ts
            for i in range(first, len(rows)):
                ts = rows[i].commit_ts or f.table_version
                if ts > cutoff:
                    stop = True
                    break
                end = i + 1
                max_ts = max(max_ts, ts)
            batch.extend(rows[first:end])
            if create is None:
                create = _creator(entry)
            pos = Checkpoint(schema, table, part, f.table_version, f.date, f.index, end, max_ts)
            files += end == len(rows)
            if stop:
                break
            if len(batch) >= self.batch_rows:
                yield Batch(batch, pos, create, files)
                batch, files, create, start = [], 0, None, pos
        if batch or pos != start:
            yield Batch(batch, pos, create, files)

    # -- loop ---------------------------------------------------------------------------------------
    def run(self, interval: float, *, once: bool = False, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Poll every ``interval`` seconds until ``should_stop()`` (or after one round when ``once``)."""
        try:
            while True:
                self.run_once()
                if once or should_stop():
                    return
                deadline = time.monotonic() + interval
                while time.monotonic() < deadline:
                    if should_stop():
                        return
                    time.sleep(min(0.2, interval))
        finally:
            self.close()


def _table_of(entry: SchemaEntry) -> tuple[str, str]:
    return entry.definition.schema, entry.definition.table


def _creator(entry: SchemaEntry) -> Callable[[], Sequence[str]]:
    """CREATE statements for a table that has no CREATE TABLE in the tree (the changefeed started after it
    existed), rebuilt from its schema file."""
    defn = entry.definition

    def create() -> Sequence[str]:
        log.warning("table %s.%s is missing downstream; creating it from %s", defn.schema, defn.table, entry.path)
        return [create_database_sql(defn.schema), create_table_sql(defn, source=entry.path)]

    return create


__all__ = ["DataFile", "Progress", "StorageConsumer"]
