"""The relay source's batch planning: DDL barrier, byte cap, and pacing (one batch per batch_interval while
caught up, back to back while behind). Pure: a relay index in SQLite, no Spark job."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.capture.relay_log import connect_index
from sparkcdc.pipeline import relay_source
from sparkcdc.pipeline.relay_source import RelayStreamReader
from sparkcdc.pipeline.spec import FeedSpec


class Relay:
    """A relay index with hand-made transactions (no segments: planning reads only the index)."""

    def __init__(self, capture_dir: Path) -> None:
        (capture_dir / "relay").mkdir(parents=True)
        self.db = connect_index(capture_dir / "relay")

    def txn(self, ts: int, length: int = 100, ddl: bool = False) -> None:
        self.db.execute("INSERT INTO txn VALUES (?, 0, 0, ?, 'f', 4, '', '', ?)", (ts, length, int(ddl)))

    def resolve(self, ts: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO progress VALUES (1, ?, ?, 'f', 4, '')", (ts, ts))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(relay_source.time, "monotonic", c)
    return c


def reader(tmp_path: Path, interval: float = 5.0, max_batch_bytes: int = 1 << 20, target_ts: int = 0
           ) -> RelayStreamReader:  # fmt: skip
    spec = FeedSpec(changefeed="default/cf", capture_dir=str(tmp_path / "capture"), state_dir=str(tmp_path / "cf"),
                    sink_uri="file:///tmp/x?protocol=csv", start_ts=10, batch_interval=interval,
                    max_batch_bytes=max_batch_bytes, target_ts=target_ts)  # fmt: skip
    (tmp_path / "cf").mkdir()
    return RelayStreamReader(spec)


def test_caught_up_query_plans_one_batch_per_interval(tmp_path: Path, clock: Clock) -> None:
    relay = Relay(tmp_path / "capture")
    relay.txn(20)
    relay.resolve(30)
    r = reader(tmp_path)
    assert r.latestOffset({"resolved_ts": 10}) == {"resolved_ts": 30}
    relay.txn(40)
    relay.resolve(50)
    clock.now += 4.9
    assert r.latestOffset({"resolved_ts": 30}) == {"resolved_ts": 30}  # not yet: nothing planned
    clock.now += 0.1
    assert r.latestOffset({"resolved_ts": 30}) == {"resolved_ts": 50}


def test_batch_cut_by_a_ddl_is_followed_at_once(tmp_path: Path, clock: Clock) -> None:
    relay = Relay(tmp_path / "capture")
    for ts, ddl in [(20, False), (25, True), (30, False), (35, True), (40, False)]:
        relay.txn(ts, ddl=ddl)
    relay.resolve(50)
    r = reader(tmp_path, interval=60)
    assert r.latestOffset({"resolved_ts": 10}) == {"resolved_ts": 25}  # the DDL barrier
    assert r.latestOffset({"resolved_ts": 25}) == {"resolved_ts": 35}  # behind: no wait for the interval
    assert r.latestOffset({"resolved_ts": 35}) == {"resolved_ts": 50}
    relay.txn(60)
    relay.resolve(70)
    assert r.latestOffset({"resolved_ts": 50}) == {"resolved_ts": 50}  # caught up: wait again
    clock.now += 60
    assert r.latestOffset({"resolved_ts": 50}) == {"resolved_ts": 70}


def test_batch_cut_by_the_byte_cap_is_followed_at_once(tmp_path: Path, clock: Clock) -> None:
    relay = Relay(tmp_path / "capture")
    for ts in (20, 30, 40):
        relay.txn(ts, length=600)
    relay.resolve(50)
    r = reader(tmp_path, interval=60, max_batch_bytes=1000)
    assert r.latestOffset({"resolved_ts": 10}) == {"resolved_ts": 30}
    assert r.latestOffset({"resolved_ts": 30}) == {"resolved_ts": 50}


def test_no_batch_goes_past_target_ts(tmp_path: Path, clock: Clock) -> None:
    relay = Relay(tmp_path / "capture")
    relay.txn(20)
    relay.txn(40)
    relay.resolve(50)
    r = reader(tmp_path, interval=0, target_ts=30)
    assert r.latestOffset({"resolved_ts": 10}) == {"resolved_ts": 30}
    assert r.latestOffset({"resolved_ts": 30}) == {"resolved_ts": 30}


def test_a_draining_source_plans_nothing(tmp_path: Path, clock: Clock) -> None:
    relay = Relay(tmp_path / "capture")
    relay.txn(20)
    relay.resolve(50)
    r = reader(tmp_path, interval=0)
    r.spec.drain_path.touch()
    assert r.latestOffset({"resolved_ts": 10}) == {"resolved_ts": 10}
    r.spec.drain_path.unlink()
    assert r.latestOffset({"resolved_ts": 10}) == {"resolved_ts": 50}
