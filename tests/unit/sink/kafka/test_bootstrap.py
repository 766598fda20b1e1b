"""When the simple protocol's BOOTSTRAP is due: first rows of a table, then by interval or by row count."""

from __future__ import annotations

from sparkcdc.model import ColumnInfo, TableInfo
from sparkcdc.sink.kafka.writer import BootstrapTracker

T1 = TableInfo("db", "t", 1, (ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True),))
T2 = TableInfo("db", "u", 2, (ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True),))


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_first_rows_of_each_table_then_by_interval() -> None:
    clock = Clock()
    tracker = BootstrapTracker(interval=120, count=10_000, clock=clock)
    assert tracker.due("topic", T1, 5)
    assert not tracker.due("topic", T1, 5)
    assert tracker.due("topic", T2, 1)  # another table
    assert tracker.due("other", T1, 1)  # the same table on another topic
    clock.now = 119.9
    assert not tracker.due("topic", T1, 1)
    clock.now = 120.0
    assert tracker.due("topic", T1, 1)
    assert not tracker.due("topic", T1, 1)


def test_by_row_count() -> None:
    tracker = BootstrapTracker(interval=120, count=10, clock=Clock())
    assert tracker.due("t", T1, 4)
    assert not tracker.due("t", T1, 5)  # 9 rows since the bootstrap
    assert not tracker.due("t", T1, 1)  # 10: due at the next rows
    assert tracker.due("t", T1, 1)
