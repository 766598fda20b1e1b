"""When a simple-protocol sink sends BOOTSTRAP messages (``spec/simple.md`` §4, TiCDC's bootstrap worker).

Pure bookkeeping, per (topic, table), of the TableInfo to announce, the rows sent since the last BOOTSTRAP
and when it was sent. TiCDC sends a table's BOOTSTRAP before its first rows, then whenever
``send-bootstrap-interval-in-sec`` has passed or ``send-bootstrap-in-msg-count`` rows were sent since the last
one: checked when rows come *and* on a 5 s ticker, so a table that stopped changing keeps being announced
until it has been idle for 30 minutes. Consumers that join mid-stream rely on that ticker: the simple decoder
reports a held row as never resolvable once a watermark is a whole bootstrap period younger than it.

The Kafka sink uses two trackers: each writer process decides with :meth:`on_rows` whether a BOOTSTRAP must
precede the rows it sends; the driver :meth:`record`s what the writers sent and asks :meth:`due` at every
batch commit (its ticker) which idle tables must be announced again.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from sparkcdc.model import TableInfo

MAX_INACTIVE_SECONDS: Final = 30 * 60.0


@dataclass(slots=True)
class _TableStats:
    table: TableInfo
    rows_since_bootstrap: int
    last_row_at: float
    last_bootstrap_at: float


@dataclass
class BootstrapTracker:
    """``clock`` returns seconds: monotonic in one process, wall time for a tracker the driver keeps on disk."""

    interval: float
    count: int
    clock: Callable[[], float] = time.monotonic
    _tables: dict[tuple[str, str, str], _TableStats] = field(default_factory=dict)

    def on_rows(self, topic: str, table: TableInfo, rows: int) -> bool:
        """Record ``rows`` rows of ``table`` about to be sent to ``topic``; True when a BOOTSTRAP must go first."""
        now = self.clock()
        stats = self._tables.get((topic, table.schema, table.table))
        due = stats is None or self._due(stats, now)
        self.record(topic, table, rows, bootstrapped=due)
        return due

    def record(self, topic: str, table: TableInfo, rows: int, *, bootstrapped: bool) -> None:
        """``rows`` rows of ``table`` were sent to ``topic``, after a BOOTSTRAP of it when ``bootstrapped``."""
        now = self.clock()
        key = (topic, table.schema, table.table)
        stats = self._tables.get(key)
        if stats is None or bootstrapped:
            self._tables[key] = _TableStats(table, rows, now, now if bootstrapped else -math.inf)
            return
        stats.table = table  # the latest version sent (a RENAME keeps the version: the name is in the key)
        stats.rows_since_bootstrap += rows
        stats.last_row_at = now

    def due(self) -> list[tuple[str, TableInfo]]:
        """The ticker: (topic, table) of every active table whose BOOTSTRAP is due now, counted as sent; tables
        without rows for 30 minutes are forgotten."""
        now = self.clock()
        for key in [k for k, s in self._tables.items() if now - s.last_row_at > MAX_INACTIVE_SECONDS]:
            del self._tables[key]
        out = []
        for (topic, _, _), stats in self._tables.items():
            if self._due(stats, now):
                stats.last_bootstrap_at, stats.rows_since_bootstrap = now, 0
                out.append((topic, stats.table))
        return out

    def _due(self, stats: _TableStats, now: float) -> bool:
        return now - stats.last_bootstrap_at >= self.interval or stats.rows_since_bootstrap >= self.count
