"""A micro-batch's row changes of one table -> the table's net change: the last image per key, in commit order.

A lake table is rewritten file by file, so applying each upstream row one by one would cost a commit per row. The
batch's changes of a table fold into one set of upserts and one set of deleted keys (one MERGE): for every key
only its last change in ``(commit_ts, seq)`` order counts. A key-changing UPDATE deletes its old key and upserts
its new one, so ``UPDATE id 1 -> 2`` leaves no row 1 behind. Pure: no I/O, no library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from sparkcdc.model import RowChange, RowOp

Key = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class NetChange:
    """``upserts``: the final image of each key written in the batch (insert or replace); ``deletes``: the keys
    whose last change removed them. A key is in at most one of the two. ``last_ts``: the largest commit-ts
    folded in (0 when nothing was). ``touches_existing``: some change's before-image has a key the batch did not
    create first, so the table may hold it; when False every upserted key is new to a table that is the upstream as
    of the batch's start (each key's first change inserts it, which the upstream's key uniqueness allows only for an
    absent key) and every deleted key never reached the table: the batch is a plain append of ``upserts``."""

    upserts: dict[Key, tuple[Any, ...]]
    deletes: frozenset[Key]
    last_ts: int
    touches_existing: bool = True

    @property
    def empty(self) -> bool:
        return not self.upserts and not self.deletes


def key_of(image: Sequence[Any], positions: Sequence[int]) -> Key:
    """The key of a row image. ``-0.0`` and ``0.0`` are one key (as in MySQL); everything else by value."""
    return tuple(0.0 if isinstance(v := image[i], float) and v == 0.0 else v for i in positions)


def _keyer(positions: Sequence[int]) -> Callable[[Sequence[Any]], Key]:
    """:func:`key_of` for ``positions``, with the common case (no float in the key) done by one C-level itemgetter:
    the fold calls it once or twice a row, and it was a fifth of a Delta batch's time (benchmarks/lake_sink.py)."""
    get = itemgetter(*positions)
    one = len(positions) == 1

    def key(image: Sequence[Any]) -> Key:
        k = (get(image),) if one else get(image)
        return key_of(image, positions) if float in map(type, k) else k

    return key


def net_change(rows: Iterable[RowChange], positions: Sequence[int], after_ts: int = 0) -> NetChange:
    """Fold ``rows`` (one table, already in commit order) keyed by the columns at ``positions``. Rows with
    commit-ts <= ``after_ts`` are skipped: the lake table already holds them (a batch replayed after a crash).
    Raises ValueError for an empty ``positions`` (a key-less table is appended, not merged)."""
    if not positions:
        raise ValueError("net_change needs key positions; a table without a key is appended")
    key = _keyer(positions)
    last: dict[Key, tuple[Any, ...] | None] = {}
    last_ts = 0
    existing = False
    for r in rows:
        if r.commit_ts <= after_ts:
            continue
        last_ts = max(last_ts, r.commit_ts)
        if r.before is not None and r.op is not RowOp.INSERT:
            old = key(r.before)
            existing = existing or old not in last
            if r.op is RowOp.DELETE or (r.after is not None and key(r.after) != old):
                last.pop(old, None)  # re-inserted keys move to the end: dict order = order of last change
                last[old] = None
        if r.after is not None:
            new = key(r.after)
            last.pop(new, None)
            last[new] = r.after
    upserts = {k: v for k, v in last.items() if v is not None}
    deletes = frozenset(k for k, v in last.items() if v is None)
    return NetChange(upserts, deletes, last_ts, existing)
