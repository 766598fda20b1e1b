"""What the lake sink needs of a table format, and the one place that opens a format from a sink config."""

from __future__ import annotations

from typing import Any, Protocol

from sparkcdc.lake.changes import NetChange
from sparkcdc.lake.evolution import SchemaChange
from sparkcdc.lake.keyless import ChangeLog
from sparkcdc.lake.location import LakeLocation
from sparkcdc.model import TableInfo


class LakeTables(Protocol):
    """One changefeed's tables in one format. Every commit records the upstream commit-ts it brings the table to,
    atomically with its data; :meth:`applied_ts` reads it back so a replayed batch never applies twice."""

    def applied_ts(self, schema: str, table: str) -> int: ...

    def ensure(self, info: TableInfo, ts: int | None = None, add_columns: bool = True) -> object:
        """Create the table, or add the columns it lacks (unless not ``add_columns``); schema changes commit with
        ``ts`` (default: what the table already holds). Raises ConfigError for a definition the format cannot
        hold."""
        ...

    def merge(self, info: TableInfo, change: NetChange | ChangeLog, after_ts: int) -> int:
        """Commit a batch: the net change of a keyed table, the change log of a key-less one."""
        ...

    def evolve(self, info: TableInfo, change: SchemaChange, fill: dict[str, Any], ts: int) -> None:
        """Drop, rename, widen (and add) columns, committed with ``ts`` unless the table holds it already."""
        ...

    def rename(self, pre: TableInfo, post: TableInfo, ts: int) -> None:
        """RENAME TABLE: ``post``'s table gets ``pre``'s rows at ``ts``; ``pre``'s is emptied at ``ts``, its
        history kept."""
        ...

    def fill(self, info: TableInfo, values: dict[str, Any], ts: int) -> None:
        """Set ``values`` (column -> value) in every row, committed with ``ts`` unless the table holds it already
        (ADD COLUMN with a default: the upstream filled the existing rows)."""
        ...

    def truncate(self, info: TableInfo, ts: int) -> None: ...

    def drop(self, schema: str, table: str, ts: int) -> None: ...


def open_tables(where: LakeLocation, changefeed: str) -> LakeTables:
    app_id = f"sparkcdc:{changefeed}"
    if where.fmt == "delta":
        from sparkcdc.lake.delta import DeltaTables
        from sparkcdc.lake.stores import delta_options, delta_root

        return DeltaTables(delta_root(where), app_id, delta_options(where))
    from sparkcdc.lake.iceberg import IcebergTables

    return IcebergTables(where, app_id)
