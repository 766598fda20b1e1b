"""A DDL applied to lake tables at the batch's barrier, or refused with one line naming it.

What a lake table does for a DDL is decided from the table's definitions before and after it (not by the DDL's
kind, which MySQL lets say many things at once; :mod:`~sparkcdc.lake.evolution` matches the columns): new
columns evolve the table (ADD COLUMN, existing rows get the value the upstream gave them); dropped, renamed and
widened columns evolve it too (Delta: a rewrite of the table in one commit; Iceberg: a schema update in place); a
DDL that leaves the lake schema as it was (indexes, comments, VARCHAR(10) -> VARCHAR(20)) changes nothing. RENAME
TABLE copies the table to its new name and empties the old one. A change neither format can express (a narrowing
type change, a table gaining or losing its only key) fails the changefeed, since replicating on would write rows
the table's schema no longer describes (a sink's table that gains a key after being left out without one, no
``force-replicate``, comes here as its CREATE TABLE: :func:`~sparkcdc.changefeed.config.replicated_ddl`). Every
change commits with the DDL's commit-ts, so a replayed DDL is applied once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from sparkcdc.lake.errors import LakeDDLError
from sparkcdc.lake.evolution import plan
from sparkcdc.lake.keyless import change_log_clash
from sparkcdc.lake.target import LakeTables
from sparkcdc.lake.types import added_value, arrow_schema
from sparkcdc.model import DDLEvent, TableInfo
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo

_IGNORED = frozenset({DDLAction.CREATE_SCHEMA, DDLAction.DROP_SCHEMA, DDLAction.CREATE_VIEW, DDLAction.DROP_VIEW})


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
    clash = change_log_clash(info)
    if clash is not None:
        raise refuse(ddl, clash)
    if ddl.action is DDLAction.TRUNCATE_TABLE:
        tables.truncate(info, ddl.commit_ts)
        return
    pre = ddl.pre_table_info
    if pre is not None and (pre.schema, pre.table) != (info.schema, info.table):
        if _columns(pre) != _columns(info):
            raise refuse(ddl, "renaming a table and changing its columns in one DDL is not supported by lake "
                              "sinks")  # fmt: skip
        tables.rename(pre, info, ddl.commit_ts)
        return
    if pre is None:
        tables.ensure(info, ddl.commit_ts)
        return
    try:
        change = plan(pre, info, ddl.action)
    except ValueError as e:
        raise refuse(ddl, str(e)) from e
    if not change.rewrites and not change.added:
        return
    fill = _added_values(ddl, change.added)
    if change.rewrites:
        tables.evolve(info, change, fill, ddl.commit_ts)
    elif any(v is not None for v in fill.values()):
        tables.ensure(info)  # keeps the table's commit-ts: a crash before the fill replays the DDL
        tables.fill(info, fill, ddl.commit_ts)
    else:
        tables.ensure(info, ddl.commit_ts)


def _columns(info: TableInfo) -> list[tuple[str, str]]:
    return [(f.name, str(f.type)) for f in arrow_schema(info)]


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
