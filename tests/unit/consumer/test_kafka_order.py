"""TiCDC's Kafka-consumer ordering: global resolved ts, commit-ts order across partitions, DDL barriers, offsets; and
the order of canal-json without commit-ts (the order read)."""

from __future__ import annotations

import random

import pytest

from sparkcdc.consumer.kafka_order import ArrivalOrder, PartitionOrder, Step
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, RowChange, RowOp, TableInfo
from sparkcdc.model.events import BootstrapEvent, Event, ResolvedEvent

T = TableInfo("db", "t", 1, (ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True),))


def row(ts: int, k: int) -> RowChange:
    return RowChange(ts, T, RowOp.INSERT, None, (k,))


def ddl(ts: int, query: str = "ALTER TABLE t ADD COLUMN c INT") -> DDLEvent:
    return DDLEvent(ts, "db", "t", DDLAction.ADD_COLUMN, query, T, T)


def ids(step: object) -> list[tuple[int, int]]:
    return [(r.commit_ts, r.after[0]) for r in step.rows]  # type: ignore[attr-defined, index]


def test_rows_wait_for_every_partition_and_come_out_in_commit_order() -> None:
    order = PartitionOrder([0, 1])
    order.add(0, 0, [row(10, 1)])
    order.add(0, 1, [row(30, 3)])
    order.add(0, 2, [ResolvedEvent(30)])
    assert order.next_step() is None  # partition 1 has promised nothing yet
    order.add(1, 0, [row(20, 2)])
    order.add(1, 1, [ResolvedEvent(25)])
    step = order.next_step()
    assert step is not None and step.upto == 25 and ids(step) == [(10, 1), (20, 2)]
    assert step.offsets == {0: 1, 1: 2}  # row 30 at offset 1 of partition 0 is not applied yet
    assert order.next_step() is None
    order.add(1, 2, [ResolvedEvent(40)])
    step = order.next_step()
    assert step is not None and step.upto == 30 and ids(step) == [(30, 3)] and step.offsets == {0: 3, 1: 3}


def test_a_ddl_is_a_barrier_and_its_copies_count_once() -> None:
    order = PartitionOrder([0, 1])
    order.add(0, 0, [row(10, 1)])
    order.add(0, 1, [ddl(20)])
    order.add(1, 0, [ddl(20)])
    order.add(0, 2, [row(30, 3)])
    order.add(1, 1, [row(15, 2)])
    order.add(0, 3, [ResolvedEvent(40)])
    order.add(1, 2, [ResolvedEvent(40)])
    first, second, third = order.next_step(), order.next_step(), order.next_step()
    assert first is not None and ids(first) == [(10, 1), (15, 2)] and first.upto == 19
    assert first.offsets == {0: 1, 1: 0}  # both copies of the DDL still to apply
    assert second is not None and second.ddl is not None and second.ddl.commit_ts == 20 and not second.rows
    assert second.offsets == {0: 2, 1: 3}
    assert third is not None and ids(third) == [(30, 3)] and third.upto == 40
    assert order.next_step() is None


def test_a_ddl_waits_for_the_global_resolved_ts() -> None:
    order = PartitionOrder([0, 1])
    order.add(0, 0, [ddl(20)])  # canal-json: partition 0 only
    order.add(0, 1, [ResolvedEvent(25)])
    order.add(1, 0, [ResolvedEvent(19)])
    step = order.next_step()
    assert step is not None and step.ddl is None and step.upto == 19 and not step.rows
    assert order.next_step() is None
    order.add(1, 1, [row(18, 1), ResolvedEvent(25)])  # a row below a released point is a replay: dropped
    step = order.next_step()
    assert step is not None and step.ddl is not None and step.upto == 20
    step = order.next_step()
    assert step is not None and step.upto == 25 and not step.rows


def test_replays_below_the_released_point_are_dropped_and_bootstraps_ignored() -> None:
    order = PartitionOrder([0])
    order.add(0, 0, [BootstrapEvent(T), row(10, 1), ResolvedEvent(10)])
    assert ids(order.next_step()) == [(10, 1)]
    order.add(0, 1, [row(10, 1), row(11, 2), ResolvedEvent(11)])
    assert ids(order.next_step()) == [(11, 2)]
    with pytest.raises(KeyError):
        order.add(5, 0, [])


def test_a_message_releasing_nothing_moves_the_offset_unless_the_decoder_holds_its_rows() -> None:
    order = PartitionOrder([0])
    order.add(0, 6, [])  # e.g. a watermark the decoder defers
    assert order.safe_offsets() == {0: 7}
    order.add(0, 7, [])  # a row the simple decoder holds until its schema arrives
    order.hold(0, 7)
    order.add(0, 8, [ResolvedEvent(5)])
    assert order.safe_offsets() == {0: 7}
    order.add(0, 20, [BootstrapEvent(T), row(10, 1), ResolvedEvent(12)], origin=7)  # the BOOTSTRAP releases it
    order.hold(0, None)
    assert order.safe_offsets() == {0: 7}  # the released row is not applied yet: resume where it was sent
    step = order.next_step()
    assert step is not None and ids(step) == [(10, 1)] and step.offsets == {0: 21}


def test_replays_are_counted_for_the_consumer_to_report() -> None:
    order = PartitionOrder([0])
    order.add(0, 0, [row(10, 1), ddl(11), ResolvedEvent(12)])
    assert order.next_step() is not None and order.next_step() is not None and order.replayed == 0
    order.add(0, 1, [row(10, 1), ddl(11), row(13, 2)])  # the sink restarted from an older checkpoint
    assert order.replayed == 2


