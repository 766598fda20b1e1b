"""Puller operations against the real server: heartbeats, reconnects, purged binlogs, GTID starts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkcdc.capture import BinlogPosition, RelayLog, StartPoint
from sparkcdc.errors import UpstreamError
from sparkcdc.model.events import RowChange
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.capture.conftest import Running, decode_all, for_schema, make_puller
from tests.support import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def running(fresh_db: FreshDatabase, tmp_path: Path) -> Iterator[Running]:
    fresh_db.execute("CREATE TABLE r (id INT PRIMARY KEY)")
    with Running(make_puller(fresh_db, tmp_path, heartbeat_s=0.2)) as r:
        yield r


def test_resolved_ts_advances_while_idle(running: Running, fresh_db: FreshDatabase, tmp_path: Path) -> None:
    relay = RelayLog(tmp_path)
    wait_for(lambda: relay.progress() is not None, what="first flush")
    first = relay.resolved_ts()
    wait_for(lambda: relay.resolved_ts() > first, what="heartbeat to advance the resolved ts")
    idle_resolved = relay.resolved_ts()
    fresh_db.execute("INSERT INTO r VALUES (1)")
    wait_for(lambda: len(relay.transactions(idle_resolved)) == 1, what="the insert")
    assert relay.transactions(idle_resolved)[0].commit_ts > idle_resolved
    assert running.error is None


def test_reconnect_resumes_without_loss_or_duplicates(running: Running, fresh_db: FreshDatabase,
                                                      tmp_path: Path) -> None:
    relay = RelayLog(tmp_path)
    wait_for(lambda: relay.progress() is not None, what="first flush")
    start = relay.resolved_ts()
    for i in range(5):
        fresh_db.execute(f"INSERT INTO r VALUES ({i})")
    wait_for(lambda: len(relay.transactions(start)) == 5, what="first batch")
    dumps = [r[0] for r in fresh_db.query("SHOW PROCESSLIST") if r[4] == "Binlog Dump"]
    assert dumps, "the puller's dump thread is visible upstream"
    for thread_id in dumps:
        fresh_db.execute(f"KILL {thread_id}")
    for i in range(5, 10):
        fresh_db.execute(f"INSERT INTO r VALUES ({i})")
    wait_for(lambda: len(relay.transactions(start)) == 10, what="second batch after the reconnect")
    assert running.error is None
    ids = [e.after[0] for e in for_schema(decode_all(tmp_path, start), fresh_db.name)
           if isinstance(e, RowChange) and e.after is not None]
    assert ids == list(range(10))
    ts = [t.commit_ts for t in relay.transactions(start)]
    assert ts == sorted(set(ts))


def test_purged_binlog_is_a_clear_error(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    status = fresh_db.query("SHOW MASTER STATUS")[0]
    old = BinlogPosition(status[0], int(status[1]))
    fresh_db.execute("FLUSH BINARY LOGS")
    newest = fresh_db.query("SHOW MASTER STATUS")[0][0]

    def purged() -> bool:
        # A binlog still read by a lingering dump thread (an earlier test's replica) is not purged yet.
        fresh_db.execute(f"PURGE BINARY LOGS TO '{newest}'")
        return old.file not in [r[0] for r in fresh_db.query("SHOW BINARY LOGS")]

    wait_for(purged, what=f"{old.file} to be purged")
    puller = make_puller(fresh_db, tmp_path, start=StartPoint.at(old))
    with pytest.raises(UpstreamError) as info:
        puller.catch_up(30)
    puller.close()
    assert info.value.code == "CDC:ErrBinlogPurged" and not info.value.retryable
    assert old.file in str(info.value) and "purged" in str(info.value)
    assert RelayLog(tmp_path).transactions() == []


def test_start_from_gtid(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    fresh_db.execute("CREATE TABLE g (id INT PRIMARY KEY)", "INSERT INTO g VALUES (1)")
    gtid = fresh_db.query("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]
    fresh_db.execute("INSERT INTO g VALUES (2)", "INSERT INTO g VALUES (3)")
    puller = make_puller(fresh_db, tmp_path, start=StartPoint.from_gtid(gtid))
    puller.catch_up(30)
    puller.close()
    ids = [e.after[0] for e in for_schema(decode_all(tmp_path), fresh_db.name)
           if isinstance(e, RowChange) and e.after is not None]
    assert ids == [2, 3]
    assert RelayLog(tmp_path).transactions()[0].gtid != gtid


def test_rotate_mid_stream(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    fresh_db.execute("CREATE TABLE rot (id INT PRIMARY KEY)")
    puller = make_puller(fresh_db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    fresh_db.execute("INSERT INTO rot VALUES (1)")
    before = fresh_db.query("SHOW MASTER STATUS")[0][0]
    fresh_db.execute("FLUSH BINARY LOGS", "INSERT INTO rot VALUES (2)")
    after = fresh_db.query("SHOW MASTER STATUS")[0][0]
    progress = puller.catch_up(30)
    puller.close()
    assert after != before and progress.binlog_file == after
    txns = RelayLog(tmp_path).transactions(start)
    assert [t.binlog_file for t in txns] == [before, after]
    ids = [e.after[0] for e in for_schema(decode_all(tmp_path, start), fresh_db.name)
           if isinstance(e, RowChange) and e.after is not None]
    assert ids == [1, 2]


def test_start_tso_is_deterministic(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    fresh_db.execute("CREATE TABLE st (id INT PRIMARY KEY)")
    for i in range(6):
        fresh_db.execute(f"INSERT INTO st VALUES ({i})")
    full = make_puller(fresh_db, tmp_path / "full", start=StartPoint.from_tso(0))
    full.catch_up(60)
    full.close()
    everything = RelayLog(tmp_path / "full").transactions()
    assert len(everything) >= 7
    cut = everything[len(everything) // 2].commit_ts
    part = make_puller(fresh_db, tmp_path / "part", start=StartPoint.from_tso(cut))
    part.catch_up(60)
    part.close()
    later = RelayLog(tmp_path / "part").transactions()
    assert [(t.commit_ts, t.binlog_file, t.binlog_pos) for t in later] == [
        (t.commit_ts, t.binlog_file, t.binlog_pos) for t in everything if t.commit_ts > cut
    ]


@pytest.mark.exclusive  # the stop is timed
def test_stopping_with_a_backlog_releases_the_reader(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    fresh_db.execute("CREATE TABLE bl (id INT PRIMARY KEY, pad VARCHAR(100))")
    puller = make_puller(fresh_db, tmp_path)
    puller.catch_up(30)
    fresh_db.execute("INSERT INTO bl SELECT seq, REPEAT('x', 100) FROM seq_1_to_1000")
    file, pos = fresh_db.query("SHOW MASTER STATUS")[0][:2]
    for k in range(1, 60):  # ~7 MB of row events behind the stop point: the reader's queue fills up
        fresh_db.execute(f"INSERT INTO bl SELECT seq + {k * 1000}, REPEAT('x', 100) FROM seq_1_to_1000")
    baseline = threading.active_count()
    started = time.monotonic()
    puller.run(until=BinlogPosition(file, int(pos)), timeout=60)
    assert time.monotonic() - started < 8
    assert threading.active_count() <= baseline
    assert len(RelayLog(tmp_path).transactions(0)) >= 1
    puller.catch_up(60)  # and it continues from where it stopped
    puller.close()
    ids = [e.after[0] for e in for_schema(decode_all(tmp_path), fresh_db.name)
           if isinstance(e, RowChange) and e.after is not None]
    assert ids == list(range(1, 60001))


def test_statement_based_dml_is_refused(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    fresh_db.execute("CREATE TABLE sb (id INT PRIMARY KEY)")
    puller = make_puller(fresh_db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    fresh_db.execute("SET SESSION binlog_format = 'STATEMENT'", "INSERT INTO sb VALUES (1)",
                     "SET SESSION binlog_format = 'ROW'")
    try:
        with pytest.raises(UpstreamError, match="statement-based DML") as info:
            puller.catch_up(30)
        puller.close()
        assert not info.value.retryable
        assert RelayLog(tmp_path).transactions(start) == []  # nothing half-captured
    finally:
        # Later scans from the oldest binlog (other tests' start-ts) must not meet this event.
        fresh_db.execute("FLUSH BINARY LOGS")
        newest = fresh_db.query("SHOW MASTER STATUS")[0][0]

        def purged() -> bool:
            fresh_db.execute(f"PURGE BINARY LOGS TO '{newest}'")
            return [r[0] for r in fresh_db.query("SHOW BINARY LOGS")] == [newest]

        wait_for(purged, what="old binlogs to be purged")
