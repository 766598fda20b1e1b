"""Catch-up progress lines: only while behind, at most every 10 s, with rate and an ETA from how fast the
checkpoint gains on the clock."""

from __future__ import annotations

from sparkcdc.model import tso
from sparkcdc.server.catchup import CatchUpLog, describe_lag


class Clocks:
    def __init__(self) -> None:
        self.wall = 1_700_000_000.0
        self.mono = 100.0

    def tick(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


def ts_at(wall: float) -> int:
    return tso.compose(int(wall * 1000))


def test_lines_while_behind_with_rate_and_eta() -> None:
    c = Clocks()
    log = CatchUpLog(lambda: c.wall, lambda: c.mono)
    start = c.wall - 600  # ten minutes behind
    assert log.update("cf", ts_at(start), 0) is None  # the first sighting only marks
    c.tick(5)
    assert log.update("cf", ts_at(start + 20), 1000) is None  # not 10 s yet
    c.tick(5)
    # 10 s of wall time moved the checkpoint 40 s: it gains 3 s a second on a lag of 570 s -> 190 s
    line = log.update("cf", ts_at(start + 40), 2000)
    assert line == ("changefeed=cf catching up: 2000 row changes replicated, 200 rows/s, 9m 30s behind, "
                    "caught up in about 3m 10s")  # fmt: skip
    c.tick(10)
    line = log.update("cf", ts_at(start + 45), 2100)  # slower than the clock now
    assert line is not None and "caught up in unknown (not gaining on the upstream)" in line


def test_no_lines_once_caught_up() -> None:
    c = Clocks()
    log = CatchUpLog(lambda: c.wall, lambda: c.mono)
    for _ in range(5):
        c.tick(10)
        assert log.update("cf", ts_at(c.wall - 2), 10) is None


def test_lag_in_words() -> None:
    assert describe_lag(3.21) == "3.2s"
    assert describe_lag(245) == "4m 05s"
    assert describe_lag(7380) == "2h 03m"
