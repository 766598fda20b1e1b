"""MariaDB -> ``cdc server`` -> ``delta://`` and ``iceberg://`` (its SQL catalog on the MariaDB) at once: every
table read back by readers written from the formats' specs (``lake_readers``, no code shared with delta-rs or
pyiceberg) equals the upstream, and ``sparkcdc.lake.read_as_of`` at each of five upstream points equals the
upstream as it was then. Workload: every MySQL type, key-changing updates, deletes, multi-table transactions, ADD
COLUMN with a default, a widened VARCHAR, CREATE TABLE and TRUNCATE, DROP COLUMN, a column rename, INT -> BIGINT and
RENAME TABLE mid-stream, and a table without a key under force-replicate (its change log read back as the rows it
leaves)."""

from __future__ import annotations

import random
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pymysql
import pytest

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.lake import read_as_of
from tests.e2e.lake_readers import read_delta, read_iceberg
from tests.e2e.test_changefeed_mysql import MORE, TYPE_ROWS, TYPES
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.replay import text
from tests.integration.pipeline.server import Background, Paced, SparkServer, Workload, now_tso

pytestmark = pytest.mark.e2e

SETUP = [
    TYPES,
    "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20), d DECIMAL(10,2), ts DATETIME(3))",
    "CREATE TABLE b (id INT PRIMARY KEY, n BIGINT, bin VARBINARY(8))",
    "CREATE TABLE part (id INT PRIMARY KEY, s VARCHAR(10)) PARTITION BY HASH(id) PARTITIONS 3",
    "CREATE TABLE ck (k1 INT, k2 VARCHAR(8), v INT, PRIMARY KEY (k1, k2))",
    "CREATE TABLE ty2 (id MEDIUMINT UNSIGNED PRIMARY KEY, big DECIMAL(65,30), f FLOAT, dt DATE, tm TIME(3), y YEAR, "
    "sb BIGINT, ti TINYINT, bl BLOB, u INT UNSIGNED, lt LONGTEXT)",
    "CREATE TABLE nk (a INT, b VARCHAR(10))",  # no key: appended as a change log (force-replicate)
]
PHASES = [
    [*TYPE_ROWS,
     "INSERT INTO a VALUES (1, 'one', 1.50, '2024-01-01 00:00:00.001'), (2, 'two', NULL, NULL), (3, 'x', 3.25, NULL)",
     "INSERT INTO b VALUES (10, 100, 0x00ff), (11, 110, NULL), (12, 120, '')",
     "INSERT INTO part VALUES (1, 'p1'), (2, 'p2'), (3, 'p3'), (4, 'p4'), (5, 'p5')",
     "INSERT INTO ck VALUES (1, 'a', 1), (1, 'b', 2), (2, 'a', 3)",
     "INSERT INTO ty2 VALUES (16777215, 12345678901234567890123456789012345.123456789012345678901234567891, 1.5, "
     "'2024-02-29', '-838:59:59.500', 2155, -9223372036854775808, -128, 0x00ff, 4294967295, 'long'), "
     "(0, 0, -0.25, '0000-00-00', '00:00:00', 0, 9223372036854775807, 127, '', 0, '')",
     "INSERT INTO nk VALUES (1, 'x'), (1, 'x'), (2, NULL)"],
    ["BEGIN", "UPDATE a SET v = 'uno' WHERE id = 1", "UPDATE b SET id = 13 WHERE id = 12",
     "DELETE FROM part WHERE id = 2", "UPDATE ck SET k2 = 'c' WHERE k1 = 1 AND k2 = 'b'", "COMMIT",
     "UPDATE part SET id = 20 WHERE id = 3", "INSERT INTO part VALUES (3, 'again')", "DELETE FROM a WHERE id = 3",
     "UPDATE nk SET b = 'y' WHERE a = 2", "DELETE FROM nk WHERE a = 1 LIMIT 1"],
    ["ALTER TABLE a ADD COLUMN extra INT NOT NULL DEFAULT 7", "INSERT INTO a VALUES (4, 'four', 4.00, NULL, 8)",
     "ALTER TABLE a MODIFY COLUMN v VARCHAR(40)", "UPDATE a SET v = 'a much longer value than before' WHERE id = 2",
     "ALTER TABLE b ADD COLUMN note VARCHAR(10)", "UPDATE b SET note = 'n' WHERE id = 10"],
    ["CREATE TABLE c (id BIGINT PRIMARY KEY, s VARCHAR(10))", "INSERT INTO c VALUES (1, 'c1'), (2, 'c2')",
     "TRUNCATE TABLE b", "INSERT INTO b VALUES (50, 500, 0x05, 'after')",
     "BEGIN", "INSERT INTO c VALUES (3, 'c3')", "UPDATE c SET id = 4 WHERE id = 1", "DELETE FROM ck WHERE k1 = 2",
     "COMMIT",
     # column DROP, rename (CHANGE), widening MODIFY and RENAME TABLE mid-stream, each followed by rows
     "ALTER TABLE b DROP COLUMN bin", "INSERT INTO b VALUES (51, 510, 'dropped')",
     "ALTER TABLE b CHANGE note remark VARCHAR(10)", "UPDATE b SET remark = 'renamed' WHERE id = 50",
     "ALTER TABLE ck MODIFY v BIGINT", "UPDATE ck SET v = 5000000000 WHERE k1 = 1 AND k2 = 'a'",
     "RENAME TABLE c TO c2", "INSERT INTO c2 VALUES (5, 'c5')", "UPDATE c2 SET s = 'moved' WHERE id = 2"],
    [s.replace("INSERT INTO a VALUES (6, 'six', NULL, 1)", "INSERT INTO a VALUES (6, 'six', NULL, NULL, 1)")
     for s in MORE],
]  # fmt: skip
TABLES = ("ty", "ty2", "a", "b", "part", "ck", "c2", "nk")
KEYLESS = "nk"
_TEMPORAL = ("date", "datetime", "timestamp", "time")