def test_without_commit_ts_events_are_released_in_the_order_they_are_read() -> None:
    """canal-json without the TiDB extension: no watermark ever comes, so nothing waits for one; a DDL is applied
    after every row read before it and before every row read after it."""
    order = ArrivalOrder([0, 1])
    assert order.next_step() is None
    order.add(1, 0, [row(0, 2)])
    order.add(0, 0, [row(0, 1)])
    order.add(0, 1, [ddl(0)])
    order.add(1, 1, [row(0, 3)])
    order.add(0, 2, [ddl(0, "TRUNCATE TABLE t")])  # no commit-ts: equal queries are never taken for copies
    order.add(0, 3, [ddl(0, "TRUNCATE TABLE t")])
    first = order.next_step()
    assert first is not None and ids(first) == [(0, 2), (0, 1)] and first.offsets == {0: 1, 1: 1}
    second = order.next_step()
    assert second is not None and second.ddl is not None and not second.rows and second.offsets == {0: 2, 1: 1}
    third = order.next_step()
    assert third is not None and ids(third) == [(0, 3)] and third.offsets == {0: 2, 1: 2}
    fourth, fifth = order.next_step(), order.next_step()
    assert fourth is not None and fifth is not None and fourth.ddl is not None and fifth.ddl is not None
    assert fifth.offsets == {0: 4, 1: 2} and order.next_step() is None and order.replayed == 0
    with pytest.raises(TypeError, match="ResolvedEvent"):
        order.add(0, 4, [ResolvedEvent(5)])


@pytest.mark.parametrize("seed", range(40))
def test_committed_offsets_never_pass_a_message_whose_events_were_neither_applied_nor_counted(seed: int) -> None:
    """The invariant of issue 26 (a canal-json row dropped in silence while the group's offsets moved past it), over
    random TiCDC-shaped topics: rows in commit-ts order per partition, watermarks, DDL barriers on partition 0, and
    re-sends of rows below a watermark; with commit-ts (``PartitionOrder``) and without (``ArrivalOrder``).
    Whenever a step says which offsets may be committed, every message below them has each of its events applied
    (released in a step) or left out by the documented replay rule and counted; in the end, every event is one of
    the two and the count is exact."""
    rnd = random.Random(seed)
    with_ts = seed % 2 == 0
    partitions = [0, 1, 2][: rnd.randint(1, 3)]
    topic = _random_topic(rnd, partitions, with_ts)
    order: PartitionOrder | ArrivalOrder = PartitionOrder(partitions) if with_ts else ArrivalOrder(partitions)
    pending = {p: list(enumerate(msgs)) for p, msgs in topic.items()}
    read: dict[int, list[list[Event]]] = {p: [] for p in partitions}
    released: set[int] = set()
    high = 0  # the highest point a step released up to

    def apply(step: Step) -> None:
        nonlocal high
        released.update(id(r) for r in step.rows)
        if step.ddl is not None:
            released.add(id(step.ddl))
        high = max(high, step.upto)

    def accounted(ev: Event) -> bool:
        return not isinstance(ev, RowChange | DDLEvent) or id(ev) in released or (with_ts and ev.commit_ts <= high)

    while any(pending.values()):
        p = rnd.choice([q for q in partitions if pending[q]])
        offset, events = pending[p].pop(0)
        before = order.replayed
        order.add(p, offset, events)
        read[p].append(events)
        if order.replayed > before:  # left out as re-sends: each must be at or below what was released
            assert all(accounted(ev) for ev in events), (seed, p, offset)
        while rnd.random() < 0.5 and (step := order.next_step()) is not None:
            apply(step)
            for q, upto in step.offsets.items():
                below = [ev for events_below in read[q][:upto] for ev in events_below]
                assert all(accounted(ev) for ev in below), (seed, q, upto)
    while (step := order.next_step()) is not None:
        apply(step)
    changes = [ev for msgs in topic.values() for events in msgs for ev in events if not isinstance(ev, ResolvedEvent)]
    left_out = [ev for ev in changes if id(ev) not in released]
    assert len(left_out) == order.replayed and all(ev.commit_ts <= high for ev in left_out), (seed, left_out)
    assert order.safe_offsets() == {p: len(topic[p]) for p in partitions if topic[p]}


def _random_topic(rnd: random.Random, partitions: list[int], with_ts: bool) -> dict[int, list[list[Event]]]:
    """Messages per partition as a TiCDC changefeed writes them: transactions in commit-ts order spread over the
    partitions; with commit-ts, a watermark on every partition now and then (after every row up to it), some rows
    re-sent below a watermark, and the last watermark above everything; DDLs on partition 0 after every earlier row.
    Without commit-ts (canal-json without the extension) every ts is 0 and there are no watermarks."""
    topic: dict[int, list[list[Event]]] = {p: [] for p in partitions}
    sent: dict[int, list[RowChange]] = {p: [] for p in partitions}
    watermark = 0
    ts = 0
    for k in range(rnd.randint(5, 40)):
        ts += rnd.randint(1, 3)
        at = ts if with_ts else 0
        r = rnd.random()
        if r < 0.1:
            topic[0].append([ddl(at, f"ALTER TABLE t COMMENT '{k}'")])
        elif r < 0.25 and with_ts:
            watermark = ts
            for p in partitions:
                topic[p].append([ResolvedEvent(watermark)])
        elif r < 0.3 and with_ts and watermark:
            p = rnd.choice(partitions)
            old = [x for x in sent[p] if x.commit_ts <= watermark]
            if old:
                topic[p].append([row(rnd.choice(old).commit_ts, k)])  # a re-send of something below a watermark
        else:
            p = rnd.choice(partitions)
            rows = [row(at, k * 10 + i) for i in range(rnd.randint(1, 3))]
            topic[p].append(list(rows))
            sent[p].extend(rows)
    if with_ts:
        for p in partitions:
            topic[p].append([ResolvedEvent(ts + 1)])
    return topic
