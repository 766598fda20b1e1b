"""The initial snapshot (``[snapshot] mode``) through the real commands: ``cdc server`` + ``cdc cli changefeed create``
copy pre-filled tables while a workload changes them, ``cdc storage-consumer`` replays the file:// sink into a
second MariaDB (empty: the consumer creates the tables) and ``cdc check`` reports zero difference; kill -9 during
the copy resumes after the finished chunks; ``initial-only`` copies and finishes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.storage.external import ExternalStorage
from tests.e2e.downstream import check, storage_consumer
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.consumer.servers import run_sql
from tests.integration.pipeline.server import Background, CheckpointWatch, SparkServer, now_tso
from tests.support import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.slow]

CF = "cf-snap"
BASE = 18446744073700000000  # big's keys are BASE + 2*seq: near the top of BIGINT UNSIGNED, chunk bounds included
SMALL = {"comp": 3000, "uk": 2000, "part": 1500, "misc": 800, "txt": 500}
SKIPPED = re.compile(r"snapshot: resuming; (\d+) finished chunks are skipped")


def create_and_fill(db: FreshDatabase, rows: int) -> None:
    """big (``rows`` rows) and the small tables, filled server-side from the sequence engine."""
    db.execute(
        "CREATE TABLE big (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(40), d DATETIME(6), m DECIMAL(20,4), "
        "b VARBINARY(8)) DEFAULT CHARSET=utf8mb4",
        "CREATE TABLE comp (k VARCHAR(10) NOT NULL, id INT NOT NULL, n INT, PRIMARY KEY (k, id))",
        "CREATE TABLE uk (id INT NOT NULL, u VARCHAR(20) NOT NULL, n INT, UNIQUE KEY (u))",
        "CREATE TABLE part (id INT PRIMARY KEY, v VARCHAR(20)) PARTITION BY HASH(id) PARTITIONS 4",
        "CREATE TABLE misc (id INT PRIMARY KEY, ts TIMESTAMP(3) NULL, t TIME(2), y YEAR, f DOUBLE, u TINYINT UNSIGNED)",
        "CREATE TABLE txt (id SMALLINT PRIMARY KEY, body TEXT, j JSON) DEFAULT CHARSET=utf8mb4",
        f"INSERT INTO big SELECT {BASE} + 2 * seq, CONCAT('v', seq, ' \U0001f600'), "
        "'2024-01-02 03:04:05.123456' + INTERVAL seq SECOND, seq * 1.0001 - 500000, "
        f"IF(seq % 5 = 0, NULL, CONCAT(0x00, UNHEX(LPAD(HEX(seq), 6, '0')), 0xFF)) FROM seq_1_to_{rows}",
        f"INSERT INTO comp SELECT IF(seq % 3, 'Odd', 'even\u00e9'), seq, seq FROM seq_1_to_{SMALL['comp']}",
        f"INSERT INTO uk SELECT seq, CONCAT('u', seq), seq FROM seq_1_to_{SMALL['uk']}",
        f"INSERT INTO part SELECT seq, CONCAT('p', seq) FROM seq_1_to_{SMALL['part']}",
        "INSERT INTO misc SELECT seq, '2001-02-03 04:05:06.789' + INTERVAL seq MINUTE, SEC_TO_TIME(seq) + 0.25, "
        f"1990 + seq % 100, seq / 7, seq % 256 FROM seq_1_to_{SMALL['misc']}",
        "INSERT INTO txt SELECT seq, REPEAT('\u597d\U0001f680', seq % 50), JSON_OBJECT('k', seq, 'e', '\u00e9') "
        f"FROM seq_1_to_{SMALL['txt']}",
    )


class Churn:
    """Updates (some key-changing, on big's PK, part's PK and uk's unique key), deletes, inserts and multi-table
    transactions spread over every table's whole key range, so they hit chunks before and after they are read."""

    def __init__(self, db: FreshDatabase, rows: int) -> None:
        self.db = db
        self.rows = rows

    def step(self, i: int) -> None:
        k = BASE + 2 * ((i * 7919) % self.rows + 1)
        small = (i * 31) % 500 + 1
        kind = i % 4
        if kind == 0:
            self.db.execute(
                "BEGIN",
                f"UPDATE big SET v = 'u{i} \U0001f680', b = 0xff00, m = m + 1 WHERE id = {k}",
                f"DELETE FROM big WHERE id = {k + 2}",
                f"INSERT INTO big VALUES ({BASE + 2 * (self.rows + i) + 1}, 'new', NOW(6), -0.0001, 0x00)",
                f"UPDATE comp SET n = n + 1000 WHERE id = {small}",
                f"UPDATE part SET id = {100000 + i} WHERE id = {small}",
                "COMMIT",
            )
        elif kind == 1:
            self.db.execute(f"UPDATE big SET id = id + 1 WHERE id = {k}")  # even -> odd: no collision
        elif kind == 2:
            self.db.execute(
                "BEGIN",
                f"UPDATE uk SET u = CONCAT(u, 'x') WHERE id = {small}",
                f"DELETE FROM misc WHERE id = {small}",
                f"INSERT INTO comp VALUES ('n{i % 7}', {10000 + i}, {i})",
                f"UPDATE txt SET j = JSON_ARRAY({i}), body = NULL WHERE id = {small}",
                "COMMIT",
            )
        else:
            self.db.execute(f"DELETE FROM uk WHERE id = {small + 500}", f"UPDATE misc SET f = -f WHERE id = {small}")


def create(server: SparkServer, db: FreshDatabase, root: Path, snapshot: str,
           protocol: str = "canal-json&enable-tidb-extension=true&flush-interval=2s") -> str:  # fmt: skip
    """Create the changefeed (file:// sink, canal-json flushed every 2 s, the least allowed, unless ``protocol``
    says) with the ``[snapshot]`` table; returns the sink URI."""
    sink_uri = f"file://{root / 'sink'}?protocol={protocol}&worker-count=2"
    cfg = root / "cf.toml"
    cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n\n[snapshot]\n{snapshot}\n')
    created = server.cli("create", "--sink-uri", sink_uri, "--changefeed-id", CF, "--config", str(cfg))
    assert created.returncode == 0, created.stderr + created.stdout
    return sink_uri


def query(server: SparkServer) -> dict[str, Any]:
    """``cdc cli changefeed query`` as JSON."""
    res = server.cli("query", "--changefeed-id", CF)
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def snapshot_of(server: SparkServer) -> dict[str, Any]:
    """The Open API's ``snapshot`` object ({} before the runner first reports it)."""
    state = server.changefeed(CF)
    assert state["state"] in ("normal", "finished"), (state, server.tail())
    snap: dict[str, Any] = state.get("snapshot") or {}
    return snap


def healthy(server: SparkServer) -> None:
    snapshot_of(server)


def chunks_done(server: SparkServer) -> int:
    return sum(t["chunks_done"] for t in snapshot_of(server).get("tables", []))


def replay_into(target: MysqlTarget, db: FreshDatabase, sink_uri: str) -> dict[str, Any]:
    """Consumer into ``target`` (starting empty), then ``cdc check``; returns the check's JSON."""
    res = storage_consumer(sink_uri, target)
    assert res.returncode == 0, res.stderr
    return check(db.server.connect_kwargs(), target, db.name)


def clean(target: MysqlTarget, db: FreshDatabase) -> None:
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS sparkcdc_consumer")


def test_snapshot_of_prefilled_tables_under_a_concurrent_workload_matches_upstream(
    fresh_db: FreshDatabase, mariadb: MariaDB, target: MysqlTarget, tmp_path: Path
) -> None:  # fmt: skip
    db, rows = fresh_db, 1_000_000
    create_and_fill(db, rows)
    clean(target, db)
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    churn = Churn(db, rows)  # uk (a NOT NULL unique key only) too: the consumer creates it without a key
    bg = Background(churn)
    try:
        sink_uri = create(server, db, tmp_path, 'mode = "initial"\nchunk-size = 50000\nparallelism = 2')
        bg.thread.start()
        wait_for(lambda: snapshot_of(server).get("state") == "finished", 400, "snapshot to finish", 0.2, server.tail)
        after = bg.steps
        wait_for(lambda: bg.error is not None or bg.steps >= after + 60, 60, "workload after the snapshot", 0.2,
                 server.tail)  # fmt: skip
        bg.stop.set()
        bg.thread.join(60)
        assert bg.error is None, bg.error
        end = now_tso(db)
        watch = CheckpointWatch(ExternalStorage.from_uri(sink_uri))
        watch.wait(end, 300, lambda: healthy(server))
        doc = query(server)
    finally:
        bg.stop.set()
        server.stop()
    assert doc["state"] == "normal" and doc["checkpoint_tso"] >= end, doc
    snap = doc["snapshot"]
    assert snap["state"] == "finished", snap
    assert snap["rows_done"] >= rows - 2 * bg.steps  # the churn deletes and moves a few before they are read
    assert {t["table"] for t in snap["tables"]} == {f"{db.name}.{t}" for t in ("big", *SMALL)}
    assert bg.steps > 100
    assert watch.monotonic
    got = replay_into(target, db, sink_uri)
    assert {t["table"] for t in got["tables"]} == {"big", *SMALL}, got
    assert got["match"], got
    counts = {t["table"]: t["target_rows"] for t in got["tables"]}
    assert counts["big"] > rows - bg.steps and counts["txt"] == SMALL["txt"], counts


def test_snapshot_survives_three_kill_9_and_resumes_from_finished_chunks(
    fresh_db: FreshDatabase, mariadb: MariaDB, target: MysqlTarget, tmp_path: Path
) -> None:  # fmt: skip
    db, rows = fresh_db, 300_000
    create_and_fill(db, rows)
    clean(target, db)
    churn = Churn(db, rows)
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    log = tmp_path / "server.log"
    skipped: list[int] = []
    try:
        sink_uri = create(server, db, tmp_path, 'mode = "initial"\nchunk-size = 20000\nparallelism = 2')
        seen = 0
        for kill in range(3):
            wait_for(lambda seen=seen: chunks_done(server) > seen, 300, f"more than {seen} chunks before kill {kill}",
                     0.2, server.tail)  # fmt: skip
            seen = chunks_done(server)
            server.kill()
            for i in range(20):  # changes while the server is down, streamed after the restart
                churn.step(100 * kill + i)
            offset = log.stat().st_size
            server.start()

            def resumed(offset: int = offset) -> bool:
                found = SKIPPED.findall(log.read_text()[offset:])
                skipped.extend(int(n) for n in found)
                return bool(found)

            wait_for(resumed, 120, f"the resume line after kill {kill}", 0.2, server.tail)
            assert skipped[-1] >= seen > 0, (skipped, seen)
        wait_for(lambda: snapshot_of(server).get("state") == "finished", 400, "snapshot to finish", 0.2, server.tail)
        for i in range(20):
            churn.step(1000 + i)
        end = now_tso(db)
        CheckpointWatch(ExternalStorage.from_uri(sink_uri)).wait(end, 300, lambda: healthy(server))
        snap = query(server)["snapshot"]
    finally:
        server.stop()
    assert len(skipped) == 3 and skipped == sorted(skipped), skipped
    big = next(t for t in snap["tables"] if t["table"] == f"{db.name}.big")
    assert big["chunks"] == big["chunks_done"] >= rows // 20000, big
    got = replay_into(target, db, sink_uri)
    assert {t["table"] for t in got["tables"]} == {"big", *SMALL}, got
    assert got["match"], got


def test_initial_only_copies_and_finishes(
    fresh_db: FreshDatabase, mariadb: MariaDB, target: MysqlTarget, tmp_path: Path
) -> None:  # fmt: skip
    db, rows = fresh_db, 50_000
    create_and_fill(db, rows)
    clean(target, db)
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    try:
        sink_uri = create(server, db, tmp_path, 'mode = "initial-only"\nchunk-size = 10000')
        wait_for(lambda: server.changefeed(CF)["state"] == "finished", 300, "the changefeed to finish", 0.2,
                 server.tail)  # fmt: skip
        done = query(server)
        got = replay_into(target, db, sink_uri)
        assert got["match"], got
        # writes after it finished are not replicated: the sink keeps exactly the copy
        db.execute("INSERT INTO big (id, v) VALUES (1, 'late')", "DELETE FROM comp WHERE id <= 10")
        later = query(server)
    finally:
        server.stop()
    assert done["state"] == "finished" and done["snapshot"]["state"] == "finished", done
    assert done["snapshot"]["rows_done"] == rows + sum(SMALL.values()), done["snapshot"]
    assert later["state"] == "finished" and later["checkpoint_tso"] == done["checkpoint_tso"], later
    again = replay_into(target, db, sink_uri)
    counts = {t["table"]: (t["source_rows"], t["target_rows"]) for t in again["tables"]}
    assert not again["match"]
    assert counts["big"] == (rows + 1, rows) and counts["comp"] == (SMALL["comp"] - 10, SMALL["comp"]), counts
    assert {t: n for t, (_, n) in counts.items()} == {"big": rows, **SMALL}, counts


def table_progress(server: SparkServer, table: str) -> dict[str, Any]:
    """One table's snapshot progress from the Open API, whatever the changefeed's state."""
    snap = server.changefeed(CF).get("snapshot") or {}
    return next((t for t in snap.get("tables", []) if t["table"].endswith(f".{table}")), {})


def differing_rows(target: MysqlTarget, db: FreshDatabase, table: str) -> list[tuple[Any, ...]]:
    """The upstream rows of ``table`` that the downstream does not have exactly (row by row, by the key)."""
    sql = f"SELECT * FROM `{db.name}`.`{table}` ORDER BY id"
    down = {r[0]: tuple(r) for r in run_sql(target, sql)}
    return [tuple(r) for r in db.query(sql) if down.get(r[0]) != tuple(r)]


def test_ddl_between_chunks_of_the_copy_loses_no_value(
    fresh_db: FreshDatabase, mariadb: MariaDB, target: MysqlTarget, tmp_path: Path
) -> None:  # fmt: skip
    """Issue 26's report: ADD COLUMN ... DEFAULT, then an UPDATE of the new column, while chunks of the table are
    still to be read; a MODIFY COLUMN too; and tables not copied yet get their DDL before their first read (one
    with a unique key only, which the consumer creates without a key: an index change must not resend what its
    read holds). The changefeed is paused between two chunks (parallelism 1), so every DDL lands between reads."""
    db, rows = fresh_db, 8160
    db.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, amount DECIMAL(10,2), note VARCHAR(16))",
        "CREATE TABLE uk (id INT NOT NULL, u VARCHAR(10) NOT NULL, n INT, UNIQUE KEY (u))",
        "CREATE TABLE zlate (id INT PRIMARY KEY, v INT)",  # the plan copies tables by name: orders, uk, zlate
        f"INSERT INTO orders SELECT seq, seq / 4, CONCAT('n', seq) FROM seq_1_to_{rows}",
        "INSERT INTO uk SELECT seq, CONCAT('u', seq), seq FROM seq_1_to_300",
        "INSERT INTO zlate SELECT seq, seq FROM seq_1_to_300",
    )
    clean(target, db)
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    try:
        # 17 chunks of orders: the pause lands between two of them also on a slow machine (with 5, all were
        # copied before it took effect once)
        sink_uri = create(server, db, tmp_path, 'mode = "initial"\nchunk-size = 500\nparallelism = 1',
                          protocol="csv&flush-interval=2s")  # fmt: skip
        wait_for(
            lambda: table_progress(server, "orders").get("chunks_done", 0) >= 1, 120, "a chunk", detail=server.tail
        )
        assert server.cli("pause", "--changefeed-id", CF).returncode == 0
        wait_for(lambda: server.changefeed(CF)["state"] == "stopped", 60, "the pause", detail=server.tail)
        paused = table_progress(server, "orders")
        assert 1 <= paused["chunks_done"] < paused["chunks"], paused  # chunks remain: the DDL lands between them
        assert table_progress(server, "uk")["chunks_done"] == table_progress(server, "zlate")["chunks_done"] == 0
        db.execute(
            "ALTER TABLE orders ADD COLUMN region VARCHAR(8) DEFAULT 'eu'",
            "UPDATE orders SET region = 'apac' WHERE id % 13 = 0",
            "ALTER TABLE orders MODIFY COLUMN note VARCHAR(64)",
            "UPDATE orders SET note = CONCAT(note, '+'), amount = amount + 1 WHERE id % 7 = 0",
            "UPDATE orders SET id = id + 100000 WHERE id % 101 = 0",  # key-changing, after the DDL
            "ALTER TABLE zlate ADD COLUMN flag INT NOT NULL DEFAULT 1",
            "UPDATE zlate SET flag = 2 WHERE id % 3 = 0",
            "ALTER TABLE uk ADD INDEX (n)",
            "UPDATE uk SET n = n + 1000 WHERE id % 5 = 0",
        )
        assert server.cli("resume", "--changefeed-id", CF).returncode == 0
        wait_for(lambda: snapshot_of(server).get("state") == "finished", 120, "snapshot to finish", detail=server.tail)
        end = now_tso(db)
        CheckpointWatch(ExternalStorage.from_uri(sink_uri)).wait(end, 120, lambda: healthy(server))
    finally:
        server.stop()
    got = replay_into(target, db, sink_uri)
    wrong = {t: differing_rows(target, db, t) for t in ("orders", "uk", "zlate")}
    assert wrong == {"orders": [], "uk": [], "zlate": []}, {t: f"{len(w)} rows differ, first {w[:3]}"
                                                            for t, w in wrong.items()}  # fmt: skip
    assert got["match"], got  # row counts too: nothing applied twice in uk, which has no key downstream
