"""TiCDC's conflict detection, for a batch: a table's transactions split over key slots applied in parallel.

TiCDC hashes every primary/unique key value a transaction touches (old and new images) into slots; transactions
sharing a slot keep their commit order on one worker, the others run in parallel. Here a writer task holds a whole
micro-batch of a table, so the split is planned up front (pure, :func:`plan_steps`):

* a transaction whose keys all fall into one slot goes to that slot's stream; the slots of a table are applied in
  parallel, each in commit order, each with its own checkpoint row (partition ``ORDERED_PARTITION - slot``);
* a transaction touching several slots is a barrier: the slots' streams so far are applied, then it (and the
  multi-slot transactions right after it) alone, in slot 0's stream, then parallel streams again. So a replay after
  a crash skips exactly what was applied: whether a transaction is single- or multi-slot, and which slot, depends
  only on its own rows, and a slot's checkpoint only moves past a transaction once it and every earlier transaction
  of that slot (for slot 0: of every slot, at a barrier) are committed.

Slots come from a stable hash of the key values (``repr``, CRC-32), never Python's per-process ``hash``: a replay in
another process must put a transaction in the same slot. Text in a unique key under a collation that is not
binary (``utf8mb4_general_ci``: ``'a' = 'A' = 'á'``) cannot be hashed safely, so such an index counts as touching
every slot (those transactions go serially, as do tables without a primary or unique key).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from itertools import groupby
from operator import attrgetter
from typing import Final

from sparkcdc.model import TableInfo
from sparkcdc.model.steps import (
    ORDERED_PARTITION,
    AppliedRow,
    Batch,
    Checkpoint,
    RenderedRow,
    RowsStep,
    StreamKey,
    batches,
)

SLOTS: Final = 4  # fixed: a replay must find a transaction in the slot it was applied from


def slot_partition(slot: int) -> int:
    return ORDERED_PARTITION - slot


class KeySlots:
    """The slots a row of one table version touches."""

    def __init__(self, table: TableInfo, slots: int = SLOTS) -> None:
        self.slots = slots
        self.every = frozenset(range(slots))
        indexes: list[tuple[int, ...]] = []
        serial = False
        for idx in table.indexes:
            if not (idx.primary or idx.unique):
                continue
            positions = tuple(table.column_position(c) for c in idx.columns)
            if any(_loose(table, p) for p in positions):
                serial = True
            indexes.append(positions)
        if not indexes and table.handle_key_positions:  # a table known only by its handle key (schema files)
            positions = table.handle_key_positions
            serial = any(_loose(table, p) for p in positions)
            indexes.append(positions)
        self.indexes = tuple(indexes)
        self.serial = serial or not indexes

    def of(self, row: AppliedRow) -> frozenset[int]:
        if isinstance(row, RenderedRow):
            return row.slots  # computed by the encoder with this rule
        if self.serial:
            return self.every
        out = set()
        for image in (row.before, row.after):
            if image is None:
                continue
            for positions in self.indexes:
                values = tuple(image[p] for p in positions)
                if None not in values:  # NULLs never conflict in a unique index
                    out.add(zlib.crc32(repr(values).encode("utf-8", "surrogatepass")) % self.slots)
        return frozenset(out) if out else frozenset({0})


def _loose(table: TableInfo, position: int) -> bool:
    """Whether equal keys may differ in their Python values (text under a collation that is not binary)."""
    col = table.columns[position]
    collation = col.effective_collation
    return col.effective_charset != "binary" and not (collation == "binary" or collation.endswith("_bin"))


def table_waves(rows: Sequence[AppliedRow], batch_rows: int, slots: int = SLOTS) -> list[dict[StreamKey, list[Batch]]]:
    """One table's rows (commit order) as waves to apply one after the other: each wave either parallel slot
    streams or one serial stream of multi-slot transactions."""
    schema, table = rows[0].table.schema, rows[0].table.table
    waves: list[dict[StreamKey, list[Batch]]] = []
    parallel: dict[int, list[AppliedRow]] = {}
    serial: dict[int, list[AppliedRow]] = {}
    every = frozenset(range(slots))
    key_slots: dict[int, KeySlots] = {}

    def wave(streams: dict[int, list[AppliedRow]]) -> None:
        """Closes a wave: each slot's transactions so far as one stream of batches with the slot's checkpoint."""
        if streams:
            waves.append({
                (schema, table, slot_partition(s)): [
                    Batch(b, Checkpoint(schema, table, slot_partition(s), commit_ts=b[-1].commit_ts))
                    for b in batches(txns, batch_rows)
                ]
                for s, txns in sorted(streams.items())
            })  # fmt: skip
            streams.clear()

    for _, group in groupby(rows, key=attrgetter("commit_ts")):
        txn = list(group)
        touched: set[int] = set()
        for r in txn:
            ks = key_slots.get(id(r.table))
            if ks is None:
                ks = key_slots[id(r.table)] = KeySlots(r.table, slots)
            touched |= ks.of(r)
            if touched == every:
                break
        if len(touched) == 1:
            wave(serial)
            parallel.setdefault(next(iter(touched)), []).extend(txn)
        else:
            wave(parallel)
            serial.setdefault(0, []).extend(txn)  # the barrier runs in slot 0's stream
    wave(parallel)
    wave(serial)
    return waves


def plan_steps(rows: Sequence[AppliedRow], upto: int, batch_rows: int, slots: int = SLOTS) -> list[RowsStep]:
    """The steps of a writer task's rows (each table's in commit order): step ``i`` holds wave ``i`` of every
    table (tables are independent, so their waves may run side by side)."""
    tables: dict[tuple[str, str], list[AppliedRow]] = {}
    for r in rows:
        tables.setdefault((r.table.schema, r.table.table), []).append(r)
    waves = [table_waves(t, batch_rows, slots) for t in tables.values()]
    steps: list[RowsStep] = []
    for i in range(max((len(w) for w in waves), default=0)):
        streams: dict[StreamKey, list[Batch]] = {}
        for w in waves:
            if i < len(w):
                streams.update(w[i])
        steps.append(RowsStep(streams, upto))
    return steps