def upstream(db: FreshDatabase) -> dict[str, list[dict[str, Any]]]:
    """Every table as the lake holds it: temporal values and DECIMAL(M > 38) as MySQL prints them, BIT as its
    number."""
    out: dict[str, list[dict[str, Any]]] = {}
    for (table,) in db.query("SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                             (db.name,)):  # fmt: skip
        cols = db.query("SELECT column_name, data_type, numeric_precision > 38 FROM information_schema.columns "
                        "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
                        (db.name, table))  # fmt: skip
        select = ", ".join(f"CAST(`{c}` AS CHAR) AS `{c}`" if t in _TEMPORAL or (t == "decimal" and wide)
                           else f"CAST(`{c}` AS UNSIGNED) AS `{c}`" if t == "bit"
                           else f"`{c}`" for c, t, wide in cols)  # fmt: skip
        with db.conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute(f"SELECT {select} FROM `{table}`")
            out[table] = canonical(list(cur.fetchall()))
    return out


def canonical(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in one order (by every value's text), so two readers' rows compare as lists."""
    return sorted((dict(r) for r in rows), key=lambda r: repr(sorted((k, str(v)) for k, v in r.items())))


def live(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A key-less table's change log (``_tidb_op``: I, U add the image; D removes one) -> the rows it leaves."""
    counts: Counter[tuple[tuple[str, Any], ...]] = Counter()
    for r in log:
        image = tuple((k, v) for k, v in r.items() if k not in ("_tidb_op", "_tidb_commit_ts"))
        counts[image] += -1 if r["_tidb_op"] == "D" else 1
    assert all(n >= 0 for n in counts.values()), counts
    return canonical([dict(image) for image, n in counts.items() for _ in range(n)])


def as_upstream(table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return live(rows) if table == KEYLESS else canonical(rows)


def wait_checkpoint(server: SparkServer, changefeeds: list[str], end: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    for cf in changefeeds:
        while (state := server.changefeed(cf))["checkpoint_ts"] < end:
            assert state["state"] == "normal" and time.monotonic() < deadline, (cf, state, server.tail())
            time.sleep(0.3)


def test_changefeeds_into_delta_and_iceberg_equal_upstream_now_and_as_of(
    fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path
) -> None:
    db = fresh_db
    db.execute(*SETUP)
    catalog_db = f"{db.name}_catalog"
    db.execute(f"CREATE DATABASE `{catalog_db}`")
    catalog_uri = f"mysql+pymysql://root@127.0.0.1:{mariadb.port}/{catalog_db}"
    uris = {"delta": f"delta://{tmp_path}/delta?flush-interval=500ms",
            "iceberg": f"iceberg://{tmp_path}/iceberg?flush-interval=500ms&catalog-uri={quote(catalog_uri, safe='')}"}
    cfg = tmp_path / "cf.toml"
    cfg.write_text(f'force-replicate = true\n[filter]\nrules = ["{db.name}.*"]\n')
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    points: list[tuple[dict[str, int], dict[str, list[dict[str, Any]]]]] = []
    try:
        for fmt, uri in uris.items():
            created = server.cli("create", "--sink-uri", uri, "--changefeed-id", f"to-{fmt}", "--config", str(cfg))
            assert created.returncode == 0, created.stderr + created.stdout
        for phase in PHASES:  # a checkpoint per phase: the upstream is quiet, so it is the upstream then
            db.execute(*phase)
            wait_checkpoint(server, [f"to-{fmt}" for fmt in uris], now_tso(db))
            points.append(({fmt: server.changefeed(f"to-{fmt}")["checkpoint_ts"] for fmt in uris}, upstream(db)))
    finally:
        server.stop()
    final = points[-1][1]
    assert set(final) == set(TABLES)
    # read back by the spec readers: equal to the upstream now
    with pymysql.connect(**mariadb.connect_kwargs(database=catalog_db)) as conn, conn.cursor() as cur:
        cur.execute("SELECT table_name, metadata_location FROM iceberg_tables WHERE table_namespace = %s", (db.name,))
        locations = dict(cur.fetchall())
    for table in TABLES:
        assert as_upstream(table, read_delta(tmp_path / "delta" / db.name / table)) == final[table], table
        assert as_upstream(table, read_iceberg(locations[table])) == final[table], table
    # as of each point: the library's time travel equals the upstream then
    for checkpoints, snapshot in points:
        for fmt, uri in uris.items():
            for table, rows in snapshot.items():
                got = as_upstream(table, read_as_of(uri, f"{db.name}.{table}", checkpoints[fmt]).to_pylist())
                assert got == rows, (fmt, table, checkpoints)
    db.execute(f"DROP DATABASE IF EXISTS `{catalog_db}`")


KILLS = 3


@pytest.mark.slow
def test_kill_9_under_load_applies_every_transaction_once(
    fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path
) -> None:
    """Three kill -9 of the server (Spark's JVM and workers with it) at random moments of a running workload into
    both formats: after the restarts each table equals the upstream, with no duplicate key (a replayed batch
    skipped what the killed run had committed)."""
    rng = random.Random(2030)
    work = Workload(fresh_db, tables=3, seed=5, ddl_every=120)
    work.create()
    uris = {"delta": f"delta://{tmp_path}/delta?flush-interval=200ms",
            "iceberg": f"iceberg://{tmp_path}/iceberg?flush-interval=200ms"}
    cfg = tmp_path / "cf.toml"
    cfg.write_text(f'[filter]\nrules = ["{fresh_db.name}.*"]\n')
    feeds = [f"to-{fmt}" for fmt in uris]
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    try:
        for fmt, uri in uris.items():
            created = server.cli("create", "--sink-uri", uri, "--changefeed-id", f"to-{fmt}", "--config", str(cfg))
            assert created.returncode == 0, created.stderr + created.stdout
        bg = Background(Paced(work, 10))
        bg.thread.start()
        try:
            for _ in range(KILLS):
                # a random moment once both checkpoints moved since the (re)start
                base = {cf: server.changefeed(cf)["checkpoint_ts"] for cf in feeds}
                for cf in feeds:
                    wait_checkpoint(server, [cf], base[cf] + 1)
                for _ in range(rng.randint(0, 20)):
                    server.changefeed(feeds[0])
                server.kill()
                server.start()
                assert bg.error is None, bg.error
        finally:
            bg.stop.set()
            bg.thread.join(60)
        assert bg.error is None, bg.error
        wait_checkpoint(server, feeds, now_tso(fresh_db))
    finally:
        server.stop()
    assert bg.steps > 300
    want = work.expected()
    cat = sqlite3.connect(tmp_path / "iceberg" / "catalog.db")
    locations = dict(cat.execute("SELECT table_name, metadata_location FROM iceberg_tables"))
    cat.close()
    for name, rows in want.items():
        table = name.split(".", 1)[1]
        for fmt, got in (("delta", read_delta(tmp_path / "delta" / fresh_db.name / table)),
                         ("iceberg", read_iceberg(locations[table]))):  # fmt: skip
            keys = [text(r["id"]) for r in got]
            assert len(keys) == len(set(keys)), (fmt, table, "duplicate keys")
            assert {text(r["id"]): {c: text(v) for c, v in r.items()} for r in got} == rows, (fmt, table)
