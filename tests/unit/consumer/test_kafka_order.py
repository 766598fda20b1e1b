"""TiCDC's Kafka-consumer ordering: global resolved ts, commit-ts order across partitions, DDL barriers, offsets."""

from __future__ import annotations

import pytest

from sparkcdc.consumer.kafka_order import PartitionOrder
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, RowChange, RowOp, TableInfo
from sparkcdc.model.events import BootstrapEvent, ResolvedEvent

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
