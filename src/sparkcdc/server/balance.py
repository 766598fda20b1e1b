"""Where a cluster's changefeeds should run: TiCDC's balance by count, at changefeed granularity.

Pure: given where each changefeed runs now, which captures are alive and which are being drained, ``plan`` says
which changefeeds to start or move. A changefeed on a dead or draining capture (or on none) goes to the live
capture with the fewest; then, while two live captures differ by more than one, one changefeed moves from the
fullest to the emptiest. Ties go to ``first`` (the owner: a lone changefeed runs where the state machine is),
then to the lowest capture id, so every owner plans alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Key = tuple[str, str]  # (namespace, changefeed id)


@dataclass(frozen=True)
class Move:
    key: Key
    source: str | None  # None: not running anywhere (or on a capture that is gone)
    target: str


def plan(placed: Mapping[Key, str | None], live: Iterable[str], draining: Iterable[str] = (),
         first: str = "") -> list[Move]:  # fmt: skip
    """The moves that balance ``placed`` over ``live`` minus ``draining`` (none when no capture can take any)."""
    alive = set(live)
    targets = sorted(alive - set(draining), key=lambda c: (c != first, c))
    if not targets:
        return []
    load = {c: 0 for c in targets}
    homeless: list[tuple[Key, str | None]] = []
    for key, capture in sorted(placed.items()):
        if capture in load:
            load[capture] += 1
        else:
            homeless.append((key, capture if capture in alive else None))
    moves = []
    for key, source in homeless:
        target = min(targets, key=lambda c: load[c])
        load[target] += 1
        moves.append(Move(key, source, target))
    moved = {m.key for m in moves}
    while True:
        fullest = max(reversed(targets), key=lambda c: load[c])
        emptiest = min(targets, key=lambda c: load[c])
        if load[fullest] - load[emptiest] <= 1:
            return moves
        movable = [k for k, c in placed.items() if c == fullest and k not in moved]
        if not movable:
            return moves
        key = max(movable)
        moved.add(key)
        load[fullest] -= 1
        load[emptiest] += 1
        moves.append(Move(key, fullest, emptiest))
