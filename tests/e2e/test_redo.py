"""The redo log end to end (issue 28): a private upstream MariaDB -> ``cdc server`` with ``[consistent] level =
"eventual"`` -> MySQL sink into a second MariaDB; then the primary site is lost (upstream and server killed -9, the
server's data dir deleted) and ``cdc redo apply`` brings the downstream to one point: exactly the upstream's state
at the redo log's resolved ts.

The workload is a seeded script of transactions (all column types, key-changing updates, multi-table transactions,
ADD COLUMN), each also inserting its number into ``txlog``; so after the apply the downstream's ``max(txlog)`` names
the last transaction applied, the script replayed up to it into a scratch database gives the upstream's state at
that point, and every table must equal it row for row; that transaction must also be the last one the redo log
holds. Kill points: the sink stalled mid-batch by a lock on a downstream table (tables applied at different points),
the sink running normally, and the apply itself (killed while blocked on a lock, then run again). A storage that
fails stops the changefeed (warning) without anything applied past it; a cut file stops the apply naming it, the
downstream untouched; a second apply applies nothing.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import pytest
from pymysql.converters import escape_string

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.redo.log_file import RowsRecord
from sparkcdc.redo.reader import RedoLog, stage
from sparkcdc.sink.row_payload import unpack
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.object_stores import backend_uri
from tests.integration.pipeline.server import CDC, SparkServer, server_env, server_now_tso
from tests.support import wait_for

pytestmark = pytest.mark.e2e

TABLES = ("w0", "w1", "w2")
BASE = (
    *(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(40), n BIGINT, d DECIMAL(12,3))" for t in TABLES),
    "CREATE TABLE ty (id INT PRIMARY KEY, ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, bi BIGINT UNSIGNED, "
    "de DECIMAL(30,10), fl FLOAT, db DOUBLE, dt DATE, dtm DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2), yr YEAR, "
    "ch CHAR(5), vc VARCHAR(50), bn BINARY(4), vb VARBINARY(20), bl BLOB, tx TEXT, en ENUM('a','b','c'), "
    "st SET('x','y','z'), js JSON, bt BIT(10))",
    "CREATE TABLE txlog (id INT PRIMARY KEY)",
)
ALL = (*TABLES, "ty", "txlog")


@dataclass(frozen=True)
class Txn:
    number: int
    ddl: bool
    statements: tuple[str, ...]


def _text(s: str) -> str:
    return f"'{escape_string(s)}'"


def _ty_values(rng: random.Random) -> dict[str, str]:
    return {
        "ti": str(rng.randint(-128, 127)), "si": str(rng.randint(0, 65535)), "mi": str(rng.randint(-8388608, 8388607)),
        "bi": str(rng.choice([0, (1 << 64) - 1, rng.randint(0, 1 << 63)])),
        "de": f"{rng.randint(-10**19, 10**19)}.{rng.randint(0, 10**10 - 1):010d}",
        "fl": rng.choice(["1.5", "-0.25", "3.0625", "0"]), "db": repr(rng.uniform(-1e10, 1e10)),
        "dt": rng.choice(["'2024-02-29'", "'1000-01-01'", "'9999-12-31'"]),
        "dtm": f"'2024-01-02 03:04:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}'",
        "ts": rng.choice(["NULL", "'2024-06-01 12:00:00.500'", f"'2030-01-01 00:00:{rng.randint(0, 59):02d}.125'"]),
        "tm": rng.choice(["'-838:59:59.00'", "'12:34:56.78'", "'00:00:00.01'"]),
        "yr": str(rng.choice([1901, 2024, 2155])),
        "ch": _text(rng.choice(["ab", "", "z"])), "vc": _text(rng.choice(["é😀 'q' \\ k", "plain", "中文"])),
        "bn": f"X'{rng.randbytes(4).hex()}'", "vb": f"X'{rng.randbytes(rng.randint(0, 20)).hex()}'",
        "bl": rng.choice(["NULL", f"X'{rng.randbytes(64).hex()}'"]), "tx": _text("long " * rng.randint(0, 50)),
        "en": rng.choice(["'a'", "'c'"]), "st": rng.choice(["'x,z'", "''", "'y'"]),
        "js": _text(rng.choice(['{"a": [1, 2.5, "x"]}', "[]", '{"k": null}'])), "bt": f"b'{rng.randint(0, 1023):b}'",
    }  # fmt: skip


def script(seed: int, n: int) -> list[Txn]:
    """``n`` transactions over the workload's tables, every 25th an ADD COLUMN, the others DML ending with their
    ``txlog`` row. Deterministic: the same seed gives the same statements, so they replay anywhere."""
    rng = random.Random(seed)
    ids: dict[str, list[int]] = {t: [] for t in (*TABLES, "ty")}
    nxt = dict.fromkeys(ids, 1)
    out, added = [], 0

    def new(t: str) -> int:
        nxt[t] += 1
        ids[t].append(nxt[t] - 1)
        return nxt[t] - 1

    for i in range(1, n + 1):
        if i % 25 == 0:
            added += 1
            out.append(Txn(i, True, (f"ALTER TABLE {TABLES[added % 3]} ADD COLUMN c{added} INT NOT NULL DEFAULT "
                                     f"{added}",)))  # fmt: skip
            continue
        t, kind, sql = rng.choice(TABLES), rng.random(), []
        if kind < 0.35 or len(ids[t]) < 3:
            rows = [f"({new(t)}, 'v{rng.randint(0, 999)}', {rng.randint(-10**12, 10**12)}, "
                    f"{rng.randint(-10**6, 10**6) / 1000:.3f})" for _ in range(rng.randint(1, 5))]  # fmt: skip
            sql.append(f"INSERT INTO {t} (id, v, n, d) VALUES {', '.join(rows)}")
        elif kind < 0.5:
            sql.append(f"UPDATE {t} SET v = 'u{i}', n = n + 1 WHERE id = {rng.choice(ids[t])}")
        elif kind < 0.6:  # a key-changing update
            old = rng.choice(ids[t])
            ids[t].remove(old)
            sql.append(f"UPDATE {t} SET id = {new(t)}, v = 'moved{i}' WHERE id = {old}")
        elif kind < 0.7:
            gone = rng.choice(ids[t])
            ids[t].remove(gone)
            sql.append(f"DELETE FROM {t} WHERE id = {gone}")
        elif kind < 0.85:  # several tables in one transaction
            u = rng.choice([x for x in TABLES if x != t])
            sql += [f"UPDATE {t} SET n = n * 2 WHERE id = {rng.choice(ids[t])}",
                    f"INSERT INTO {u} (id, v) VALUES ({new(u)}, 'txn{i}')"]  # fmt: skip
        else:
            values = _ty_values(rng)
            if ids["ty"] and rng.random() < 0.5:
                sets = ", ".join(f"{c} = {v}" for c, v in values.items())
                sql.append(f"UPDATE ty SET {sets} WHERE id = {rng.choice(ids['ty'])}")
            else:
                columns, given = ", ".join(values), ", ".join(values.values())
                sql.append(f"INSERT INTO ty (id, {columns}) VALUES ({new('ty')}, {given})")
        out.append(Txn(i, False, (*sql, f"INSERT INTO txlog VALUES ({i})")))
    return out


def connect(db: MariaDB, database: str = "") -> Any:
    return pymysql.connect(**db.connect_kwargs("root", autocommit=True, **({"database": database} if database else {})))


def run_sql(db: MariaDB, *statements: str, database: str = "") -> list[tuple[Any, ...]]:
    conn = connect(db, database)
    try:
        with conn.cursor() as cur:
            for s in statements:
                cur.execute(s)
            return list(cur.fetchall())
    finally:
        conn.close()


def execute(conn: Any, txn: Txn) -> None:
    with conn.cursor() as cur:
        if txn.ddl:
            cur.execute(txn.statements[0])
            return
        conn.begin()
        for s in txn.statements:
            cur.execute(s)
        conn.commit()


class Writer:
    """Runs the script upstream in a thread, ``pause`` seconds apart, up to ``upto`` (raise it to go on)."""

    def __init__(self, up: MariaDB, database: str, txns: list[Txn], pause: float = 0.02) -> None:
        self.conn = connect(up, database)
        self.txns, self.pause = txns, pause
        self.done = 0
        self.upto = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self.done < min(self.upto, len(self.txns)):
                    execute(self.conn, self.txns[self.done])
                    self.done += 1
                self._stop.wait(self.pause)
        except BaseException as e:  # the upstream is killed under it at the end
            self.error = e

    def run_to(self, n: int, timeout: float = 120) -> None:
        self.upto = n
        wait_for(lambda: self.done >= n or self.error is not None, timeout, f"{n} transactions upstream")
        assert self.error is None, self.error

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def kill9(db: MariaDB) -> None:
    pid = int(db.pid_file.read_text().strip())
    os.kill(pid, signal.SIGKILL)

    def dead() -> bool:  # gone, or a zombie until the fixture's process handle reaps it
        try:
            return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
        except FileNotFoundError:
            return True

    wait_for(dead, 30, "the upstream to die")


@pytest.fixture
def down(downstream_server: MariaDB) -> MariaDB:
    """The session's downstream MariaDB: ``start`` makes the test's databases on it afresh."""
    return downstream_server


@pytest.fixture
def up(tmp_path: Path) -> Iterator[MariaDB]:
    db = MariaDB(tmp_path / "up", server_id=42).start()
    try:
        yield db
    finally:
        db.stop()


def start(up: MariaDB, down: MariaDB, tmp_path: Path, name: str, storage: str, extra: str = "") -> SparkServer:
    """The workload's tables up and (empty) down, the server, the changefeed ``name`` with its redo log."""
    run_sql(up, f"CREATE DATABASE {name}")
    run_sql(up, *BASE, database=name)
    run_sql(down, f"DROP DATABASE IF EXISTS {name}", f"DROP DATABASE IF EXISTS x{name}", f"CREATE DATABASE {name}")
    run_sql(down, *BASE, database=name)
    server = SparkServer(tmp_path, up.port or 0).start()
    cfg = tmp_path / "cf.toml"
    cfg.write_text(f'[filter]\nrules = ["{name}.*"]\n[consistent]\nlevel = "eventual"\nstorage = "{storage}"\n'
                   f"flush-interval = 100\nmeta-flush-interval = 100\n{extra}")  # fmt: skip
    created = server.cli("create", "--sink-uri", f"mysql://root@127.0.0.1:{down.port}/?worker-count=4",
                         "--changefeed-id", name, "--config", str(cfg))  # fmt: skip
    assert created.returncode == 0, created.stdout + created.stderr
    return server


