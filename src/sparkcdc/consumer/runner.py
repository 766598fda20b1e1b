"""The one run loop of every consumer: a :class:`~.source.Source`'s steps applied to a :class:`~.target.Target`.

Each step is durable in the target before the source is asked for the next (so a source acknowledges a step after
its ``yield``). A retryable error (the downstream or the source's storage or cluster unreachable for a while) closes
the source, waits (0.5 s, doubling up to 30 s) and starts it again from the positions the target holds; a bounded
source (a redo log, ``--once``) gives up after 5 failures in a row, others retry until stopped. Anything else ends
the run with its error.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final

from sparkcdc.consumer.source import Source
from sparkcdc.consumer.target import Target
from sparkcdc.errors import SparkcdcError
from sparkcdc.model.steps import EngineStats

log = logging.getLogger(__name__)

_FIRST_BACKOFF: Final = 0.5
_MAX_BACKOFF: Final = 30.0
_BOUNDED_FAILURES: Final = 5


class Consumer:
    """``source`` applied to ``target``. Not thread-safe: one loop per consumer."""

    def __init__(self, source: Source, target: Target) -> None:
        self.source = source
        self.target = target
        self.started = False  # whether the source ever started (connected, checked the target)
        self._started = False

    @property
    def stats(self) -> EngineStats:
        return self.target.stats

    def run_once(self) -> bool:
        """Start the source if it is not, then apply what it has now. Returns whether it had any step."""
        if not self._started:
            self.source.start(self.target)
            self._started = self.started = True
        applied = False
        for step in self.source.steps(self.target):
            self.target.apply(step)
            applied = True
        return applied

    def run(self, stop: threading.Event, *, pause: float = 0.0,
            on_progress: Callable[[Consumer], None] | None = None) -> None:  # fmt: skip
        """Poll until ``stop`` is set or the source is finished, ``pause`` seconds between polls, ``on_progress``
        after each. Raises the SparkcdcError that ended it (see the module docstring)."""
        backoff, failures = _FIRST_BACKOFF, 0
        while not stop.is_set():
            try:
                self.run_once()
            except SparkcdcError as e:
                failures += 1
                if not self.source.retryable(e) or (self.source.bounded and failures > _BOUNDED_FAILURES):
                    raise
                log.warning("retryable error, retrying in %.1fs: %s", backoff, e.message)
                self.source.close()
                self._started = False
                stop.wait(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)
                continue
            backoff, failures = _FIRST_BACKOFF, 0
            if on_progress is not None:
                on_progress(self)
            if self.source.finished:
                return
            if pause:
                stop.wait(pause)

    def close(self) -> None:
        try:
            self.source.close()
        finally:
            self.target.close()
