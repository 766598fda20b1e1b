"""The storage consumer: replay a storage-sink tree into MySQL/MariaDB, effectively once.

One *round* (``run_once``) does:

1. ``C`` = the ``metadata`` checkpoint, then list the tree (``storage_reader.scan``).
2. ``D`` = the smallest DDL version (schema file with a query) not yet executed downstream with ``D <= C``.
3. Every data stream ``(schema, table, partition)`` applies, in its file order and in parallel with the
   other streams, the rows with ``commit-ts < D`` and ``<= C`` (a DDL is a barrier for *all* tables: a
   RENAME or DROP DATABASE must not overtake another table's earlier rows).
4. Every DDL of version ``D`` runs (``USE <schema>`` first; "already done" errors ignored), then back to 2.
   When no DDL is left, the streams apply everything up to ``C``.

Per stream the downstream checkpoint holds the exact position (version, date, file index, row offset) and
the largest applied commit-ts. Each batch is one downstream transaction with its checkpoint row, so a crash
at any moment resumes exactly. Rows whose commit-ts is *below* the stream's applied commit-ts are replays of
the producer's at-least-once delivery: they are counted, logged and skipped. Rows with an equal commit-ts
are re-applied (the statements are idempotent) because a huge transaction may span files.

CSV written without ``include-commit-ts`` carries no commit-ts: such rows count as committed at their
version directory's TableVersion (a lower bound), so cross-table ordering degrades to TiCDC's own
(per table version) and replay detection to positions only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from sparkcdc.consumer.downstream import MysqlTarget
from sparkcdc.consumer.mysql_applier import DDL_PARTITION, Checkpoint, MysqlApplier
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
from sparkcdc.errors import SparkcdcError
from sparkcdc.model import DDLAction, RowChange
from sparkcdc.model.tso import physical
from sparkcdc.storage.external import ExternalStorage

log = logging.getLogger(__name__)

DEFAULT_BATCH_ROWS = 20000


@dataclass
class Progress:
    """Counters for the terminal; updated under a lock by worker threads."""

    rows_applied: int = 0
    upserts: int = 0
    deletes: int = 0
    replayed_skipped: int = 0
    files: int = 0
    ddls_executed: int = 0
    ddls_skipped: int = 0
    storage_checkpoint: int = 0
    applied_ts: int = 0
    rounds: int = 0
    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

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
    """Applies a storage-sink tree to a downstream. Not thread-safe itself; it runs its own worker pool.

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
        self.target = target
        self.changefeed = changefeed
        self.time_zone = time_zone
        self.workers = max(1, workers)
        self.batch_rows = max(1, batch_rows)
        self.progress = Progress()
        self.on_progress = on_progress
        self._schema_cache: dict[str, SchemaEntry] = {}
        self._local = threading.local()
        self._appliers: list[MysqlApplier] = []
        self._appliers_lock = threading.Lock()
        self._checkpoints: dict[StreamKey, Checkpoint] = {}
        self._known_tables: set[tuple[str, str]] = set()
        self._main = self._new_applier()

    def _new_applier(self) -> MysqlApplier:
        a = MysqlApplier(self.target, changefeed=self.changefeed, time_zone=self.time_zone)
        with self._appliers_lock:
            self._appliers.append(a)
        return a

    def _applier(self) -> MysqlApplier:
        a: MysqlApplier | None = getattr(self._local, "applier", None)
        if a is None:
            a = self._new_applier()
            self._local.applier = a
        return a

    def _reader(self) -> FileReader:
        r: FileReader | None = getattr(self._local, "reader", None)
        if r is None:
            r = FileReader(self.storage, self.reader_cfg)
            self._local.reader = r
        return r

    def close(self) -> None:
        with self._appliers_lock:
            for a in self._appliers:
                a.close()
            self._appliers.clear()

    # -- one round ----------------------------------------------------------------------------------
    def run_once(self) -> bool:
        """Apply everything available up to the storage checkpoint. Returns False when there is no
        ``metadata`` yet (nothing can be applied safely)."""
        snap = scan(self.storage, self.reader_cfg, self._schema_cache)
        self.progress.rounds += 1
        if snap.checkpoint_ts is None:
            log.info("no metadata file yet under %s; waiting", self.storage.uri.masked())
            return False
        c = snap.checkpoint_ts
        if not self.progress.applied_ts:
            self.progress.applied_ts = self._resume_ts()
        self.progress.storage_checkpoint = c
        self._checkpoints = self._main.load_checkpoints()
        while True:
            pending = [e for e in snap.ddls() if e.version <= c and e.version > self._ddl_done(e)]
            d = pending[0].version if pending else None
            cutoff = c if d is None else min(c, d - 1)
            self._apply_streams(snap, cutoff)
            if d is None:
                break
            for entry in (e for e in pending if e.version == d):
                self._execute_ddl(entry)
        self.progress.applied_ts = c  # every row with commit-ts <= c is applied now
        self._notify()
        return True

    def _resume_ts(self) -> int:
        """Where a restarted consumer stands: the largest commit-ts applied by any stream (a lower bound of
        the previous round's storage checkpoint)."""
        cps = self._main.load_checkpoints()
        return max((cp.commit_ts for cp in cps.values()), default=0)

    def _ddl_done(self, entry: SchemaEntry) -> int:
        cp = self._checkpoints.get((entry.definition.schema, entry.definition.table, DDL_PARTITION))
        return cp.table_version if cp is not None else 0

    def _execute_ddl(self, entry: SchemaEntry) -> None:
        defn = entry.definition
        key = (defn.schema, defn.table, DDL_PARTITION)
        prev = self._checkpoints.get(key)
        replay = prev is not None and prev.pending_version == defn.table_version
        cp = Checkpoint(defn.schema, defn.table, DDL_PARTITION, defn.table_version, commit_ts=defn.table_version)
        log.info("executing DDL version=%d schema=%s table=%s: %s", defn.table_version, defn.schema, defn.table,
                 defn.query)  # fmt: skip
        try:
            executed = self._main.execute_ddl(defn.schema, defn.query, defn.type, cp, replay=replay)
        except SparkcdcError as e:
            raise type(e)(f"{entry.path}: {e.message}", code=e.code, retryable=e.retryable) from None
        self._checkpoints[key] = cp
        with self.progress.lock:
            if executed:
                self.progress.ddls_executed += 1
            else:
                self.progress.ddls_skipped += 1
        if defn.type in (DDLAction.DROP_TABLE, DDLAction.RENAME_TABLE, DDLAction.RENAME_TABLES, DDLAction.DROP_SCHEMA):
            self._known_tables.clear()

    def _apply_streams(self, snap: Snapshot, cutoff: int) -> None:
        keys = sorted(snap.streams)
        if not keys:
            return
        errors: list[BaseException] = []
        if self.workers == 1 or len(keys) == 1:
            for k in keys:
                self._apply_stream(snap, k, cutoff)
            return
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="consumer") as pool:
            futures = [pool.submit(self._apply_stream, snap, k, cutoff) for k in keys]
            for f in futures:
                e = f.exception()
                if e is not None:
                    errors.append(e)
        if errors:
            raise errors[0]

    def _apply_stream(self, snap: Snapshot, key: StreamKey, cutoff: int) -> None:
        schema, table, part = key
        cp = self._checkpoints.get(key) or Checkpoint(schema, table, part)
        applier = self._applier()
        reader = self._reader()
        batch: list[RowChange] = []
        pos = cp
        skipped = 0
        files_done = 0

        def flush() -> None:
            nonlocal batch, cp, skipped, files_done
            if pos == cp and not batch:
                return
            stats = applier.apply(batch, pos)
            with self.progress.lock:
                self.progress.rows_applied += stats.rows_in
                self.progress.upserts += stats.upserts
                self.progress.deletes += stats.deletes
                self.progress.replayed_skipped += skipped
                self.progress.files += files_done
            if skipped:
                log.warning(
                    "skipped %d replayed rows with commit-ts below the applied checkpoint %d in %s.%s (partition %d)",
                    skipped, cp.commit_ts, schema, table, part,
                )  # fmt: skip
            cp = pos
            self._checkpoints[key] = pos
            batch, skipped, files_done = [], 0, 0
            self._notify()

        for f in snap.streams[key]:
            if f.sort_key < (cp.table_version, cp.date, cp.file_index):
                continue
            if f.table_version > cutoff:
                break
            entry = snap.schema_for(schema, table, f.table_version)
            rows = reader.decode(f, entry)
            start = pos.row_offset if f.sort_key == (pos.table_version, pos.date, pos.file_index) else 0
            if start >= len(rows) and start > 0:
                continue
            self._ensure_table(applier, entry)
            stop = False
            end = start
            max_ts = pos.commit_ts
            for i in range(start, len(rows)):
                row = rows[i]
                ts = row.commit_ts or f.table_version
                if ts > cutoff:
                    stop = True
                    break
                end = i + 1
                if row.commit_ts and row.commit_ts < pos.commit_ts:
                    skipped += 1
                    continue
                batch.append(row)
                max_ts = max(max_ts, ts)
            pos = Checkpoint(schema, table, part, f.table_version, f.date, f.index, end, max_ts)
            if end == len(rows):
                files_done += 1
            if stop:
                break
            if len(batch) >= self.batch_rows:
                flush()
        flush()

    def _ensure_table(self, applier: MysqlApplier, entry: SchemaEntry) -> None:
        """Create a table that has no CREATE TABLE in the tree (the changefeed started after it existed)."""
        defn = entry.definition
        key = (defn.schema, defn.table)
        if key in self._known_tables:
            return
        if not applier.table_exists(defn.schema, defn.table):
            log.warning("table %s.%s is missing downstream; creating it from %s", defn.schema, defn.table, entry.path)
            applier.execute(create_database_sql(defn.schema))
            applier.execute(create_table_sql(defn, source=entry.path))
        self._known_tables.add(key)

    def _notify(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress)

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


__all__ = ["DataFile", "Progress", "StorageConsumer"]
