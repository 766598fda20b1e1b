"""Bidirectional replication: MariaDB A <-> MariaDB B with changefeeds A->B and B->A in ``bdr-mode`` (one ``cdc
server`` per upstream), both sides written until each changefeed has replicated some of them and each side has written
more than TRANSACTIONS: both converge (``cdc check`` zero difference) and the binlogs show every change replicated
exactly once each way: on each server, the sink's marked transactions are exactly the other side's user
transactions, none of its own coming back."""

from __future__ import annotations

import collections
import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkcdc.changefeed.bdr import BDR_SERVER_ID
from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.mysql.target import MysqlTarget
from tests.e2e.downstream import check, mysql_uri
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.consumer.servers import run_sql, target_of
from tests.integration.pipeline.server import SparkServer, now_tso, server_now_tso
from tests.support import wait_for

pytestmark = pytest.mark.e2e

TRANSACTIONS = 150  # per side, about 15 s of writing
TABLE = "CREATE TABLE t (id INT PRIMARY KEY, origin CHAR(1) NOT NULL, n INT NOT NULL)"


@pytest.fixture
def server_b(tmp_path: Path) -> Iterator[MariaDB]:
    db = MariaDB(tmp_path / "mariadb-b", server_id=2)
    try:
        yield db.start()
    finally:
        db.stop()


class Writer:
    """Writes one side's rows (ids ``parity`` mod 2, so the sides never touch the same key) until stopped; each
    statement is one transaction that changes exactly one row."""

    def __init__(self, target: MysqlTarget, db: str, origin: str, parity: int, seed: int) -> None:
        self.target, self.db, self.origin, self.parity = target, db, origin, parity
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.transactions = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        conn = self.target.connect(database=self.db, autocommit=True)
        ids: list[int] = []
        k = self.parity
        try:
            with conn.cursor() as cur:
                while not self.stop.is_set():
                    kind = self.rng.random()
                    if kind < 0.6 or len(ids) < 5:
                        k += 2
                        ids.append(k)
                        cur.execute("INSERT INTO t VALUES (%s, %s, %s)", (k, self.origin, self.rng.randint(0, 99)))
                    elif kind < 0.9:
                        cur.execute("UPDATE t SET n = n + 1 WHERE id = %s", (self.rng.choice(ids),))
                    else:
                        victim = ids.pop(self.rng.randrange(len(ids)))
                        cur.execute("DELETE FROM t WHERE id = %s", (victim,))
                    self.transactions += 1
                    self.stop.wait(0.1)
        except BaseException as e:
            self.error = e
        finally:
            conn.close()


def binlog_position(target: MysqlTarget) -> tuple[str, int]:
    file, pos, *_ = run_sql(target, "SHOW MASTER STATUS")[0]
    return str(file), int(pos)


def transactions_by_server(target: MysqlTarget, db: str, since: tuple[str, int]) -> collections.Counter[int]:
    """Transactions in the server's binlogs from ``since`` on that wrote rows of ``db.t``, by the server_id that
    wrote them."""
    counts: collections.Counter[int] = collections.Counter()
    server, touched = 0, False
    for (name, *_rest) in run_sql(target, "SHOW BINARY LOGS"):
        if name < since[0]:
            continue
        start = f" FROM {since[1]}" if name == since[0] else ""
        for _log, _pos, kind, sid, _end, info in run_sql(target, f"SHOW BINLOG EVENTS IN '{name}'{start}"):
            if kind == "Gtid":
                counts[server] += touched
                server, touched = int(sid), False
            elif kind == "Table_map" and info.endswith(f"({db}.t)"):
                touched = True
    counts[server] += touched
    return +counts  # without zero counts


def test_bidirectional_replication_converges_without_echo(
    fresh_db: FreshDatabase, mariadb: MariaDB, server_b: MariaDB, tmp_path: Path
) -> None:
    db = fresh_db.name
    a, b = target_of(mariadb), target_of(server_b)
    fresh_db.execute(TABLE)
    run_sql(b, f"CREATE DATABASE `{db}`", f"USE `{db}`", TABLE)
    cfg = tmp_path / "cf.toml"
    cfg.write_text(f'bdr-mode = true\n[filter]\nrules = ["{db}.*"]\n')
    (tmp_path / "cdc-a").mkdir()
    (tmp_path / "cdc-b").mkdir()
    servers = [SparkServer(tmp_path / "cdc-a", mariadb.port or 0, spark_master="local[1]"),
               SparkServer(tmp_path / "cdc-b", server_b.port or 0, spark_master="local[1]")]  # fmt: skip
    writers = [Writer(a, db, "A", 1, 5), Writer(b, db, "B", 0, 6)]
    since = {"a": binlog_position(a), "b": binlog_position(b)}
    try:
        for server, (cf, down) in zip(servers, (("a-to-b", b), ("b-to-a", a)), strict=True):
            server.start()
            uri = mysql_uri(down.host, down.port, "?max-txn-row=1")
            created = server.cli("create", "--sink-uri", uri, "--changefeed-id", cf, "--config", str(cfg))
            assert created.returncode == 0, created.stderr + created.stdout
        for w in writers:
            w.thread.start()
        began = now_tso(fresh_db)

        def written_and_replicating() -> bool:
            assert all(w.error is None for w in writers), [w.error for w in writers]
            return all(w.transactions > TRANSACTIONS for w in writers) and all(
                server.changefeed(cf)["checkpoint_ts"] > began for server, cf in zip(servers, ("a-to-b", "b-to-a")))

        wait_for(written_and_replicating, 240, "both sides written while both changefeeds replicate", 0.5)
        for w in writers:
            w.stop.set()
            w.thread.join(30)
            assert w.error is None, w.error
        for server, cf, up in ((servers[0], "a-to-b", fresh_db), (servers[1], "b-to-a", None)):
            end = now_tso(up) if up is not None else server_now_tso(lambda sql: run_sql(b, sql))
            server.wait_checkpoint(cf, end, timeout=180)
    finally:
        for w in writers:
            w.stop.set()
        for server in servers:
            server.stop()
    doc = check(mariadb.connect_kwargs(), b, db)
    assert doc["match"], doc
    n_a, n_b = writers[0].transactions, writers[1].transactions
    assert n_a > 100 and n_b > 100
    on_a, on_b = transactions_by_server(a, db, since["a"]), transactions_by_server(b, db, since["b"])
    assert on_a == {mariadb.server_id: n_a, BDR_SERVER_ID: n_b}, on_a
    assert on_b == {server_b.server_id: n_b, BDR_SERVER_ID: n_a}, on_b


