"""Heartbeat TSO reservations, by the binlog position where each was made.

An idle heartbeat reserves a TSO at the position the puller has reached, and every later transaction gets a
larger commit-ts. Pulling the same binlog again (after a rewind, on a new owner, or on a follower capture) must
give the same commit-ts, so each transaction applies the largest reservation made between the end of the
previous transaction and its own start: the reservations the first pull had applied to it through ``last_tso``.
Matching a whole range instead of the transaction's exact start keeps that true when a heartbeat fell between a
rotate and the events that follow it, where no transaction starts.
"""

from __future__ import annotations

import bisect

from sparkcdc.capture.position import file_seq

Key = tuple[int, int]


def position_key(file: str, pos: int) -> Key:
    """Sortable (file sequence, position); a puller that has not seen a file name yet (GTID start) is at 0."""
    return (file_seq(file) if file else 0, pos)


class Reservations:
    def __init__(self, items: dict[tuple[str, int], int] | None = None) -> None:
        self._keys: list[Key] = []
        self._tsos: list[int] = []
        self.merge(items or {})

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, file: str, pos: int, tso: int) -> None:
        """Record a reservation (a repeated one at the same position keeps the larger TSO)."""
        key = position_key(file, pos)
        i = bisect.bisect_left(self._keys, key)
        if i < len(self._keys) and self._keys[i] == key:
            self._tsos[i] = max(self._tsos[i], tso)
        else:
            self._keys.insert(i, key)
            self._tsos.insert(i, tso)

    def merge(self, items: dict[tuple[str, int], int]) -> None:
        for (file, pos), tso in items.items():
            self.add(file, pos, tso)

    def largest_in(self, low: Key, high: Key) -> int:
        """The largest TSO reserved at a position in ``[low, high]`` (0: none)."""
        lo = bisect.bisect_left(self._keys, low)
        hi = bisect.bisect_right(self._keys, high)
        return max(self._tsos[lo:hi], default=0)
