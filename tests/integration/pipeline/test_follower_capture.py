"""Every server of a cluster captures: the owner leads, the others follow its published position, and their relay
logs hold the same transactions with the same commit-ts, so any of them can run a changefeed or take the lead.
Real MariaDB; the shared state is kept in memory here (its etcd form is tested in test_etcd_store)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from sparkcdc.capture import RelayLog
from sparkcdc.capture.position import BinlogPosition
from sparkcdc.capture.supervisor import CaptureThread
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.capture.conftest import decode_all
from tests.support import wait_for

pytestmark = pytest.mark.integration


class SharedInMemory:
    """``SharedCaptureState`` as one process sees it: what etcd holds, without etcd."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._anchor: BinlogPosition | None = None
        self._published: BinlogPosition | None = None
        self._reserved: dict[tuple[str, int], int] = {}

    def anchor(self) -> BinlogPosition | None:
        return self._anchor

    def set_anchor(self, position: BinlogPosition) -> None:
        self._anchor = position

    def reservations(self) -> dict[tuple[str, int], int]:
        with self._lock:
            return dict(self._reserved)

    def reserve(self, file: str, pos: int, tso: int) -> None:
        with self._lock:
            self._reserved[(file, pos)] = tso

    def published(self) -> BinlogPosition | None:
        return self._published

    def publish(self, position: BinlogPosition) -> None:
        if self._published is None or position.key() > self._published.key():
            self._published = position


def _uri(db: FreshDatabase) -> str:
    kw = db.puller_kwargs()
    return f"mysql://{kw['user']}:{kw['password']}@{kw['host']}:{kw['port']}"


def _txns(path: Path, start: int) -> list[tuple[int, str, int]]:
    relay = RelayLog(path)
    try:
        return [(t.commit_ts, t.binlog_file, t.binlog_pos) for t in relay.transactions(start)]
    finally:
        relay.close()


def _workload(db: FreshDatabase, rounds: int, first: int) -> None:
    """Transactions with idle gaps between them (so heartbeats reserve TSOs), a DDL and a multi-row one."""
    for i in range(first, first + rounds):
        db.execute(f"INSERT INTO f (id, v) VALUES ({i}, 'v{i}')")
        if i % 2:
            time.sleep(1.3)  # longer than the 1 s heartbeat
    db.execute("ALTER TABLE f ADD COLUMN IF NOT EXISTS n INT DEFAULT 7")
    db.execute(f"INSERT INTO f (id, v) VALUES ({first + 1000}, 'a'), ({first + 1001}, 'b')")


def test_a_follower_holds_the_leaders_transactions_and_takes_the_lead_without_changing_them(
    fresh_db: FreshDatabase, tmp_path: Path
) -> None:
    db, shared = fresh_db, SharedInMemory()
    db.execute("CREATE TABLE f (id INT PRIMARY KEY, v VARCHAR(20))")
    leader = CaptureThread(_uri(db), tmp_path / "a", shared=shared)
    start = leader.start()
    follower = CaptureThread(_uri(db), tmp_path / "b", shared=shared, follow=True)
    follower.start_pulling()
    try:
        _workload(db, 4, 0)
        wait_for(lambda: len(_txns(tmp_path / "a", start)) == 6, timeout=30, what="the leader's relay log")
        led = _txns(tmp_path / "a", start)
        wait_for(lambda: _txns(tmp_path / "b", start) == led, timeout=30, what="the follower to hold the same")
        assert len(shared.reservations()) >= 2  # idle gaps were reserved by the leader
        assert decode_all(tmp_path / "b", start) == decode_all(tmp_path / "a", start)
        # the follower's resolved ts moves with the leader's reservations while idle
        wait_for(lambda: follower.resolved_ts() > led[-1][0], timeout=15, what="the follower's resolved ts")
        assert follower.resolved_ts() <= leader.resolved_ts()

        # the leader goes: the follower commits nothing past what the leader published
        leader.close()
        published = shared.published()
        db.execute("INSERT INTO f (id, v) VALUES (50, 'after')")
        time.sleep(2.5)
        assert _txns(tmp_path / "b", start) == led
        assert shared.published() == published

        # the follower takes the lead from its own relay log; the old leader, back, follows it
        follower.close()
        follower = CaptureThread(_uri(db), tmp_path / "b", shared=shared)
        follower.start()
        leader = CaptureThread(_uri(db), tmp_path / "a", shared=shared, follow=True)
        leader.start_pulling()
        _workload(db, 2, 60)
        wait_for(lambda: len(_txns(tmp_path / "b", start)) == len(led) + 5, timeout=30, what="the new leader")
        new = _txns(tmp_path / "b", start)
        assert new[: len(led)] == led
        wait_for(lambda: _txns(tmp_path / "a", start) == new, timeout=30, what="the old leader to follow")
        assert decode_all(tmp_path / "a", start) == decode_all(tmp_path / "b", start)
        assert [t[0] for t in new] == sorted({t[0] for t in new})  # strictly increasing commit-ts
    finally:
        leader.close()
        follower.close()
