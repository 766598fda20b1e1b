"""Tables without a key (replicated under ``force-replicate``): appended as a change log, since no key says which
lake row a change replaces.

Each change is one appended row: the table's columns plus ``_tidb_op`` and ``_tidb_commit_ts`` (named after
TiCDC's ``_tidb_*`` extension columns). ``_tidb_op`` is ``I`` for an INSERT (its new image), ``D`` for a DELETE
(the deleted image) and, for an UPDATE, two rows: ``D`` with the old image, then ``U`` with the new one (TiCDC's
old-value split). So the upstream table is the multiset of ``I`` and ``U`` rows less the ``D`` rows, and
``_tidb_commit_ts`` orders the changes. Exactly once as the keyed path: each append records the largest commit-ts it
holds, and a replayed batch appends only rows above what the table records. Pure: no I/O, no table format.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from sparkcdc.lake.changes import NetChange, net_change
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


def lake_schema(info: TableInfo) -> pa.Schema:
    """The lake table's schema: :func:`~sparkcdc.lake.types.arrow_schema`, with the change-log columns for a table
    without a key."""
    schema = arrow_schema(info)
    return schema if info.handle_key_positions else pa.schema([*schema, *EXTENSION])


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
