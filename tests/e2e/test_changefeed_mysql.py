"""MariaDB -> ``cdc server`` -> changefeed with a ``mysql://`` sink -> a second MariaDB: ``cdc check`` reports zero
difference for every type (max unsigned BIGINT, DATETIME(6), JSON, BIT, ENUM/SET, binary with 0x00/0xFF, emoji),
key-changing updates, multi-table transactions and add/drop/modify column, rename, truncate, drop and re-create."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.mysql.target import MysqlTarget
from tests.e2e.downstream import check, mysql_uri
from tests.e2e.test_consumer_changefeed import SETUP, WORKLOAD
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.consumer.servers import run_sql
from tests.integration.pipeline.server import SparkServer, now_tso
from tests.support import ServerOptions, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def spark_server_options() -> ServerOptions:
    """A sink's idle connections close after 2 s (instead of 10 min): the removed changefeed's test waits for it."""
    return ServerOptions(env={"SPARKCDC_SINK_IDLE_SECONDS": "2"})

TYPES = ("CREATE TABLE ty (id BIGINT UNSIGNED PRIMARY KEY, dt DATETIME(6), j JSON, b BIT(10), e ENUM('a','b','c'), "
         "s SET('x','y','z'), bin VARBINARY(16), t TEXT, f DOUBLE, d DECIMAL(30,10), u TINYINT UNSIGNED, c CHAR(4)) "
         "DEFAULT CHARSET=utf8mb4")  # fmt: skip
TYPE_ROWS = [
    "INSERT INTO ty VALUES (18446744073709551615, '2024-02-29 23:59:59.999999', '{\"k\": [1, \"\\u00e9\", null]}', "
    "b'1010101010', 'b', 'x,z', 0x00ff00ff, 'emoji \U0001f600 and \u597d', 1e300, -12345678901234567890.0123456789, "
    "255, 'abcd')",
    "INSERT INTO ty VALUES (0, '1970-01-01 00:00:01.000001', '[]', b'0', 'a', '', '', '', -0.5, 0, 0, '')",
    "INSERT INTO ty (id) VALUES (42)",
]
MORE = [
    "BEGIN",  # one transaction over three tables, with a key-changing update
    "INSERT INTO a VALUES (6, 'six', NULL, 1)",
    "UPDATE ty SET id = 43, e = 'c' WHERE id = 42",
    "UPDATE part SET s = 'txn' WHERE id = 4",
    "COMMIT",
    "UPDATE ty SET j = JSON_OBJECT('emoji', '\U0001f680'), bin = 0xff WHERE id = 0",
    "DELETE FROM ty WHERE id = 18446744073709551615",
    "INSERT INTO ty (id, bin) VALUES (18446744073709551615, 0x0000)",
]


def test_changefeed_into_mysql_matches_upstream(
    fresh_db: FreshDatabase,
    spark_server: SparkServer,
    target: MysqlTarget,
    tmp_path: Path,
) -> None:
    db = fresh_db
    db.execute(*SETUP, TYPES)
    tables = [s.replace("CREATE TABLE ", f"CREATE TABLE `{db.name}`.") for s in (*SETUP, TYPES)]
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS tidb_cdc",
            f"CREATE DATABASE `{db.name}`", *tables)  # fmt: skip  (as after a snapshot import)
    cfg = tmp_path / "cf.toml"
    cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n')
    server = spark_server
    uri = mysql_uri(target.host, target.port, "?worker-count=4&max-txn-row=64")
    created = server.cli("create", "--sink-uri", uri, "--changefeed-id", "to-mysql", "--config", str(cfg))
    assert created.returncode == 0, created.stderr + created.stdout
    db.execute(*TYPE_ROWS, *WORKLOAD, *MORE)
    end = now_tso(db)
    server.wait_checkpoint("to-mysql", end)
    listed = server.cli("query", "--changefeed-id", "to-mysql")
    assert listed.returncode == 0 and "root@" in listed.stdout, listed.stdout + listed.stderr
    server.remove("to-mysql")
    doc = check(db.server.connect_kwargs(), target, db.name)
    assert doc["match"], doc
    assert {t["table"]: t["target_rows"] for t in doc["tables"]} == {"a": 5, "b2": 4, "gone": 1, "part": 4, "ty": 3}


def test_a_removed_changefeed_closes_its_downstream_connections(
    fresh_db: FreshDatabase,
    spark_server: SparkServer,
    target: MysqlTarget,
    tmp_path: Path,
) -> None:
    """Spark keeps its Python workers; the sink's connections in them go once unused (here after 2 s), so a server
    that ran many changefeeds does not run the downstream out of connections."""
    db = fresh_db
    db.execute("CREATE TABLE k (id INT PRIMARY KEY, v INT)")
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", f"CREATE DATABASE `{db.name}`",
            f"CREATE TABLE `{db.name}`.k (id INT PRIMARY KEY, v INT)", "DROP USER IF EXISTS 'cfgone'@'%'",
            "CREATE USER 'cfgone'@'%' IDENTIFIED BY 'pw'", "GRANT ALL ON *.* TO 'cfgone'@'%'")  # fmt: skip

    def connections() -> int:
        return int(run_sql(target, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'cfgone'")[0][0])

    cfg = tmp_path / "cf.toml"
    cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n')
    server = spark_server  # started with SPARKCDC_SINK_IDLE_SECONDS=2 (spark_server_options)
    uri = f"mysql://cfgone:pw@{target.host}:{target.port}/"
    created = server.cli("create", "--sink-uri", uri, "--changefeed-id", "gone", "--config", str(cfg))
    assert created.returncode == 0, created.stderr + created.stdout
    # The rows' batch blocks on a locked table, so the sink holds its connection (an entry in use is never closed)
    # for as long as the test looks: with connections that go after 2 s, a look after the batch raced the sweeper.
    lock = target.connect(database="", autocommit=True)
    try:
        with lock.cursor() as cur:
            cur.execute(f"LOCK TABLES `{db.name}`.k WRITE")
        db.execute(*(f"INSERT INTO k VALUES ({i}, {i})" for i in range(20)))
        wait_for(connections, 120, "the sink's connection to the downstream", detail=server.tail)
    finally:
        lock.close()  # unlocks
    server.wait_checkpoint("gone", now_tso(db), timeout=120)
    assert server.cli("remove", "--changefeed-id", "gone").returncode == 0
    wait_for(lambda: connections() == 0, 60, "the removed changefeed's connections to close", 0.5, server.tail)
    assert run_sql(target, f"SELECT COUNT(*) FROM `{db.name}`.k")[0][0] == 20


def test_sync_points_name_points_where_the_downstream_equals_the_upstream(
    fresh_db: FreshDatabase,
    spark_server: SparkServer,
    target: MysqlTarget,
    tmp_path: Path,
) -> None:
    """With ``enable-sync-point`` and the shortest interval TiCDC allows (30 s), rows appear in
    ``tidb_cdc.syncpoint_v1`` once per interval; with the upstream quiet, the downstream at a sync point equals the
    upstream (``cdc check``) and its ``secondary_ts`` is the downstream's GTID position."""
    db = fresh_db
    db.execute(*SETUP)
    tables = [s.replace("CREATE TABLE ", f"CREATE TABLE `{db.name}`.") for s in SETUP]
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS tidb_cdc",
            f"CREATE DATABASE `{db.name}`", *tables)  # fmt: skip
    cfg = tmp_path / "cf.toml"
    cfg.write_text(f'enable-sync-point = true\nsync-point-interval = "30s"\n[filter]\nrules = ["{db.name}.*"]\n')
    server = spark_server

    def points() -> list[tuple[Any, ...]]:
        """The sync points so far (none before the sink created its table)."""
        if not run_sql(target, "SELECT 1 FROM information_schema.tables WHERE table_schema = 'tidb_cdc' "
                               "AND table_name = 'syncpoint_v1'"):  # fmt: skip
            return []
        return run_sql(target, "SELECT ticdc_cluster_id, changefeed, CAST(primary_ts AS UNSIGNED), secondary_ts "
                               "FROM tidb_cdc.syncpoint_v1 ORDER BY 3")  # fmt: skip

    created = server.cli("create", "--sink-uri", mysql_uri(target.host, target.port), "--changefeed-id", "sp",
                         "--config", str(cfg))  # fmt: skip
    assert created.returncode == 0, created.stderr + created.stdout
    db.execute(*WORKLOAD)
    quiet = now_tso(db)  # nothing is written upstream after this
    deadline = time.monotonic() + 100
    found = points()
    while sum(p[2] > quiet for p in found) < 2:
        assert server.changefeed("sp")["state"] == "normal" and time.monotonic() < deadline, (found, server.tail())
        time.sleep(1)
        found = points()
    doc = check(db.server.connect_kwargs(), target, db.name)
    gtid = run_sql(target, "SELECT @@gtid_binlog_pos")[0][0]
    assert doc["match"], doc
    assert {(p[0], p[1]) for p in found} == {("default", "default/sp")}
    primaries = [p[2] for p in found]
    intervals = [b >> 18 for b in primaries]  # physical milliseconds
    assert all((b // 30_000) > (a // 30_000) for a, b in itertools.pairwise(intervals)), found
    last = found[-1][3]
    assert last and all(part.count("-") == 2 for part in last.split(",")), found
    assert last.split("-")[:2] == gtid.split("-")[:2], (last, gtid)  # same domain and server: the downstream's
