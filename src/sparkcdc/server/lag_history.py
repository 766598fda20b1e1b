"""The last hour of each changefeed's checkpoint lag and row count, for the status page's chart and rows/s.

Fed by the manager's poll with every runner status; keeps one sample per ``SAMPLE_S`` seconds, ``WINDOW_S`` back.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from sparkcdc.model import tso

SAMPLE_S = 10.0
WINDOW_S = 3600.0
RATE_WINDOW_S = 60.0


@dataclass(frozen=True)
class Sample:
    at: float  # Unix seconds
    lag_s: float
    rows: int


class LagHistory:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._samples: dict[str, deque[Sample]] = {}

    def record(self, changefeed: str, checkpoint_ts: int, rows: int) -> None:
        now = self.clock()
        lag = tso.lag_seconds(checkpoint_ts, now)
        with self._lock:
            samples = self._samples.setdefault(changefeed, deque())
            if samples and now - samples[-1].at < SAMPLE_S:
                return
            samples.append(Sample(now, lag, rows))
            while samples and now - samples[0].at > WINDOW_S:
                samples.popleft()

    def samples(self, changefeed: str) -> list[Sample]:
        with self._lock:
            return list(self._samples.get(changefeed, ()))

    def rows_per_second(self, changefeed: str) -> float:
        """Row changes per second over about the last minute (0 without two samples)."""
        samples = self.samples(changefeed)
        if len(samples) < 2:
            return 0.0
        last = samples[-1]
        first = next(s for s in samples if last.at - s.at <= RATE_WINDOW_S)
        if first is last:
            first = samples[-2]
        span = last.at - first.at
        return max(0, last.rows - first.rows) / span if span > 0 else 0.0

    def forget(self, changefeed: str) -> None:
        with self._lock:
            self._samples.pop(changefeed, None)
