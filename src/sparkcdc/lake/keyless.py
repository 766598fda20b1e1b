"""Tables without a key (replicated under ``force-replicate``): appended as a change log, since no key says which
lake row a change replaces.

Each change is one appended row: the table's columns plus ``_tidb_op`` and ``_tidb_commit_ts`` (named after
TiCDC's ``_tidb_*`` extension columns). ``_tidb_op`` is ``I`` for an INSERT (its new image), ``D`` for a DELETE
(the deleted image) and, for an UPDATE, two rows: ``D`` with the old image, then ``U`` with the new one (TiCDC's
old-value split). So the upstream table is the multiset of ``I`` and ``U`` rows less the ``D`` rows, and
``_tidb_commit_ts`` orders the changes. Exactly once as the keyed path: each append records the largest commit-ts it
holds, and a replayed batch appends only rows above what the table records. Pure: no I/O, no table format.

A key-less table with a column of its own named ``_tidb_op`` or ``_tidb_commit_ts`` (in any case: MySQL's and
Delta's column names are case-insensitive) cannot be kept so: it is refused (:func:`change_log_clash`) at
changefeed create, at the DDL that makes it and before any lake table is made for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from sparkcdc.errors import SparkcdcError
from sparkcdc.lake.changes import NetChange, net_change
from sparkcdc.lake.errors import ERR_LAKE_DDL, LakeDDLError
from sparkcdc.lake.types import arrow_schema, to_arrow
from sparkcdc.model import RowChange, RowOp, TableInfo

OP_COLUMN = "_tidb_op"
COMMIT_TS_COLUMN = "_tidb_commit_ts"
EXTENSION = (pa.field(OP_COLUMN, pa.string()), pa.field(COMMIT_TS_COLUMN, pa.int64()))


@dataclass(frozen=True, slots=True)
class ChangeLog:
    """A key-less table's changes of a batch in commit order: (``_tidb_op``, image, commit-ts) each."""

    rows: tuple[tuple[str, tuple[Any, ...], int], ...]
    last_ts: int

    @property
    def empty(self) -> bool:
        return not self.rows


def change_log_clash(info: TableInfo) -> str | None:
    """Why ``info`` cannot be kept as a change log (a column of its own has a change-log column's name), for an
    error line; None when it can, or has a key."""
    if info.handle_key_positions:
        return None
    for c in info.columns:
        if c.name.lower() in (OP_COLUMN, COMMIT_TS_COLUMN):
            return (f"the table has no key, so its lake table is a change log that adds a column {c.name.lower()!r}, "
                    f"and the table has a column {c.name!r} of its own; rename that column upstream")  # fmt: skip
    return None


def lake_schema(info: TableInfo) -> pa.Schema:
    """The lake table's schema: :func:`~sparkcdc.lake.types.arrow_schema`, with the change-log columns for a table
    without a key. Raises LakeDDLError when a column of the table has a change-log column's name."""
    schema = arrow_schema(info)
    if info.handle_key_positions:
        return schema
    check_change_log(info)
    return pa.schema([*schema, *EXTENSION])


def check_change_log(info: TableInfo, error: type[SparkcdcError] = LakeDDLError) -> None:
    """Raises ``error`` (code ``CDC:ErrLakeDDLUnsupported``; a ConfigError at changefeed create) naming the table
    and the column when a column of the table has a change-log column's name."""
    clash = change_log_clash(info)
    if clash is not None:
        raise error(f"{info.qualified_name}: {clash}, or exclude the table from the changefeed ([filter] rules)",
                    code=ERR_LAKE_DDL)  # fmt: skip


def change_log(rows: Iterable[RowChange], after_ts: int = 0) -> ChangeLog:
    """``rows`` (one table, in commit order) above ``after_ts`` as appended rows."""
    out: list[tuple[str, tuple[Any, ...], int]] = []
    last_ts = 0
    for r in rows:
        if r.commit_ts <= after_ts:
            continue
        last_ts = max(last_ts, r.commit_ts)
        if r.before is not None and r.op is not RowOp.INSERT:
            out.append(("D", tuple(r.before), r.commit_ts))
        if r.after is not None:
            out.append(("I" if r.op is RowOp.INSERT else "U", tuple(r.after), r.commit_ts))
    return ChangeLog(tuple(out), last_ts)


def fold(rows: Iterable[RowChange], info: TableInfo, after_ts: int = 0) -> NetChange | ChangeLog:
    """A batch of one table, as its format's commit takes it: the net change per key, or the change log of a
    table without a key."""
    if info.handle_key_positions:
        return net_change(rows, info.handle_key_positions, after_ts)
    return change_log(rows, after_ts)


def to_arrow_log(info: TableInfo, log: ChangeLog) -> pa.Table:
    """The change log as rows of :func:`lake_schema`. Raises pyarrow.ArrowInvalid as :func:`to_arrow`."""
    images: Sequence[tuple[Any, ...]] = [image for _op, image, _ts in log.rows]
    ops = pa.array([op for op, _i, _t in log.rows], pa.string())
    return to_arrow(info, images, {OP_COLUMN: ops, COMMIT_TS_COLUMN: pa.array([t for *_, t in log.rows], pa.int64())})
