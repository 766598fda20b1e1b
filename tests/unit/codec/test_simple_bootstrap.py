"""Bootstrap scheduling rules of the simple protocol (spec/simple.md §4)."""

from __future__ import annotations

from sparkcdc.codec.simple.bootstrap import MAX_INACTIVE_SECONDS, BootstrapTracker
from sparkcdc.codec.simple.config import SimpleConfig
from sparkcdc.model import RowChange, RowOp, TableInfo

from .simple_support import user_table


class Seconds:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _row(table: TableInfo) -> RowChange:
    return RowChange(1, table, RowOp.INSERT, None, (1, "a", 1, 1.0), 148)


def test_first_row_bootstraps_then_interval_and_count_rules() -> None:
    clock = Seconds()
    cfg = SimpleConfig.from_options({"send-bootstrap-interval-in-sec": 120, "send-bootstrap-in-msg-count": 3})
    tracker = BootstrapTracker(cfg, clock=clock)
    t1 = user_table(1)
    assert tracker.on_row(_row(t1)) is t1
    assert tracker.on_row(_row(t1)) is None
    assert tracker.due() == []
    tracker.on_row(_row(t1))
    tracker.on_row(_row(t1))
    assert tracker.due() == [t1]  # 3 rows since the last bootstrap
    assert tracker.due() == []
    clock.now += 120
    t2 = user_table(2, name="renamed")
    tracker.on_row(_row(t2))
    assert tracker.due() == [t2]  # interval elapsed; the remembered table was refreshed


def test_inactive_tables_are_forgotten_and_disabled_tracker_is_silent() -> None:
    clock = Seconds()
    tracker = BootstrapTracker(SimpleConfig(), clock=clock)
    t1 = user_table(1)
    assert tracker.on_row(_row(t1)) is t1
    clock.now += MAX_INACTIVE_SECONDS + 1
    assert tracker.due() == []
    assert tracker.on_row(_row(t1)) is t1  # seen again as a new table
    off = BootstrapTracker(SimpleConfig.from_options({"send-bootstrap-in-msg-count": "0"}), clock=clock)
    assert off.on_row(_row(t1)) is None
    assert off.due() == [] and off.at_start([t1]) == []
    start = BootstrapTracker(SimpleConfig.from_options({"send-all-bootstrap-at-start": True}), clock=clock)
    assert start.at_start([t1]) == [t1]
