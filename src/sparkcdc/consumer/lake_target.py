"""The consumers' lake target (``delta://``, ``iceberg://``): what ``cdc storage-consumer`` and ``cdc kafka-consumer``
read (ours or real TiCDC's output) kept in Delta or Iceberg tables, through the same :mod:`sparkcdc.lake` tables,
folding and DDL rules as the lake sinks.

Rows: per :class:`~sparkcdc.model.steps.RowsStep`, each table's rows of every stream (merged in commit-ts order)
fold into its net change (:func:`~sparkcdc.lake.changes.net_change`) and ONE lake commit, which records the step's
``upto`` as the upstream commit-ts the table reflects: after the step every row up to ``upto`` is applied, so the
table then is the upstream table as of ``upto`` (``sparkcdc.lake.read_as_of``). Exactly once: a replay (a crash
between two tables' commits, a restarted consumer reading the tree or topic again, a producer's at-least-once
re-send) folds only rows above what the table records, so nothing applies twice. Every row therefore needs its
commit-ts: canal-json without ``enable-tidb-extension`` and CSV without ``include-commit-ts`` are refused.

Positions: the lake commits cannot carry a storage stream's file position, so the streams' positions and the
DDLs run are kept in ``<root>/.sparkcdc/consumer-<name>.json``, written after the lake commits of each step. The
file may lag the tables (a crash between the two), never lead them: what a lagging file makes the source read again
is skipped by commit-ts.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import logging
from collections.abc import Iterable, Iterator
from itertools import chain, groupby
from urllib.parse import quote

from sparkcdc.consumer.target import TargetOptions
from sparkcdc.errors import ConfigError, CorruptDataError, SparkcdcError, StorageError
from sparkcdc.lake.changes import NetChange
from sparkcdc.lake.ddl import apply_ddl, refuse
from sparkcdc.lake.keyless import ChangeLog, fold
from sparkcdc.lake.location import ERR_SINK_URI_INVALID, META_DIR, LakeLocation
from sparkcdc.lake.target import LakeTables, open_tables
from sparkcdc.masking import mask_uri
from sparkcdc.model import DDLAction, DDLEvent, RowChange, TableInfo
from sparkcdc.model.steps import DDL_PARTITION, Batch, Checkpoint, DdlStep, EngineStats, RowsStep, Step, StreamKey
from sparkcdc.mysql.downstream_guard import ERR_AHEAD
from sparkcdc.mysql.engine import fresh_rows
from sparkcdc.storage.external import ExternalStorage

log = logging.getLogger(__name__)

_RENAMES = frozenset({DDLAction.RENAME_TABLE, DDLAction.RENAME_TABLES})


def open_target(uri: str, options: TargetOptions) -> LakeTarget:
    """Raises ConfigError for a bad URI (one line, :class:`~sparkcdc.lake.location.LakeLocation`'s), a sink-only
    parameter, a missing library, a root that cannot be written or an Iceberg catalog that does not answer."""
    from sparkcdc.sink.lake.config import LakeSinkConfig, check_writable

    where, params = LakeLocation.from_uri(uri)
    if params:
        raise ConfigError(f"downstream uri invalid '{mask_uri(uri)}': {sorted(params)[0]!r} is a lake sink "
                          "parameter; a consumer's lake target takes none", code=ERR_SINK_URI_INVALID)  # fmt: skip
    check_writable(LakeSinkConfig(where))
    return LakeTarget(where, options)


class LakeTarget:
    """Steps applied to one consumer's lake tables (``options.consumer`` names its commits and positions). Tables
    are merged one after the other: a step's commits are few and large."""

    def __init__(self, where: LakeLocation, options: TargetOptions) -> None:
        self.where = where
        self.consumer = options.consumer
        self.on_progress = options.on_progress
        self.tables: LakeTables = open_tables(where, options.consumer)
        self.stats = EngineStats()
        self.checkpoints: dict[StreamKey, Checkpoint] = {}
        self._seen: dict[tuple[str, str], TableInfo] = {}  # each table's definition in its newest rows
        self.storage = ExternalStorage(where.storage_uri)
        self.name = f"{META_DIR}/consumer-{quote(options.consumer, safe='')}.json"
        self.path = self.storage.full_path(self.name)  # for messages: no secret (those are URI parameters)
        self.reload()

    # -- positions ----------------------------------------------------------------------------------
    def reload(self) -> None:
        """The positions file (none yet: no positions). Raises StorageError when it cannot be read."""
        data = self.storage.read(self.name)
        if data is None:
            self.checkpoints = {}
            return
        try:
            text = data.decode()
            self.checkpoints = {cp.key: cp for cp in (Checkpoint(**d) for d in json.loads(text))}
        except (ValueError, TypeError) as e:  # UnicodeDecodeError is a ValueError
            raise StorageError(f"{self.path}: not a positions file ({e}); delete it (the lake tables' commit-ts "
                               "keep replays out) and start again") from e  # fmt: skip

    def _save(self) -> None:
        """Write the positions atomically (a local file under a temporary name, then renamed; one PUT on an object
        store): a crash leaves the old file or the new one."""
        self.storage.write(self.name, json.dumps([dataclasses.asdict(cp) for cp in sorted(self.checkpoints.values(),
                                                  key=lambda c: c.key)]).encode())  # fmt: skip

    def reset_checkpoints(self) -> int:
        """Forget the positions. The lake tables keep the commit-ts they reflect, so rows they hold are still not
        applied again: to rebuild them, delete the lake tables too."""
        n = len(self.checkpoints)
        self.storage.delete(self.name)
        self.checkpoints = {}
        return n

    def check_start(self) -> None:
        """Refuse positions past rows of a lake table that is gone (deleted or recreated by hand): the source would
        resume after them and the new table would lack them. Raises SparkcdcError (CDC:ErrConsumerCheckpointAhead)."""
        applied: dict[tuple[str, str], int] = {}  # each table's highest position commit-ts
        for cp in self.checkpoints.values():
            if cp.partition != DDL_PARTITION and cp.commit_ts:
                applied[(cp.schema, cp.table)] = max(applied.get((cp.schema, cp.table), 0), cp.commit_ts)
        for (schema, table), ts in sorted(applied.items()):
            if not self.tables.applied_ts(schema, table):
                raise SparkcdcError(
                    f"{self.path} says consumer {self.consumer!r} applied rows to {schema}.{table} up to commit-ts "
                    f"{ts}, but its {self.where.fmt} table records none: was it deleted or recreated? To apply "
                    "everything again, run with --reset-checkpoints", code=ERR_AHEAD)  # fmt: skip

    def ddl_version(self, schema: str, table: str) -> int:
        cp = self.checkpoints.get((schema, table, DDL_PARTITION))
        return cp.table_version if cp is not None else 0

    def close(self) -> None:
        return None  # nothing held open: every commit is done when apply returns

    # -- steps --------------------------------------------------------------------------------------
    def apply(self, step: Step) -> None:
        """Raises ConfigError for rows the lake cannot take (no commit-ts, no key), LakeDDLError for a DDL it cannot
        follow, StorageError when a table cannot be read or written."""
        if isinstance(step, DdlStep):
            self._ddl(step)
            upto = step.version
        else:
            self._rows(step)
            upto = step.upto
        with self.stats.lock:
            self.stats.applied_ts = max(self.stats.applied_ts, upto)
        if self.on_progress is not None:
            self.on_progress()

    def _rows(self, step: RowsStep) -> None:
        by_table: dict[tuple[str, str], list[StreamKey]] = {}
        for key in sorted(step.streams):
            by_table.setdefault((key[0], key[1]), []).append(key)
        positions: dict[StreamKey, Checkpoint] = {}
        for (schema, table), keys in by_table.items():
            streams = [self._stream(k, step.streams[k], positions) for k in keys]
            merged = streams[0] if len(streams) == 1 else heapq.merge(*streams, key=lambda r: r.commit_ts)
            self._merge(schema, table, merged, step.upto)
        if positions:
            self.checkpoints.update(positions)
            self._save()

    def _stream(self, key: StreamKey, batches: Iterable[Batch], positions: dict[StreamKey, Checkpoint],
                ) -> Iterator[RowChange]:  # fmt: skip
        """One stream's rows in order without the producer's re-sends (commit-ts below one already read: the MySQL
        engine's rule), noting the stream's position after each batch."""
        cp = self.checkpoints.get(key)
        high = cp.commit_ts if cp is not None else 0
        for batch in batches:
            rows, skipped = fresh_rows(batch.rows, high, inclusive=False)
            with self.stats.lock:
                self.stats.replayed_skipped += skipped
                self.stats.files += batch.files
            for r in rows:
                if not isinstance(r, RowChange):
                    raise ConfigError(f"{key[0]}.{key[1]}: lake targets take decoded rows only (cdc redo apply "
                                      "writes to MySQL-compatible downstreams only)")  # fmt: skip
                if not r.commit_ts:
                    raise ConfigError(
                        f"{key[0]}.{key[1]}: a row without a commit-ts (canal-json without enable-tidb-extension, "
                        "csv without include-commit-ts): lake targets need it to apply each change once; write the "
                        "changefeed's output with it"
                    )
                high = max(high, r.commit_ts)
                yield r
            positions[key] = batch.position

    def _merge(self, schema: str, table: str, rows: Iterable[RowChange], upto: int) -> None:
        """The rows folded per table definition (a DDL's new version starts a new fold) and committed, the last
        fold recording ``upto``. A table without rows in the step is not opened (Iceberg loads its metadata)."""
        it = iter(rows)
        head = next(it, None)
        if head is None:
            return
        applied = self.tables.applied_ts(schema, table)
        pending: tuple[TableInfo, NetChange | ChangeLog] | None = None
        for _version, group in groupby(chain([head], it), key=lambda r: r.table.version):
            first = next(group)
            info = first.table
            if pending is not None:
                applied = self._commit(*pending, applied)
            rows_of = self._counted(chain([first], group), applied)  # noqa: B031
            folded = fold(rows_of, info, applied)
            pending = info, folded  # the group was read whole by net_change, before groupby moves on
            self._seen[(schema, table)] = info
        if pending is not None:
            info, change = pending
            self._commit(info, dataclasses.replace(change, last_ts=max(change.last_ts, upto)), applied)

    def _counted(self, rows: Iterable[RowChange], applied: int) -> Iterator[RowChange]:
        """``rows``, counted: those at or below ``applied`` (the table holds them) as replays, the others applied."""
        n = replayed = 0
        for r in rows:
            if r.commit_ts <= applied:
                replayed += 1
            else:
                n += 1
            yield r
        with self.stats.lock:
            self.stats.rows_applied += n
            self.stats.replayed_skipped += replayed

    def _commit(self, info: TableInfo, change: NetChange | ChangeLog, applied: int) -> int:
        """One lake commit; returns the commit-ts the table records after it."""
        if change.empty:
            return applied
        self.tables.merge(info, change, applied)
        with self.stats.lock:
            if isinstance(change, ChangeLog):
                self.stats.upserts += len(change.rows)
            else:
                self.stats.upserts += len(change.upserts)
                self.stats.deletes += len(change.deletes)
        return change.last_ts

    # -- DDL ----------------------------------------------------------------------------------------
    def _ddl(self, step: DdlStep) -> None:
        key = (step.schema, step.table, DDL_PARTITION)
        if self.ddl_version(step.schema, step.table) >= step.version and step.version:
            with self.stats.lock:
                self.stats.ddls_skipped += 1
            return
        try:
            executed = self._run_ddl(step)
        except SparkcdcError as e:
            if not step.source:
                raise
            raise type(e)(f"{step.source}: {e.message}", code=e.code, retryable=e.retry) from None
        self.checkpoints[key] = Checkpoint(step.schema, step.table, DDL_PARTITION, step.version,
                                           commit_ts=step.version)  # fmt: skip
        self._save()
        with self.stats.lock:
            if executed:
                self.stats.ddls_executed += 1
            else:
                self.stats.ddls_skipped += 1

    def _run_ddl(self, step: DdlStep) -> bool:
        """Returns whether anything was done. A table-level DDL needs the table's definitions (a storage tree's
        schema files, Kafka's simple and avro DDL messages); canal-json's DDL messages carry none, so only CREATE,
        DROP and TRUNCATE TABLE of tables already seen can be followed from them."""
        try:
            action = DDLAction(step.action)
        except ValueError:
            action = DDLAction.NONE
        pre, post = step.definitions() if step.definitions is not None else (None, None)
        if action is DDLAction.CREATE_TABLE:
            pre = None  # a CREATE after a DROP of the same name starts a new table, not an ALTER
        if post is None and action is DDLAction.TRUNCATE_TABLE:
            post = self._seen.get((step.schema, step.table))
        event = DDLEvent(step.version, action, step.query, step.schema, step.table, post, pre)
        if not step.version:
            raise refuse(event, "it carries no commit-ts, which lake targets record with every change")
        if action in _RENAMES and post is not None and (pre is None or (pre.schema, pre.table) == (
                step.schema, step.table)):  # a storage tree's schema file gives only the new name: the query the old
            old = renamed_from(step.query, step.schema, step.table)
            if old is None:
                raise refuse(event, "the table's name before the rename is not in the DDL's query")
            event = dataclasses.replace(event, pre_table_info=dataclasses.replace(post, schema=old[0], table=old[1]))
        if post is None and (action is DDLAction.CREATE_TABLE or (
                action is DDLAction.TRUNCATE_TABLE and not self.tables.applied_ts(step.schema, step.table))):
            log.info("DDL %r: no definition of %s.%s here and nothing in its lake table: it is created with its "
                     "first rows", step.query, step.schema, step.table)  # fmt: skip
            return False
        log.info("executing DDL version=%d on %s table %s.%s: %s", step.version, self.where.fmt, step.schema,
                 step.table, step.query)  # fmt: skip
        apply_ddl(self.tables, event)
        return True


def renamed_from(query: str, schema: str, table: str) -> tuple[str, str] | None:
    """The old name of ``schema.table`` in a ``RENAME TABLE a TO b[, ...]`` or ``ALTER TABLE a RENAME [TO|AS] b``
    query (names without a schema are in ``schema``, the DDL's); None when the query names no such pair."""
    from sparkcdc.capture.ddl_lexer import Cursor

    try:
        c = Cursor(query)
        if c.accept("RENAME") and c.accept("TABLE"):
            while True:
                old = c.qualified(schema)
                c.expect("TO")
                if c.qualified(schema) == (schema, table):
                    return old
                if not c.accept_op(","):
                    return None
        if c.accept("ALTER") and c.accept("TABLE"):
            old = c.qualified(schema)
            if c.accept("RENAME"):
                if not c.accept("TO"):
                    c.accept("AS")
                return old if c.qualified(schema) == (schema, table) else None
    except CorruptDataError:
        return None
    return None
