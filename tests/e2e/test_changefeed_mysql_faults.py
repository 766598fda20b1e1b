"""Fault tolerance of the MySQL sink end to end: MariaDB -> ``cdc server`` -> second MariaDB under a workload.

* kill -9 of the server (and its Spark JVM) five times at random moments: every restart replays the uncommitted
  batch, the per-table checkpoints written with the rows skip what was applied, and ``cdc check`` finds zero
  difference after catch-up; the checkpoint never goes back.
* the downstream stopped for 20 s (a clean shutdown, then started again on its port): the writers retry, the batch
  fails, the changefeed shows ``warning`` with the connection error, restarts its query and comes back to
  ``normal``; zero difference.
* a downstream error no retry can fix (the table dropped downstream): the changefeed goes to ``failed`` with the
  downstream's error text, its checkpoint stays below the failing transaction, and nothing of that table after it
  is applied.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.mysql.target import MysqlTarget
from tests.e2e.downstream import check, mysql_uri
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.consumer.servers import run_sql, target_of
from tests.integration.pipeline.server import Background, SparkServer, StatusWatch, Workload, clock_tso, now_tso

pytestmark = pytest.mark.e2e
log = logging.getLogger(__name__)

KILLS = 5
DOWN_SECONDS = 20.0


def prepare(db: FreshDatabase, target: MysqlTarget, work: Workload) -> None:
    """The workload's tables upstream and (empty) downstream, as after a snapshot import."""
    work.create()
    ddl = [f"CREATE TABLE `{db.name}`.{n} (id INT PRIMARY KEY, v VARCHAR(40), n BIGINT, d DECIMAL(12,3))"
           for n in work.names]  # fmt: skip
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS tidb_cdc",
            f"CREATE DATABASE `{db.name}`", *ddl)  # fmt: skip


def create(server: SparkServer, db: FreshDatabase, target: MysqlTarget, cf: str, tmp_path: Path) -> None:
    cfg = tmp_path / "cf.toml"
    cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n')
    uri = mysql_uri(target.host, target.port, "?worker-count=4")
    created = server.cli("create", "--sink-uri", uri, "--changefeed-id", cf, "--config", str(cfg))
    assert created.returncode == 0, created.stderr + created.stdout


def test_kill_9_during_mysql_workload(
    fresh_db: FreshDatabase, mariadb: MariaDB, target: MysqlTarget, tmp_path: Path
) -> None:
    rng = random.Random(2029)
    work = Workload(fresh_db, tables=3, seed=23, ddl_every=120)
    prepare(fresh_db, target, work)
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    create(server, fresh_db, target, "cf-kill", tmp_path)
    bg = Background(work)
    try:
        with StatusWatch(server, "cf-kill") as watch:
            watch.wait_past(clock_tso())
            bg.thread.start()
            since = clock_tso()
            for _ in range(KILLS):
                watch.wait_past(since)  # the (re)started query committed a batch
                watch.wait_polls(rng.randint(0, 20))
                since = clock_tso()
                server.kill()
                server.start()
                assert bg.error is None, bg.error
            bg.stop.set()
            bg.thread.join(60)
            assert bg.error is None, bg.error
            end = now_tso(fresh_db)
            server.wait_checkpoint("cf-kill", end, timeout=180)
    finally:
        bg.stop.set()
        bg.thread.join(60)
        server.stop()
    assert bg.steps > 50
    assert watch.checkpoints == sorted(watch.checkpoints), watch.checkpoints
    doc = check(fresh_db.server.connect_kwargs(), target, fresh_db.name)
    assert doc["match"], doc
    assert sorted(t["table"] for t in doc["tables"]) == work.names


@pytest.fixture
def private_downstream(tmp_path: Path) -> Iterator[MariaDB]:
    db = MariaDB(tmp_path / "down", server_id=31)
    try:
        yield db.start()
    finally:
        db.stop()


