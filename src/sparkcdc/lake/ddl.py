"""A DDL applied to lake tables at the batch's barrier, or refused with one line naming it.

What a lake table can follow is decided by comparing the table's lake schema before and after the DDL (not by
the DDL's kind, which MySQL lets say many things at once): new columns at the end evolve the table (ADD COLUMN);
a DDL that leaves the lake schema as it was (indexes, comments, VARCHAR(10) -> VARCHAR(20)) changes nothing; a
column dropped, renamed, retyped or moved is not supported yet and fails the changefeed, since replicating on
would write rows the table's schema no longer describes. Every schema change commits with the DDL's commit-ts,
so a replayed DDL is applied once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from sparkcdc.errors import SparkcdcError
from sparkcdc.lake.target import LakeTables
from sparkcdc.lake.types import added_value, arrow_schema
from sparkcdc.model import DDLEvent
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo

ERR_LAKE_DDL = "CDC:ErrLakeDDLUnsupported"
_IGNORED = frozenset({DDLAction.CREATE_SCHEMA, DDLAction.DROP_SCHEMA, DDLAction.CREATE_VIEW, DDLAction.DROP_VIEW})


class LakeDDLError(SparkcdcError):
    """A DDL the lake table cannot follow: the changefeed fails (a retry would meet it again)."""

    default_code = ERR_LAKE_DDL
    default_retryable = False


def apply_ddl(tables: LakeTables, ddl: DDLEvent) -> None:
    """Raises LakeDDLError naming the DDL when the table format cannot express it."""
    if ddl.action in _IGNORED or ddl.is_database_level:
        return
    if ddl.action is DDLAction.DROP_TABLE:
        tables.drop(ddl.schema, ddl.table, ddl.commit_ts)
        return
    info = ddl.table_info
    if info is None:
        raise refuse(ddl, "it carries no table definition")
    if ddl.action is DDLAction.TRUNCATE_TABLE:
        tables.truncate(info, ddl.commit_ts)
        return
    pre = ddl.pre_table_info
    if pre is not None and (pre.schema, pre.table) != (info.schema, info.table):
        raise refuse(ddl, "renaming a table is not supported by lake sinks yet")
    if pre is not None:
        before, after = arrow_schema(pre), arrow_schema(info)
        kept = [(f.name.lower(), f.type) for f in after][: len(before)]
        if kept != [(f.name.lower(), f.type) for f in before]:
            raise refuse(ddl, "only adding columns at the end is supported by lake sinks yet (no drop, rename, "
                               "type change or reorder of a column)")  # fmt: skip
        if len(after) == len(before):
            return
        fill = _added_values(ddl, info.columns[len(before):])
        if any(v is not None for v in fill.values()):
            tables.ensure(info)  # keeps the table's commit-ts: a crash before the fill replays the DDL
            tables.fill(info, fill, ddl.commit_ts)
            return
    tables.ensure(info, ddl.commit_ts)


def _added_values(ddl: DDLEvent, columns: Iterable[ColumnInfo]) -> dict[str, Any]:
    """What the upstream put in the existing rows for each added column. Raises LakeDDLError."""
    try:
        return {c.name: added_value(c) for c in columns}
    except (ValueError, ArithmeticError, pa.ArrowInvalid) as e:
        raise refuse(ddl, f"the value existing rows get is not known exactly ({e})") from e


def refuse(ddl: DDLEvent, why: str) -> LakeDDLError:
    return LakeDDLError(
        f"DDL {ddl.query!r} on {ddl.schema}.{ddl.table} at commit-ts {ddl.commit_ts}: {why}; "
        "exclude the table from the changefeed ([filter] rules) or recreate its lake table from a new changefeed"
    )
