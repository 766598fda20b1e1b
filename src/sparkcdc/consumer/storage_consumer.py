"""The storage consumer's source: a storage-sink tree read as steps for a consumer target (``cdc storage-consumer``),
effectively once.

One *round* (:meth:`StorageSource.steps`) turns the tree into steps:

1. ``C`` = the ``metadata`` checkpoint, then list the tree (``storage_reader.scan``).
2. ``D`` = the smallest DDL version (schema file with a query) not yet executed downstream with ``D <= C``.
3. Every data stream ``(schema, table, partition)`` applies, in its file order and in parallel with the
   other streams, the rows with ``commit-ts < D`` and ``<= C`` (a DDL is a barrier for *all* tables: a
   RENAME or DROP DATABASE must not overtake another table's earlier rows).
4. Every DDL of version ``D`` runs (``USE <schema>`` first; "already done" errors ignored), then back to 2.
   When no DDL is left, the streams apply everything up to ``C``.

Per stream the position in the target's checkpoint is exact (version, date, file index, row offset) with the
largest applied commit-ts, so a crash at any moment resumes exactly. Rows whose commit-ts is *below* the
stream's applied commit-ts are replays of the producer's at-least-once delivery; the target skips them.

CSV written without ``include-commit-ts`` carries no commit-ts: such rows count as committed at their
version directory's TableVersion (a lower bound), so cross-table ordering degrades to TiCDC's own
(per table version) and replay detection to positions only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence

from sparkcdc.consumer.storage_reader import FileReader, ReaderConfig, SchemaEntry, Snapshot, StreamKey, scan
from sparkcdc.consumer.table_def import create_database_sql, create_table_sql
from sparkcdc.consumer.target import Target
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.model import RowChange, TableInfo
from sparkcdc.model.steps import DEFAULT_BATCH_ROWS, Batch, Checkpoint, DdlStep, EngineStats, RowsStep, Step
from sparkcdc.model.tso import physical
from sparkcdc.storage.external import ExternalStorage

log = logging.getLogger(__name__)

Definitions = tuple[TableInfo | None, TableInfo | None]


class StorageSource:
    """A storage-sink tree as a consumer source (``workers`` streams applied in parallel by the target).

    Raises SparkcdcError subclasses from :meth:`steps`: CorruptDataError naming the path for bad input,
    StorageError for storage failures.
    """

    def __init__(self, storage: ExternalStorage, reader: ReaderConfig, *, batch_rows: int = DEFAULT_BATCH_ROWS,
                 once: bool = False, start_over: bool = False, consumer: str = "default") -> None:  # fmt: skip
        self.storage = storage
        self.reader_cfg = reader
        self.batch_rows = max(1, batch_rows)
        self.once = once
        self.start_over = start_over  # --reset-checkpoints: the target forgets its positions, the tree is read again
        self.consumer = consumer
        self.storage_checkpoint = 0
        self.rounds = 0
        self.started = time.monotonic()
        self._schema_cache: dict[str, SchemaEntry] = {}
        self._local = threading.local()
        self._said_waiting = False  # the "waiting for the tree" line is logged once, not at every poll

    @property
    def bounded(self) -> bool:
        return self.once

    @property
    def finished(self) -> bool:
        return self.once and self.rounds > 0

    def retryable(self, error: SparkcdcError) -> bool:
        return error.retryable

    def start(self, target: Target) -> None:
        """The target's start check (``downstream_guard``) once, or forget its positions (start over)."""
        if self.start_over:
            log.warning("--reset-checkpoints: %d checkpoints of %r forgotten; the tree is applied from its beginning",
                        target.reset_checkpoints(), self.consumer)  # fmt: skip
            self.start_over = False
        else:
            target.check_start()

    def close(self) -> None:
        pass

    def _reader(self) -> FileReader:
        r: FileReader | None = getattr(self._local, "reader", None)
        if r is None:
            r = FileReader(self.storage, self.reader_cfg)
            self._local.reader = r
        return r

    def lag_seconds(self, stats: EngineStats) -> float:
        """How far the applied position (the storage checkpoint of the last finished round) is behind the
        current storage checkpoint."""
        if not self.storage_checkpoint or not stats.applied_ts:
            return 0.0
        return max(0.0, (physical(self.storage_checkpoint) - physical(stats.applied_ts)) / 1000)

    def progress_line(self, stats: EngineStats) -> str:
        rate = stats.rows_applied / max(time.monotonic() - self.started, 1e-9)
        return (
            f"rows={stats.rows_applied} (+{stats.upserts}/-{stats.deletes}) rate={rate:.0f}/s files={stats.files} "
            f"ddl={stats.ddls_executed} replayed-skipped={stats.replayed_skipped} "
            f"storage-checkpoint={self.storage_checkpoint} lag={self.lag_seconds(stats):.1f}s"
        )

    # -- one round ----------------------------------------------------------------------------------
    def steps(self, target: Target) -> Iterator[Step]:
        """Everything available up to the storage checkpoint; nothing while the tree has no ``metadata`` yet
        (nothing can be applied safely). Raises ConfigError with ``--once`` when there is no tree at all: a run
        that is to apply what is there and exit must not exit 0 having found nothing, which is most often a
        mistyped path or prefix (a long-running consumer waits for the tree instead, and says so once)."""
        snap = scan(self.storage, self.reader_cfg, self._schema_cache)
        self.rounds += 1
        if snap.checkpoint_ts is None:
            where = self.storage.uri.masked()
            if self.once and snap.empty:
                raise ConfigError(f"no storage-sink tree at {where}: the path does not exist or holds no file; "
                                  "check --upstream-uri (the changefeed's sink URI), or run without --once to wait "
                                  "for the changefeed to write it")  # fmt: skip
            if self.once:
                log.warning("no metadata file yet under %s: the changefeed has not written its first checkpoint, so "
                            "nothing can be applied yet; run again later, or without --once to wait", where)
                return
            if not self._said_waiting:
                log.info("no metadata file yet under %s%s; waiting for the changefeed to write it", where,
                            " (the path does not exist yet)" if snap.empty else "")  # fmt: skip
                self._said_waiting = True
            return
        target.reload()
        stats = target.stats
        if not stats.applied_ts:  # where a restarted consumer stands: a lower bound of the last round's
            stats.applied_ts = max((cp.commit_ts for cp in target.checkpoints.values()), default=0)
        self.storage_checkpoint = snap.checkpoint_ts
        yield from self._steps(target, snap, snap.checkpoint_ts)

    def _steps(self, target: Target, snap: Snapshot, c: int) -> Iterator[Step]:
        """The round's steps, computed lazily: which DDLs are pending depends on the DDLs applied before."""
        while True:
            pending = [e for e in snap.ddls() if c >= e.version > target.ddl_version(*_table_of(e))]
            d = pending[0].version if pending else None
            cutoff = c if d is None else min(c, d - 1)
            yield RowsStep({k: self._batches(target, snap, k, cutoff) for k in sorted(snap.streams)}, cutoff)
            if d is None:
                return
            for e in (e for e in pending if e.version == d):
                defn = e.definition
                yield DdlStep(defn.schema, defn.table, defn.query, defn.type, defn.table_version, source=e.path,
                              definitions=self._definitions(snap, e))  # fmt: skip

    def _definitions(self, snap: Snapshot, entry: SchemaEntry) -> Callable[[], Definitions]:
        """The table before the DDL (its newest earlier schema file in the tree, if any) and after it (the DDL's
        own schema file); none for a database-level DDL. Raises CorruptDataError for a schema file that cannot
        be read as a table."""

        def load() -> Definitions:
            defn = entry.definition
            if not defn.table:
                return None, None
            versions = snap.schemas.get((defn.schema, defn.table), {})
            earlier = [v for v in versions if v < entry.version]
            reader = self._reader()
            return (reader.table_info(versions[max(earlier)]) if earlier else None), reader.table_info(entry)

        return load

    def _batches(self, target: Target, snap: Snapshot, key: StreamKey, cutoff: int) -> Iterator[Batch]:
        """One stream's rows with commit-ts <= ``cutoff`` after its checkpoint, in batches of about
        ``batch_rows`` rows cut at file boundaries (runs in the target's worker thread)."""
        schema, table, part = key
        start = target.checkpoints.get(key) or Checkpoint(schema, table, part)
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