def downstream_txlog(down: MariaDB, name: str) -> int:
    return int(run_sql(down, f"SELECT COALESCE(MAX(id), 0) FROM {name}.txlog")[0][0])


def redo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CDC, "redo", *args], capture_output=True, text=True, timeout=300, env=server_env())


def txn_number(row: Any) -> int:
    """A ``txlog`` INSERT's number: a RowChange's new image, or the key literal of a row the sink's encoder
    rendered (the native path's payloads)."""
    after = getattr(row, "after", None)
    return int(after[0]) if after is not None else int(row.key_after)


def redo_last_txn(storage: str, tmp: Path) -> int:
    """The largest ``txlog`` number the redo log holds (0: none), read back with the apply's own reader."""
    s = ExternalStorage.from_uri(storage)
    found = 0
    for staged in stage(s, RedoLog.read(s), tmp):
        for r in staged.read():
            if isinstance(r, RowsRecord) and r.table.table == "txlog":
                found = max([found, *(txn_number(row) for row in unpack(r.payload, r.table))])
    return found


def blocked(down: MariaDB) -> bool:
    """Whether a write waits for the test's table lock (not the test's own LOCK TABLES)."""
    return bool(run_sql(down, "SELECT 1 FROM information_schema.processlist WHERE state LIKE '%metadata lock%' "
                              "AND info NOT LIKE 'LOCK TABLES%'"))  # fmt: skip


