"""TiCDC's Kafka-consumer ordering (``cmd/kafka-consumer``), as a pure state machine over decoded events.

Messages of one partition arrive in offset order; rows of one partition are in commit-ts order, but rows of
different partitions interleave arbitrarily. A partition's watermark promises that every row up to it was sent
on that partition, so the *global* resolved ts (the minimum over all partitions' watermarks) is the point up to
which every row of every partition has arrived. So:

* rows with commit-ts <= the global resolved ts are released in commit-ts order (one :class:`Step`);
* a DDL (sent to every partition by simple, to partition 0 by canal-json; copies deduplicated by commit-ts and
  query) is a barrier: it is released once the global resolved ts reached it, after every row before it and
  before every row after it;
* the Kafka offset that may be committed for a partition (:meth:`PartitionOrder.safe_offsets`) is the offset of
  its oldest message whose events are not yet released and applied, or the next offset to read.

Rows and DDLs at or below what was already released are re-sends of the changefeed (at-least-once delivery, a sink
that restarted from an older checkpoint): they are left out and counted (``replayed``) for the consumer to report.
Replays of what an earlier run applied are the engine's business: it skips rows at or below the downstream
checkpoint.

canal-json without the TiDB extension has neither commit-ts nor watermarks, so :class:`ArrivalOrder` releases its
events in the order they are read instead (see there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from sparkcdc.model import DDLEvent, RowChange
from sparkcdc.model.events import BootstrapEvent, Event, ResolvedEvent


@dataclass(frozen=True)
class Step:
    """What may be applied now: ``rows`` in commit-ts order (all rows with commit-ts <= ``upto``), or one DDL.
    ``offsets`` are the partition offsets that may be committed once the step is durable downstream."""

    upto: int
    rows: tuple[RowChange, ...] = ()
    ddl: DDLEvent | None = None
    offsets: Mapping[int, int] = field(default_factory=dict)


class Order(Protocol):
    """What the consumer loop needs of an ordering: :class:`PartitionOrder` or :class:`ArrivalOrder`."""

    replayed: int

    def add(self, partition: int, offset: int, events: Iterable[Event], *, origin: int | None = None) -> None: ...

    def next_step(self) -> Step | None: ...

    def hold(self, partition: int, offset: int | None) -> None: ...

    def safe_offsets(self) -> dict[int, int]: ...


@dataclass
class _Partition:
    watermark: int = 0
    next_offset: int | None = None
    held_from: int | None = None  # offset of the first message whose rows the decoder still holds
    # (offset of the message, commit-ts) of every event not yet released, in offset order
    waiting: list[tuple[int, int]] = field(default_factory=list)


class PartitionOrder:
    """Orders the decoded events of the partitions of one topic. Not thread-safe."""

    def __init__(self, partitions: Iterable[int]) -> None:
        self._parts = {p: _Partition() for p in partitions}
        if not self._parts:
            raise ValueError("a topic has at least one partition")
        self._rows: list[tuple[int, int, int, RowChange]] = []  # (commit_ts, partition, seq, row)
        self._ddls: dict[tuple[int, str], DDLEvent] = {}
        self._seq = 0
        self._released = 0  # every event with commit-ts <= this was released
        self.replayed = 0  # rows and DDLs left out as re-sends of what was already released

    @property
    def resolved_ts(self) -> int:
        """The global resolved ts: the smallest watermark of any partition (0 until every partition has one)."""
        return min(p.watermark for p in self._parts.values())

    @property
    def buffered(self) -> int:
        return len(self._rows)

    def add(self, partition: int, offset: int, events: Iterable[Event], *, origin: int | None = None) -> None:
        """The decoded events of the message at ``offset`` of ``partition`` (an empty list for a message that
        released nothing). ``origin`` is the offset to resume from to see these events again when it is not
        ``offset`` (rows a decoder held since an earlier message). Raises KeyError for an unknown partition."""
        part = self._parts[partition]
        part.next_offset = offset + 1
        mark = offset if origin is None else min(origin, offset)
        for ev in events:
            if isinstance(ev, RowChange):
                if ev.commit_ts <= self._released:
                    self.replayed += 1  # behind what was released: a re-send
                    continue
                self._seq += 1
                self._rows.append((ev.commit_ts, partition, self._seq, ev))
                part.waiting.append((mark, ev.commit_ts))
            elif isinstance(ev, DDLEvent):
                if ev.commit_ts <= self._released:
                    self.replayed += 1
                    continue
                self._ddls.setdefault((ev.commit_ts, ev.query), ev)
                part.waiting.append((mark, ev.commit_ts))
            elif isinstance(ev, ResolvedEvent):
                part.watermark = max(part.watermark, ev.ts)
            elif not isinstance(ev, BootstrapEvent):
                raise TypeError(f"unexpected event {type(ev).__name__}")

    def next_step(self) -> Step | None:
        """The next step that may be applied, or None until more watermarks arrive. Call until None: a DDL
        splits what the resolved ts released into the rows before it, the DDL, and the rows after it."""
        resolved = self.resolved_ts
        if resolved <= self._released:
            return None
        ddl_ts = min((ts for ts, _ in self._ddls), default=None)
        if ddl_ts is None or ddl_ts > resolved:
            return self._release_rows(resolved)
        if any(r[0] < ddl_ts for r in self._rows):
            return self._release_rows(ddl_ts - 1)
        key = min(k for k in self._ddls if k[0] == ddl_ts)
        event = self._ddls.pop(key)
        more_at_ts = any(ts == ddl_ts for ts, _ in self._ddls)
        self._released = max(self._released, ddl_ts - 1 if more_at_ts else ddl_ts)
        self._forget(ddl_ts)
        return Step(upto=ddl_ts, ddl=event, offsets=self.safe_offsets())

    def _release_rows(self, upto: int) -> Step:
        self._rows.sort(key=lambda r: (r[0], r[1], r[2]))
        cut = 0
        while cut < len(self._rows) and self._rows[cut][0] <= upto:
            cut += 1
        rows = tuple(r[3] for r in self._rows[:cut])
        del self._rows[:cut]
        self._released = max(self._released, upto)
        self._forget(upto)
        return Step(upto=upto, rows=rows, offsets=self.safe_offsets())

    def _forget(self, upto: int) -> None:
        """Drop the waiting marks of released events (rows <= upto, and DDLs <= upto no longer pending)."""
        pending_ddls = {ts for ts, _ in self._ddls}
        for part in self._parts.values():
            part.waiting = [(o, ts) for o, ts in part.waiting if ts > upto or ts in pending_ddls]

    def hold(self, partition: int, offset: int | None) -> None:
        """The decoder of ``partition`` holds rows since the message at ``offset`` (None: it holds none):
        committed offsets must not pass it."""
        self._parts[partition].held_from = offset

    def safe_offsets(self) -> dict[int, int]:
        """Per partition, the offset to resume from so that nothing unreleased is lost (partitions with no
        message seen yet are left out)."""
        out = {}
        for p, part in self._parts.items():
            marks = [o for o, _ in part.waiting]
            if part.held_from is not None:
                marks.append(part.held_from)
            if marks:
                out[p] = min(marks)
            elif part.next_offset is not None:
                out[p] = part.next_offset
        return out


class ArrivalOrder:
    """The order of canal-json without the TiDB extension (``enable-tidb-extension`` unset): its messages carry no
    commit-ts and the changefeed sends no watermarks, so nothing says when every partition has passed a point.

    TiCDC's consumer decodes such rows with commit-ts 0 and, with no watermark ever arriving, writes them only when a
    DDL of their table is read (partition 0), or never. Here every event is released in the order it is read, as
    soon as it is read: rows in batches, each DDL after every row read before it and before any row read after it.
    What that keeps: the order of each partition, which is the changefeed's commit order for that partition (so
    every change of one row, with a dispatcher that keeps a row's key on one partition); what it cannot keep: the
    order across partitions, upstream transactions (no commit-ts marks their ends), and a DDL's place among rows of
    other partitions read after it. With one partition the order is exactly the changefeed's. Not thread-safe.
    """

    def __init__(self, partitions: Iterable[int]) -> None:
        self._parts = {p: _Partition() for p in partitions}
        if not self._parts:
            raise ValueError("a topic has at least one partition")
        self._events: list[tuple[int, int, RowChange | DDLEvent]] = []  # (partition, offset, event), as read
        self.replayed = 0  # stays 0: without commit-ts nothing can be told to be a re-send

    def add(self, partition: int, offset: int, events: Iterable[Event], *, origin: int | None = None) -> None:
        """As :meth:`PartitionOrder.add`. Raises KeyError for an unknown partition, TypeError for a watermark or
        BOOTSTRAP (the canal-json decoder of such a topic refuses any ``_tidb``, and only simple sends BOOTSTRAPs)."""
        part = self._parts[partition]
        part.next_offset = offset + 1
        mark = offset if origin is None else min(origin, offset)
        for ev in events:
            if not isinstance(ev, RowChange | DDLEvent):
                raise TypeError(f"unexpected event {type(ev).__name__} in a topic without commit-ts")
            self._events.append((partition, mark, ev))

    def next_step(self) -> Step | None:
        """The rows read before the next DDL (or every row read), else that DDL; None when nothing is waiting.
        ``upto`` is 0: no commit-ts is known."""
        if not self._events:
            return None
        first = self._events[0][2]
        if isinstance(first, DDLEvent):
            del self._events[0]
            return Step(upto=0, ddl=first, offsets=self.safe_offsets())
        cut = next((i for i, (_, _, ev) in enumerate(self._events) if isinstance(ev, DDLEvent)), len(self._events))
        rows = tuple(ev for _, _, ev in self._events[:cut] if isinstance(ev, RowChange))
        del self._events[:cut]
        return Step(upto=0, rows=rows, offsets=self.safe_offsets())

    def hold(self, partition: int, offset: int | None) -> None:
        """As :meth:`PartitionOrder.hold`."""
        self._parts[partition].held_from = offset

    def safe_offsets(self) -> dict[int, int]:
        """As :meth:`PartitionOrder.safe_offsets`: per partition, the offset of its first event not yet released, or
        the next offset to read."""
        waiting: dict[int, int] = {}
        for p, offset, _ in self._events:
            waiting[p] = min(offset, waiting.get(p, offset))
        out = {}
        for p, part in self._parts.items():
            marks = [m for m in (waiting.get(p), part.held_from) if m is not None]
            if marks:
                out[p] = min(marks)
            elif part.next_offset is not None:
                out[p] = part.next_offset
        return out
