"""Progress lines for a changefeed that is catching up, so a long catch-up is not silent.

While a changefeed's checkpoint trails the clock by more than ``BEHIND_S``, a line at most every ``EVERY_S``
says how many row changes it replicated, at what rate, how far behind it is and when it should be caught up: the
checkpoint gains on the clock at (checkpoint advance / wall time - 1), and the lag divided by that is the ETA.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from sparkcdc.model import tso

log = logging.getLogger(__name__)

BEHIND_S = 10.0
EVERY_S = 10.0


@dataclass
class _Mark:
    at: float  # monotonic
    checkpoint_ms: int
    rows: int


def describe_lag(seconds: float) -> str:
    """A lag in words: ``"3.2s"``, ``"4m 05s"``, ``"2h 03m"``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


class CatchUpLog:
    """Fed each runner status the manager polls; logs at most one progress line per changefeed every ``EVERY_S``."""

    def __init__(self, clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.monotonic = monotonic
        self._marks: dict[str, _Mark] = {}

    def update(self, changefeed: str, checkpoint_ts: int, rows: int) -> str | None:
        """Returns (and logs) the progress line when one is due."""
        now = self.monotonic()
        checkpoint_ms = tso.physical(checkpoint_ts)
        lag = tso.lag_seconds(checkpoint_ts, self.clock())
        mark = self._marks.get(changefeed)
        if lag <= BEHIND_S:
            self._marks.pop(changefeed, None)
            return None
        if mark is None:
            self._marks[changefeed] = _Mark(now, checkpoint_ms, rows)
            return None
        elapsed = now - mark.at
        if elapsed < EVERY_S:
            return None
        rate = max(0, rows - mark.rows) / elapsed
        gain = (checkpoint_ms - mark.checkpoint_ms) / 1000 / elapsed - 1  # seconds of lag made up per second
        eta = f"about {describe_lag(lag / gain)}" if gain > 0 else "unknown (not gaining on the upstream)"
        self._marks[changefeed] = _Mark(now, checkpoint_ms, rows)
        line = (f"changefeed={changefeed} catching up: {rows} row changes replicated, {rate:.0f} rows/s, "
                f"{describe_lag(lag)} behind, caught up in {eta}")  # fmt: skip
        log.info("%s", line)
        return line

    def forget(self, changefeed: str) -> None:
        self._marks.pop(changefeed, None)
