"""When a simple-protocol sink sends BOOTSTRAP messages (``spec/simple.md`` §4, TiCDC's bootstrap worker).

Pure bookkeeping for the Kafka sink: call ``on_row`` before sending each row (it returns a table to
bootstrap right away the first time a physical table is seen) and ``due`` every ``TICK_SECONDS`` (it returns
the tables whose periodic bootstrap is due and forgets tables idle for ``MAX_INACTIVE_SECONDS``). Where to
send (all partitions or partition 0) follows ``config.send_bootstrap_to_all_partition``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from sparkcdc.model import RowChange, TableInfo

from .config import SimpleConfig

TICK_SECONDS: Final = 5.0
GC_SECONDS: Final = 30.0
MAX_INACTIVE_SECONDS: Final = 30 * 60.0


@dataclass(slots=True)
class _TableStats:
    table: TableInfo
    rows_since_bootstrap: int
    last_row_at: float
    last_bootstrap_at: float


class BootstrapTracker:
    """Per physical table: the TableInfo to announce, rows since the last bootstrap and when it was sent.

    ``clock`` returns seconds (monotonic). Disabled (every method returns nothing) unless
    ``config.bootstrap_enabled``.
    """

    def __init__(self, config: SimpleConfig, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._config = config
        self._clock = clock
        self._tables: dict[int, _TableStats] = {}
        self._last_gc = clock()

    @property
    def enabled(self) -> bool:
        return self._config.bootstrap_enabled

    def at_start(self, tables: Iterable[TableInfo]) -> list[TableInfo]:
        """Tables to bootstrap when the changefeed starts (only with ``send-all-bootstrap-at-start``)."""
        if not self.enabled or not self._config.send_all_bootstrap_at_start:
            return []
        return list(tables)

    def on_row(self, row: RowChange) -> TableInfo | None:
        """Record a row about to be sent; returns its table when a bootstrap must precede it."""
        if not self.enabled:
            return None
        now = self._clock()
        key = row.physical_table_id or row.table.table_id
        stats = self._tables.get(key)
        if stats is None:
            self._tables[key] = _TableStats(row.table, 0, now, now)
            return row.table
        stats.rows_since_bootstrap += 1
        stats.last_row_at = now
        # RENAME TABLE keeps the version, so compare the name too.
        if stats.table.version != row.table.version or stats.table.table != row.table.table:
            stats.table = row.table
        return None

    def due(self) -> list[TableInfo]:
        """Tables whose periodic bootstrap is due now (interval elapsed or message count reached)."""
        if not self.enabled:
            return []
        now = self._clock()
        if now - self._last_gc >= GC_SECONDS:
            self._last_gc = now
            for key in [k for k, s in self._tables.items() if now - s.last_row_at > MAX_INACTIVE_SECONDS]:
                del self._tables[key]
        out = []
        interval = self._config.send_bootstrap_interval_in_sec
        count = self._config.send_bootstrap_in_msg_count
        for stats in self._tables.values():
            if now - stats.last_bootstrap_at >= interval or stats.rows_since_bootstrap >= count:
                stats.last_bootstrap_at = now
                stats.rows_since_bootstrap = 0
                out.append(stats.table)
        return out
