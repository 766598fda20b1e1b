"""Change events: rows, DDLs, resolved timestamps and bootstrap (schema announcement) events.

Values in ``before``/``after`` are tuples aligned with ``table.columns`` and typed as documented in
``column_type``. A key-changing UPDATE stays one event here; sinks split it when TiCDC would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import TableInfo

Row = tuple[Any, ...]


class RowOp(Enum):
    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"


@dataclass(frozen=True, slots=True)
class RowChange:
    """One row change of one transaction.

    INSERT has only ``after``, DELETE only ``before``, UPDATE both. ``physical_table_id`` is the
    partition id for partitioned tables and the table id otherwise.
    """

    commit_ts: int
    table: TableInfo
    op: RowOp
    before: Row | None
    after: Row | None
    physical_table_id: int = 0
    start_ts: int = 0

    def __post_init__(self) -> None:
        if self.op is RowOp.INSERT and (self.after is None or self.before is not None):
            raise ValueError("INSERT needs after and no before")
        if self.op is RowOp.DELETE and (self.before is None or self.after is not None):
            raise ValueError("DELETE needs before and no after")
        if self.op is RowOp.UPDATE and (self.before is None or self.after is None):
            raise ValueError("UPDATE needs before and after")

    @property
    def values(self) -> Row:
        """The image a single-image format writes: new values, or old values for a DELETE."""
        image = self.after if self.after is not None else self.before
        assert image is not None  # guaranteed by __post_init__
        return image

    def handle_key_changed(self) -> bool:
        """True when an UPDATE changes a handle-key or unique-key column (TiCDC then writes DELETE+INSERT).

        TiCDC compares the string forms, so NULL -> value counts as a change.
        """
        if self.op is not RowOp.UPDATE or self.before is None or self.after is None:
            return False
        for i, c in enumerate(self.table.columns):
            if (c.handle_key or c.unique_key) and _key_text(self.before[i]) != _key_text(self.after[i]):
                return True
        return False

    def split_update(self) -> tuple[RowChange, RowChange]:
        """DELETE of the old image then INSERT of the new one, same commit-ts."""
        delete = RowChange(
            self.commit_ts, self.table, RowOp.DELETE, self.before, None, self.physical_table_id, self.start_ts
        )
        insert = RowChange(
            self.commit_ts, self.table, RowOp.INSERT, None, self.after, self.physical_table_id, self.start_ts
        )
        return delete, insert


def _key_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def split_key_updates(rows: Sequence[RowChange]) -> Sequence[RowChange]:
    """Apply TiCDC's storage/MQ UPDATE split to one transaction of one table.

    Key-changing UPDATEs become DELETE+INSERT. TiCDC then stably reorders the transaction as all DELETEs,
    then the remaining UPDATEs, then INSERTs; that is safe in TiDB, where a transaction carries at most one
    change per key. A MySQL/MariaDB binlog transaction can change one key several times (INSERT id=1 then
    UPDATE id 1->2), and reordering would then change the result, so we keep binlog order whenever a
    handle-key value appears in more than one row of the transaction.
    """
    changed = [r.handle_key_changed() for r in rows]
    if not any(changed):
        return rows
    parts = [part for r, c in zip(rows, changed, strict=True) for part in (r.split_update() if c else (r,))]
    if _touches_a_key_twice(rows):
        return parts
    order = {RowOp.DELETE: 0, RowOp.UPDATE: 1, RowOp.INSERT: 2}
    return sorted(parts, key=lambda r: order[r.op])


def _touches_a_key_twice(rows: Sequence[RowChange]) -> bool:
    """True when two rows of the transaction share a handle-key value (in either image).

    Unique-key overlaps alone are left to TiCDC's reordering: in a MySQL binlog every row event was valid
    when it ran, so the DELETEs-first order cannot create a unique-key clash that the binlog order avoided.
    """
    seen: set[tuple[str, ...]] = set()
    for r in rows:
        positions = r.table.handle_key_positions
        keys = {tuple(_key_text(image[i]) for i in positions) for image in (r.before, r.after) if image is not None}
        if seen & keys:
            return True
        seen |= keys
    return False


class RowsLayout(Protocol):
    """How the rows of a ``RowsEvent`` are laid out (the capture's per-table-map decoder): it decodes them in
    Python and describes them to the native kernels."""

    def rows(self, event: RowsEvent) -> list[RowChange]:
        """The event's row changes, exactly as the capture's decoder yields them; raises CorruptDataError."""
        ...

    def kernel_layout(self) -> tuple[list[tuple[int, int, int, bool, int, int]], list[int], list[Any]] | None:
        """(table-map columns, each table column's table-map position, callbacks) for ``sparkcdc._native``,
        or None when a column cannot be decoded natively."""
        ...


@dataclass(frozen=True, slots=True)
class RowsEvent:
    """The undecoded rows of one binlog rows event of one table (all with one op and commit-ts).

    The capture yields these instead of RowChanges when asked (``decode_chunk(raw_rows=True)``), so a sink's
    native kernel can go from the event's bytes straight to its payloads; ``rows()`` decodes them in Python.
    ``data[start:end]`` holds the column count, the presence bitmaps and the row images (no checksum).
    """

    commit_ts: int
    table: TableInfo
    op: RowOp
    data: bytes
    start: int
    end: int
    layout: RowsLayout
    physical_table_id: int = 0

    def rows(self) -> list[RowChange]:
        return self.layout.rows(self)


@dataclass(frozen=True, slots=True)
class DDLEvent:
    """A replicated DDL. ``table_info`` is the table after the DDL (None for database-level DDLs),
    ``pre_table_info`` the table before it (None for CREATE TABLE and database DDLs)."""

    commit_ts: int
    action: DDLAction
    query: str
    schema: str
    table: str = ""
    table_info: TableInfo | None = None
    pre_table_info: TableInfo | None = None

    @property
    def is_database_level(self) -> bool:
        return self.table_info is None and not self.table


@dataclass(frozen=True, slots=True)
class ResolvedEvent:
    """Every transaction with commit-ts <= ``ts`` has been emitted (a watermark)."""

    ts: int


@dataclass(frozen=True, slots=True)
class BootstrapEvent:
    """Announces a table's current schema so a consumer joining mid-stream can decode later rows."""

    table_info: TableInfo
    ts: int = 0


Event = RowChange | DDLEvent | ResolvedEvent | BootstrapEvent
