"""What a consumer source hands to a target: ordered steps of row changes and DDLs, each with the stream position
it leaves behind (pure values; the MySQL apply engine in ``sparkcdc.mysql.engine`` is one target, a lake table
would be another).

A :class:`RowsStep` holds, per *stream*, batches of rows; streams are independent (different tables, or different
partitions of one storage table, or key slots of one table), so a target may apply them in parallel, each stream's
batches in order. A batch is applied atomically together with its ``position``, the stream's :class:`Checkpoint`
after it, so a crash leaves every stream exactly at a batch boundary and a source resumes from the positions the
target holds. A :class:`DdlStep` is a barrier: it runs after every earlier step is durable and before any later one.

Streams (the ``partition`` of a checkpoint):

* ``partition >= 0`` - a data stream of a storage tree (the partition directory, 0 when there is none):
  ``(table_version, date, file_index, row_offset)`` is the position *after* the last applied row and ``commit_ts``
  the largest applied commit-ts.
* ``partition = ORDERED_PARTITION`` (-2) - the table's rows from an ordered source (Kafka, a redo log, the MySQL
  sink): ``commit_ts`` only, always at the end of a transaction; an ordered source that splits a table into key
  slots uses ``ORDERED_PARTITION - slot`` for slot 1, 2, ...
* ``partition = DDL_PARTITION`` (-1) - the table's DDL stream: ``table_version`` is the last schema version whose
  DDL ran (or was skipped), ``pending_version`` a DDL that started but may not have finished (a DDL cannot share a
  transaction with its checkpoint: a pending one is run again, tolerating "already done" errors).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from sparkcdc.model.events import RowChange, RowOp
from sparkcdc.model.table import TableInfo

DDL_PARTITION: Final = -1
ORDERED_PARTITION: Final = -2
DEFAULT_BATCH_ROWS: Final = 20000
StreamKey = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class RenderedRow:
    """A row change whose statement values the MySQL sink's encoder already rendered (its native kernel):
    ``key_before``/``key_after`` are the key as DELETE names it (``literal(k)``, or ``row_tuple(k)`` for a
    composite key), ``values`` the REPLACE tuple of the writable columns (``row_tuple``), ``slots`` the conflict
    slots the row touches. Only tables with a key are rendered; compaction then compares keys by their literals,
    which are equal exactly when the values are (one column type, one scale). A pure value, so a batch can carry
    it beside RowChanges."""

    commit_ts: int
    table: TableInfo
    op: RowOp
    slots: frozenset[int]
    key_before: str | None
    key_after: str | None
    values: str | None


AppliedRow = RowChange | RenderedRow
"""What a batch carries: a decoded row change, or one a target's encoder already rendered."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Durable progress of one stream (see the module docstring). Orders by position."""

    schema: str
    table: str
    partition: int = 0
    table_version: int = 0
    date: str = ""
    file_index: int = 0
    row_offset: int = 0
    commit_ts: int = 0
    pending_version: int = 0

    @property
    def key(self) -> StreamKey:
        return (self.schema, self.table, self.partition)

    @property
    def position(self) -> tuple[int, str, int, int]:
        return (self.table_version, self.date, self.file_index, self.row_offset)

    def advanced(self, **changes: Any) -> Checkpoint:
        return replace(self, **changes)


@dataclass(frozen=True)
class Batch:
    """Rows of one stream, in commit order, applied atomically with ``position``.

    ``create`` gives the statements that create the table when it is missing downstream (a table the changefeed
    started after); it is called only then. ``files``: source files this batch finishes (progress only)."""

    rows: Sequence[AppliedRow]
    position: Checkpoint
    create: Callable[[], Sequence[str]] | None = None
    files: int = 0


@dataclass(frozen=True)
class RowsStep:
    """Every stream's rows that may be applied now; afterwards every row with commit-ts <= ``upto`` is applied."""

    streams: Mapping[StreamKey, Iterable[Batch]]
    upto: int


@dataclass(frozen=True)
class DdlStep:
    """One DDL, run after every earlier step. ``version`` is its commit-ts (TableVersion); ``source`` names where it
    came from in errors (a schema file, a redo log file). ``definitions`` gives the table's definition before and
    after the DDL where the source knows them (a storage tree's schema files, a Kafka DDL message that carries
    them), called only by a target with no catalog of its own to run ``query`` in (lake tables)."""

    schema: str
    table: str
    query: str
    action: int
    version: int
    source: str = ""
    definitions: Callable[[], tuple[TableInfo | None, TableInfo | None]] | None = field(default=None, compare=False)


Step = RowsStep | DdlStep


@dataclass
class EngineStats:
    """A target's counters, for progress lines, metrics and tests; updated under ``lock`` by its worker threads."""

    rows_applied: int = 0
    upserts: int = 0
    deletes: int = 0
    replayed_skipped: int = 0
    files: int = 0
    ddls_executed: int = 0
    ddls_skipped: int = 0
    applied_ts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


def ordered_step(rows: Sequence[RowChange], upto: int, batch_rows: int = DEFAULT_BATCH_ROWS) -> RowsStep:
    """The step of an ordered source's released rows (commit-ts order): one stream per table, batches of about
    ``batch_rows`` rows cut only between transactions, each checkpointed at its last commit-ts."""
    tables: dict[tuple[str, str], list[RowChange]] = {}
    for r in rows:
        tables.setdefault((r.table.schema, r.table.table), []).append(r)
    streams = {
        (schema, table, ORDERED_PARTITION): [
            Batch(b, Checkpoint(schema, table, ORDERED_PARTITION, commit_ts=b[-1].commit_ts))
            for b in batches(changes, max(1, batch_rows))
        ]
        for (schema, table), changes in tables.items()
    }
    return RowsStep(streams, upto)


def batches(rows: Sequence[AppliedRow], size: int) -> Iterator[Sequence[AppliedRow]]:
    """Batches of about ``size`` rows, cut only between transactions (commit-ts changes; anywhere between rows
    without a commit-ts)."""
    start = 0
    while start < len(rows):
        end = min(start + size, len(rows))
        while end < len(rows) and rows[end].commit_ts and rows[end].commit_ts == rows[end - 1].commit_ts:
            end += 1
        yield rows[start:end]
        start = end
