"""The MySQL target of the consumers, and the MySQL sink's writer: steps (``sparkcdc.model.steps``) applied to a
MySQL-compatible downstream in order, effectively once.

Streams of a :class:`~sparkcdc.model.steps.RowsStep` are applied in parallel, one downstream connection per worker,
each stream's batches in order; a batch is ONE downstream transaction together with its checkpoint row
(``sparkcdc.mysql.applier``). A :class:`~sparkcdc.model.steps.DdlStep` runs after every earlier step is durable, with
the table's DDL stream marking it pending, then done.

Dedup against the downstream checkpoint is the engine's: a DDL at or below its table's DDL stream is skipped; a
row is skipped when its commit-ts is below what its stream applied (a producer's at-least-once replay). Streams of
*ordered* sources (partition ``ORDERED_PARTITION`` and below) are only ever checkpointed between transactions, so
there a row at the checkpoint's commit-ts is a replay too; storage streams may stop inside a transaction that spans
files, and their sources resume by position, so an equal commit-ts is applied (statements are idempotent). Rows and
DDLs without a commit-ts (0: canal-json without the TiDB extension, CSV without ``include-commit-ts``) are never taken
for replays: they are always applied, and their batches may be cut anywhere (no transaction end is known).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from sparkcdc.errors import SparkcdcError
from sparkcdc.filter.system_schemas import CONSUMER_SCHEMA
from sparkcdc.model import DDLAction
from sparkcdc.model.steps import (
    DDL_PARTITION,
    ORDERED_PARTITION,
    AppliedRow,
    Batch,
    Checkpoint,
    DdlStep,
    EngineStats,
    Step,
    StreamKey,
)
from sparkcdc.mysql import downstream_guard
from sparkcdc.mysql.applier import MysqlApplier
from sparkcdc.mysql.target import MysqlTarget

log = logging.getLogger(__name__)

_FORGETS_TABLES = frozenset({DDLAction.DROP_TABLE, DDLAction.RENAME_TABLE, DDLAction.RENAME_TABLES,
                             DDLAction.DROP_SCHEMA})  # fmt: skip


class ApplyEngine:
    """Applies steps through ``workers`` downstream connections. Raises SparkcdcError from :meth:`apply`
    (``retryable`` for connection loss, deadlocks); after an error the source resumes from :attr:`checkpoints`.
    ``session`` statements run on every new connection (the MySQL sink marks its writes with them)."""

    def __init__(
        self,
        target: MysqlTarget,
        *,
        changefeed: str = "default",
        time_zone: str | None = None,
        workers: int = 1,
        stats: EngineStats | None = None,
        on_progress: Callable[[], None] | None = None,
        checkpoint_schema: str = CONSUMER_SCHEMA,
        session: Sequence[str] = (),
    ) -> None:
        self.target = target
        self.checkpoint_schema = checkpoint_schema
        self.session = tuple(session)
        self.changefeed = changefeed
        self.time_zone = time_zone
        self.workers = max(1, workers)
        self.stats = stats if stats is not None else EngineStats()
        self.on_progress = on_progress
        self._local = threading.local()
        self._pool: ThreadPoolExecutor | None = None  # one per engine: its threads' connections are reused
        self._appliers: list[MysqlApplier] = []
        self._appliers_lock = threading.Lock()
        self._known_tables: set[tuple[str, str]] = set()
        self._main = self._new_applier()
        self.checkpoints: dict[StreamKey, Checkpoint] = {}
        self.reload()

    def _new_applier(self) -> MysqlApplier:
        a = MysqlApplier(self.target, changefeed=self.changefeed, time_zone=self.time_zone,
                         checkpoint_schema=self.checkpoint_schema, session=self.session)  # fmt: skip
        with self._appliers_lock:
            self._appliers.append(a)
        return a

    def _applier(self) -> MysqlApplier:
        a: MysqlApplier | None = getattr(self._local, "applier", None)
        if a is None:
            a = self._new_applier()
            self._local.applier = a
        return a

    @property
    def main_applier(self) -> MysqlApplier:
        """The engine's own connection (DDLs, checkpoints, a sink's bookkeeping such as sync points)."""
        return self._main

    def reload(self) -> None:
        """Read every stream's checkpoint of this changefeed from the downstream."""
        self.checkpoints = self._main.load_checkpoints()

    def reset_checkpoints(self) -> int:
        """Forget every stream's checkpoint of this changefeed (``--reset-checkpoints``): what the source reads next
        is applied again. Returns how many there were."""
        deleted = self._main.delete_checkpoints()
        self.checkpoints = {}
        self._known_tables.clear()
        return deleted

    def check_start(self) -> None:
        """Before a source applies anything: refuse when the downstream lost tables this changefeed's checkpoints say
        rows were applied to (``downstream_guard``). Raises SparkcdcError."""
        downstream_guard.check(self._main)

    def ddl_version(self, schema: str, table: str) -> int:
        """The version of the table's last DDL that ran (0: none)."""
        cp = self.checkpoints.get((schema, table, DDL_PARTITION))
        return cp.table_version if cp is not None else 0

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        with self._appliers_lock:
            for a in self._appliers:
                a.close()
            self._appliers.clear()

    def apply(self, step: Step) -> None:
        if isinstance(step, DdlStep):
            self._ddl(step)
            upto = step.version
        else:
            self._streams(step.streams)
            upto = step.upto
        with self.stats.lock:
            self.stats.applied_ts = max(self.stats.applied_ts, upto)
        self._notify()

    # -- rows ---------------------------------------------------------------------------------------
    def _streams(self, streams: Mapping[StreamKey, Iterable[Batch]]) -> None:
        keys = sorted(streams)
        if self.workers == 1 or len(keys) <= 1:
            for k in keys:
                self._stream(k, streams[k])
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="apply")
        futures = [self._pool.submit(self._stream, k, streams[k]) for k in keys]
        errors = [e for e in (f.exception() for f in futures) if e is not None]
        if errors:
            raise errors[0]

    def _stream(self, key: StreamKey, batches: Iterable[Batch]) -> None:
        applier = self._applier()
        for batch in batches:
            cp = self.checkpoints.get(key)
            ordered = key[2] <= ORDERED_PARTITION
            rows, skipped = fresh_rows(batch.rows, cp.commit_ts if cp is not None else 0, ordered)
            if skipped:
                log.warning("skipped %d replayed rows with commit-ts %s the applied checkpoint %d in %s.%s "
                            "(stream %d)", skipped, "at or below" if ordered else "below", cp.commit_ts if cp else 0,
                            *key)  # fmt: skip
            if ordered and not rows:  # all replayed: its position is not ahead of the checkpoint
                with self.stats.lock:
                    self.stats.replayed_skipped += skipped
                continue
            if batch.create is not None and batch.rows:
                self._ensure_table(applier, key[0], key[1], batch.create)
            applied = applier.apply(rows, batch.position)
            self.checkpoints[key] = batch.position
            with self.stats.lock:
                self.stats.rows_applied += applied.rows_in
                self.stats.upserts += applied.upserts
                self.stats.deletes += applied.deletes
                self.stats.replayed_skipped += skipped
                self.stats.files += batch.files
            self._notify()

    def _ensure_table(self, applier: MysqlApplier, schema: str, table: str,
                      create: Callable[[], Sequence[str]]) -> None:  # fmt: skip
        if (schema, table) in self._known_tables:
            return
        if not applier.table_exists(schema, table):
            for sql in create():
                applier.execute(sql)
        self._known_tables.add((schema, table))

    # -- DDL ----------------------------------------------------------------------------------------
    def _ddl(self, step: DdlStep) -> None:
        key = (step.schema, step.table, DDL_PARTITION)
        current = self.checkpoints.get(key)
        unknown = not step.version  # no commit-ts: it may or may not have run before; run it ("already done" is fine)
        done = current is not None and current.table_version >= step.version and not current.pending_version
        if done and not unknown:
            with self.stats.lock:
                self.stats.ddls_skipped += 1
            return
        replay = unknown or (current is not None and current.pending_version == step.version)
        cp = Checkpoint(step.schema, step.table, DDL_PARTITION, step.version, commit_ts=step.version)
        log.info("executing DDL version=%d schema=%s table=%s: %s", step.version, step.schema, step.table,
                 step.query)  # fmt: skip
        try:
            executed = self._main.execute_ddl(step.schema, step.query, step.action, cp, replay=replay)
        except SparkcdcError as e:
            if not step.source:
                raise
            raise type(e)(f"{step.source}: {e.message}", code=e.code, retryable=e.retry) from None
        self.checkpoints[key] = cp
        with self.stats.lock:
            if executed:
                self.stats.ddls_executed += 1
            else:
                self.stats.ddls_skipped += 1
        if step.action in _FORGETS_TABLES:
            self._known_tables.clear()

    def _notify(self) -> None:
        if self.on_progress is not None:
            self.on_progress()


def fresh_rows(rows: Sequence[AppliedRow], applied: int, inclusive: bool) -> tuple[Sequence[AppliedRow], int]:
    """``rows`` without replays, and how many were dropped (see the module docstring). A row without a commit-ts
    (CSV without include-commit-ts) is never a replay by commit-ts."""
    if inclusive:
        kept = [r for r in rows if r.commit_ts > applied or not r.commit_ts]
        return kept, len(rows) - len(kept)
    out: list[AppliedRow] = []
    high = applied
    for r in rows:
        ts = r.commit_ts
        if ts and ts < high:
            continue
        out.append(r)
        high = max(high, ts)
    return (rows, 0) if len(out) == len(rows) else (out, len(rows) - len(out))