def snapshot(down: MariaDB, name: str) -> dict[str, list[tuple[Any, ...]]]:
    return {t: run_sql(down, f"SELECT * FROM {name}.{t} ORDER BY id") for t in ALL}


def assert_one_point(down: MariaDB, name: str, txns: list[Txn]) -> int:
    """The downstream equals the script replayed up to its last transaction (and the DDLs right after it that
    reached the downstream), table by table, row by row. Returns that transaction's number."""
    k = downstream_txlog(down, name)
    scratch = f"x{name}"
    run_sql(down, f"DROP DATABASE IF EXISTS {scratch}", f"CREATE DATABASE {scratch}")
    run_sql(down, *BASE, database=scratch)
    conn = connect(down, scratch)
    try:
        for txn in txns[:k]:
            execute(conn, txn)
        for txn in txns[k:]:
            column = txn.statements[0].split()[5] if txn.ddl else ""
            if not txn.ddl or not run_sql(down, f"SHOW COLUMNS FROM {name}.{txn.statements[0].split()[2]} "
                                                f"LIKE '{column}'"):  # fmt: skip
                break
            execute(conn, txn)
    finally:
        conn.close()
    assert snapshot(down, name) == snapshot(down, scratch)
    return k


def test_redo_on_file_storage_kill_points_corrupt_file_and_storage_failure(
    up: MariaDB, down: MariaDB, tmp_path: Path
) -> None:
    name = "redofile"
    root = tmp_path / "redo"
    storage = f"file://{root}"
    txns = script(2028, 200)
    server = start(up, down, tmp_path, name, storage)
    writer = Writer(up, name, txns)
    lock = None
    try:
        writer.run_to(40)
        wait_for(lambda: downstream_txlog(down, name) >= 30, 180, "the sink to apply")
        # the redo storage fails: the changefeed shows a warning and nothing more is applied downstream
        moved = tmp_path / "redo.moved"
        root.rename(moved)
        root.write_text("not a directory")
        writer.run_to(60)
        wait_for(lambda: server.changefeed(name)["state"] == "warning", 120, "the warning")
        held = downstream_txlog(down, name)
        # while the storage stays broken, the restarted query fails on it again: nothing may reach the downstream
        again = f"changefeed=default/{name}: restarting the query (attempt 2 of"
        wait_for(lambda: again in server.log.read_text(), 120, "the second restart on the broken storage",
                 detail=server.tail)  # fmt: skip
        assert downstream_txlog(down, name) == held < 59
        root.unlink()
        moved.rename(root)
        wait_for(lambda: downstream_txlog(down, name) >= 60, 180, "the sink to catch up")
        assert server.changefeed(name)["state"] == "normal"
        # every batch up to the 60th transaction applied whole: a lock taken while part of the batch holding it is
        # on its way stalls that batch, and the redo log ends at 60 (CI saw it on a slow machine)
        server.wait_checkpoint(name, server_now_tso(lambda sql: run_sql(up, sql)))
        # the sink stalled mid-batch on a locked table: the redo log holds the batch, the downstream part of it
        lock = connect(down)
        lock.cursor().execute(f"LOCK TABLES {name}.w1 WRITE")
        writer.run_to(120)
        wait_for(lambda: blocked(down), 180, "the sink to block on w1")
        writer.run_to(140)
    finally:
        server.kill()
        kill9(up)
        writer.stop()
    shutil.rmtree(server.data_dir)
    assert lock is not None
    lock.close()
    wait_for(lambda: not blocked(down), 60, "the killed sink's blocked statement to roll back")
    before = snapshot(down, name)

    # a cut file: the apply stops naming it, the downstream untouched
    last = sorted(p for p in root.iterdir() if p.suffix == ".log")[-1]
    good = last.read_bytes()
    last.write_bytes(good[:-7])
    cut = redo("apply", "--storage", storage, "--sink-uri", f"mysql://root@127.0.0.1:{down.port}/")
    assert cut.returncode == 1 and f"Error: [CDC:ErrCorruptData] redo log {last.name}" in cut.stderr, cut.stderr
    assert snapshot(down, name) == before
    last.write_bytes(good)

    # killed mid-apply (blocked on a locked table), then run again: it ends at the redo log's resolved ts
    meta = redo("meta", "--storage", storage)
    assert meta.returncode == 0 and meta.stdout.startswith("checkpoint-ts:"), meta.stderr
    lock = connect(down)
    lock.cursor().execute(f"LOCK TABLES {name}.w1 WRITE")
    apply = subprocess.Popen([CDC, "redo", "apply", "--storage", storage, "--sink-uri",
                              f"mysql://root@127.0.0.1:{down.port}/"], env=server_env(), start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for(lambda: blocked(down), 120, "the apply to block on w1")
    finally:
        os.killpg(apply.pid, signal.SIGKILL)
        apply.wait(30)
        lock.close()
    done = redo("apply", "--storage", storage, "--sink-uri", f"mysql://root@127.0.0.1:{down.port}/")
    assert done.returncode == 0 and "Apply redo log successfully" in done.stdout, done.stderr
    assert snapshot(down, name)["w1"] != before["w1"]  # the stalled batch's rows of w1 came from the redo log
    k = assert_one_point(down, name, txns)
    assert k == redo_last_txn(storage, tmp_path / "check") and k > 60  # the stalled batch came after 60
    again = redo("apply", "--storage", storage, "--sink-uri", f"mysql://root@127.0.0.1:{down.port}/")
    assert again.returncode == 0 and "rows=0 " in again.stderr, again.stderr
    assert downstream_txlog(down, name) == k


def test_redo_on_s3_with_lz4_killed_while_running(
    up: MariaDB, down: MariaDB, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    name = "redos3"
    storage = backend_uri("s3", request, f"redo-{name}-{os.getpid()}")
    txns = script(2029, 120)
    server = start(up, down, tmp_path, name, storage, 'compression = "lz4"\n')
    writer = Writer(up, name, txns, pause=0.01)
    try:
        writer.run_to(60)
        wait_for(lambda: downstream_txlog(down, name) >= 20, 180, "the sink to apply")
        writer.upto = len(txns)  # and kill while it runs
        wait_for(lambda: writer.done >= 90, 60, "more transactions")
    finally:
        server.kill()
        kill9(up)
        writer.stop()
    shutil.rmtree(server.data_dir)
    before = downstream_txlog(down, name)
    done = redo("apply", "--storage", storage, "--tmp-dir", str(tmp_path / "dl"), "--sink-uri",
                f"mysql://root@127.0.0.1:{down.port}/")  # fmt: skip
    assert done.returncode == 0 and "Apply redo log successfully" in done.stdout, done.stderr
    k = assert_one_point(down, name, txns)
    assert k == (redo_last_txn(storage, tmp_path / "check") or before) and k >= 20