def test_downstream_stopped_for_20_seconds(
    fresh_db: FreshDatabase, private_downstream: MariaDB, spark_server: SparkServer, tmp_path: Path
) -> None:  # spark_server after private_downstream: its changefeeds are removed before that stops
    down = target_of(private_downstream)
    work = Workload(fresh_db, tables=3, seed=29, ddl_every=1000)
    prepare(fresh_db, down, work)
    server = spark_server
    create(server, fresh_db, down, "cf-down", tmp_path)
    bg = Background(work)
    try:
        with StatusWatch(server, "cf-down") as watch:
            watch.wait_past(clock_tso())
            bg.thread.start()
            watch.wait_past(clock_tso())  # rows are flowing
            stopped = time.monotonic()
            private_downstream.stop()
            try:
                watch.wait("the outage", lambda: time.monotonic() - stopped >= DOWN_SECONDS, DOWN_SECONDS + 30)
            finally:
                private_downstream.start()
            restarted = time.monotonic()
            watch.wait("warning", lambda: any(s["state"] == "warning" for t, s in watch.seen if t > stopped), 90)
            watch.wait("normal again", lambda: watch.seen[-1][1]["state"] == "normal", 180)
            bg.stop.set()
            bg.thread.join(60)
            assert bg.error is None, bg.error
            end = now_tso(fresh_db)
            server.wait_checkpoint("cf-down", end, timeout=180)
            recovered = time.monotonic()
    finally:
        bg.stop.set()
        bg.thread.join(60)
    warned = [(t, s) for t, s in watch.seen if t > stopped and s["state"] == "warning"]
    warning = warned[0][1]["last_warning"]
    log.info("downstream outage: warning %.1fs after the stop (%s), caught up %.1fs after the restart",
             warned[0][0] - stopped, warning, recovered - restarted)  # fmt: skip
    assert warning["code"].startswith("CDC:ErrMySQL"), warning
    assert all(s["state"] in ("normal", "warning") for _, s in watch.seen), watch.seen
    assert watch.checkpoints == sorted(watch.checkpoints), watch.checkpoints
    doc = check(fresh_db.server.connect_kwargs(), down, fresh_db.name)
    assert doc["match"], doc


def test_a_table_dropped_downstream_fails_the_changefeed(
    fresh_db: FreshDatabase, spark_server: SparkServer, target: MysqlTarget, tmp_path: Path
) -> None:
    db = fresh_db
    work = Workload(db, tables=2, seed=31)
    prepare(db, target, work)
    server = spark_server
    create(server, db, target, "cf-fail", tmp_path)
    db.execute("INSERT INTO w0 VALUES (1, 'before', 1, 1.5)", "INSERT INTO w1 VALUES (1, 'before', 1, 1.5)")
    server.wait_checkpoint("cf-fail", now_tso(db))
    run_sql(target, f"DROP TABLE `{db.name}`.w1")
    db.execute("INSERT INTO w1 VALUES (2, 'fails', 2, 2.5)")
    failing = now_tso(db)
    db.execute("INSERT INTO w0 VALUES (3, 'later', 3, 3.5)", "INSERT INTO w1 VALUES (3, 'later', 3, 3.5)")
    deadline = time.monotonic() + 120
    while (state := server.changefeed("cf-fail"))["state"] != "failed":
        assert state["state"] in ("normal", "warning") and time.monotonic() < deadline, (state, server.tail())
        time.sleep(0.3)
    error = state["error"]
    assert error["code"] == "CDC:ErrMySQLQueryError", error
    assert "w1" in error["message"] and "doesn't exist" in error["message"], error
    assert state["checkpoint_ts"] < failing
    rows = run_sql(target, f"SELECT id, v FROM `{db.name}`.w0 ORDER BY id")
    assert rows[0] == (1, "before")  # applied before the failure; w1 is gone downstream, nothing recreated it
    assert not run_sql(target, f"SHOW TABLES FROM `{db.name}` LIKE 'w1'")
