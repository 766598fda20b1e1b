"""When the simple protocol's BOOTSTRAP is due (spec/simple.md §4, TiCDC's bootstrap worker): before a table's
first rows, then by interval or row count, checked when rows come and by the ticker; idle tables forgotten."""

from __future__ import annotations

import pickle
import time

from sparkcdc.codec.simple.bootstrap import MAX_INACTIVE_SECONDS, BootstrapTracker

from .simple_support import user_table

T1, T2 = user_table(1), user_table(1, name="other")


class Seconds:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_first_rows_of_each_table_then_by_interval() -> None:
    clock = Seconds()
    tracker = BootstrapTracker(interval=120, count=10_000, clock=clock)
    assert tracker.on_rows("topic", T1, 5)
    assert not tracker.on_rows("topic", T1, 5)
    assert tracker.on_rows("topic", T2, 1)  # another table
    assert tracker.on_rows("other", T1, 1)  # the same table on another topic
    clock.now += 119.9
    assert not tracker.on_rows("topic", T1, 1)
    clock.now += 0.1
    assert tracker.on_rows("topic", T1, 1)
    assert not tracker.on_rows("topic", T1, 1)


def test_by_row_count() -> None:
    tracker = BootstrapTracker(interval=120, count=10, clock=Seconds())
    assert tracker.on_rows("t", T1, 4)
    assert not tracker.on_rows("t", T1, 5)  # 9 rows since the bootstrap
    assert not tracker.on_rows("t", T1, 1)  # 10: due at the next rows
    assert tracker.on_rows("t", T1, 1)


def test_the_ticker_announces_idle_tables_with_their_latest_schema_until_they_are_inactive() -> None:
    clock = Seconds()
    tracker = BootstrapTracker(interval=120, count=10_000, clock=clock)
    tracker.record("topic", T1, 3, bootstrapped=True)  # a writer sent a BOOTSTRAP, then rows
    assert tracker.due() == []
    newer = user_table(2)
    tracker.record("topic", newer, 1, bootstrapped=False)
    clock.now += 120
    assert tracker.due() == [("topic", newer)]  # no rows since, still announced, at the latest version
    assert tracker.due() == []  # counted as sent
    clock.now += 120
    tracker.record("topic", newer, 1, bootstrapped=True)  # the writer's own BOOTSTRAP resets the interval
    assert tracker.due() == []
    clock.now = 100 + 240 + MAX_INACTIVE_SECONDS + 1  # no rows for 30 minutes: forgotten
    assert tracker.due() == []
    assert tracker.on_rows("topic", newer, 1)  # seen again as a new table


def test_rows_the_ticker_has_not_seen_announced_first_count_toward_the_message_count() -> None:
    tracker = BootstrapTracker(interval=120, count=10, clock=Seconds())
    tracker.record("t", T1, 6, bootstrapped=False)  # a writer the driver never heard from before
    assert tracker.due() == [("t", T1)]  # never announced by this tracker: due at once
    tracker.record("t", T1, 10, bootstrapped=False)
    assert tracker.due() == [("t", T1)]  # 10 rows since the last one


def test_a_wall_clock_tracker_survives_pickling() -> None:
    tracker = BootstrapTracker(interval=120, count=10, clock=time.time)
    tracker.record("t", T1, 1, bootstrapped=True)
    again = pickle.loads(pickle.dumps(tracker))
    assert again.due() == [] and not again.on_rows("t", T1, 1)
