"""What a sink keeps in a Python worker from one batch to the next, closed once it has gone unused for a while.

Spark reuses a Python worker for many tasks, so a sink's producer or database connections are made once per worker
and changefeed, not once per batch. But no worker is told when a changefeed is paused, removed or given another sink
URI: without a limit, every changefeed a long-running server ever ran would keep its connections open in every
worker until the server stops (a MySQL downstream runs out of connections). So, as a connection pool closes idle
connections, an entry nobody has used for ``SPARKCDC_SINK_IDLE_SECONDS`` (default 600) is closed by a background
thread of the worker; the next batch that needs it makes a new one. An entry is never closed while in use.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Final, Generic, TypeVar

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

IDLE_ENV: Final = "SPARKCDC_SINK_IDLE_SECONDS"
DEFAULT_IDLE_SECONDS: Final = 600.0


def idle_seconds() -> float:
    """How long an entry may go unused (``SPARKCDC_SINK_IDLE_SECONDS``; a bad value keeps the default)."""
    raw = os.environ.get(IDLE_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_IDLE_SECONDS
    except ValueError:
        value = 0.0
    if not value > 0:
        log.warning("%s=%r is not a positive number of seconds; using %g", IDLE_ENV, raw, DEFAULT_IDLE_SECONDS)
        return DEFAULT_IDLE_SECONDS
    return value


class _Entry(Generic[V]):
    __slots__ = ("used", "users", "value")

    def __init__(self, value: V, used: float) -> None:
        self.value = value
        self.used = used
        self.users = 0


class WorkerCache(Generic[K, V]):
    """Entries by key, each closed with ``close`` once no one has used it for ``idle`` seconds (thread-safe).

    ``background`` starts, on first use, the daemon thread that closes idle entries (in the process that uses the
    cache: Spark forks its Python workers, and a thread does not survive a fork); without it only :meth:`sweep`
    closes them.
    """

    def __init__(
        self,
        close: Callable[[V], None],
        idle: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
    ) -> None:
        self._close = close
        self._idle = idle if idle is not None else idle_seconds()
        self._clock = clock
        self._background = background
        self._entries: dict[K, _Entry[V]] = {}
        self._lock = threading.Lock()
        self._sweeper: threading.Thread | None = None

    @contextmanager
    def use(self, key: K, create: Callable[[], V]) -> Iterator[V]:
        """The entry of ``key`` (made with ``create`` when there is none), held for the ``with`` block."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry(create(), self._clock())
            entry.users += 1
            if self._background and (self._sweeper is None or not self._sweeper.is_alive()):
                self._sweeper = threading.Thread(target=self._sweep_forever, name="sink-idle-sweeper", daemon=True)
                self._sweeper.start()
        try:
            yield entry.value
        finally:
            with self._lock:
                entry.users -= 1
                entry.used = self._clock()

    def pop(self, key: K) -> V | None:
        """Forget ``key``'s entry and return it (the caller closes it)."""
        with self._lock:
            entry = self._entries.pop(key, None)
        return entry.value if entry is not None else None

    def sweep(self) -> int:
        """Close the entries no one has used for ``idle`` seconds; returns how many."""
        now = self._clock()
        with self._lock:
            idle = [k for k, e in self._entries.items() if e.users == 0 and now - e.used > self._idle]
            stale = [self._entries.pop(k).value for k in idle]
        for value in stale:
            try:
                self._close(value)
            except Exception:  # an idle client that fails to close is being thrown away either way
                log.debug("closing an idle sink client failed", exc_info=True)
        return len(stale)

    def __len__(self) -> int:
        return len(self._entries)

    def _sweep_forever(self) -> None:
        while True:
            time.sleep(min(self._idle / 2, 60.0))
            self.sweep()
