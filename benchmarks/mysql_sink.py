"""MySQL sink benchmark: private MariaDB -> puller -> Spark query -> MySQL sink -> a second private MariaDB.

    .venv/bin/python benchmarks/mysql_sink.py [--rows 200000] [--tables 4] [--txn-rows 1000] [--master 'local[2]']
                                              [--rounds 1] [--worker-count 16] [--max-txn-row 2048]
                                              [--live-seconds 30] [--live-tps 20]

Reports, in one run (generated input, same machine, one Spark session, both servers private to the run):

* the changefeed's rows/s into the downstream in *catch-up* mode (``benchmarks/changefeed.py``): ``--rows`` rows over
  ``--tables`` tables (INSERT ... SELECT transactions of ``--txn-rows``) committed and captured while the changefeed
  is stopped, then the query restarted and timed until its checkpoint (``progress.json`` in the changefeed's state
  dir) covers the last commit. The sink URI is ``mysql://root@127.0.0.1:PORT/?worker-count=..&max-txn-row=..``; the
  downstream has the same tables, created empty before the changefeed starts (as after a snapshot import). The sink
  applies each table's rows with the table's checkpoint row in ``tidb_cdc.checkpoint`` in one downstream
  transaction, so this is the checkpointed, effectively-once rate. Afterwards the downstream tables must equal the
  upstream's (row count and a checksum over every column, ``sparkcdc.consumer.check.checksum_sql``) or the run fails;
* against ``LOAD DATA LOCAL INFILE`` of the same final rows (read back from the upstream, written to TSV files
  untimed) into fresh tables of the same downstream: one connection, one transaction, the bulk-load ceiling of the
  server. Target: the sink at >= 0.5x its rate;
* against pymysql's ``executemany`` of the same rows as ``INSERT ... VALUES (%s, ...)`` (which pymysql batches into
  multi-row INSERTs) in transactions of ``--txn-rows`` rows, into fresh tables of the same downstream: one
  connection, no checkpoint rows, the plain client doing what the sink's statements do. Both baselines are checked
  against the upstream like the sink, and run after it (on the warmer server: conservative for the sink);
* the same catch-up with ``[consistent] level = "eventual"`` (the redo log on ``file://`` under the run's temp
  dir, default settings) on a fresh database, checked the same way: its rows/s as a ratio to the run without (target
  >= 0.8x): what writing every batch to the redo log before applying it costs;
* the same catch-up with the sink URI's ``bulk-load=false`` on a fresh database, checked the same way: the sink's
  REPLACE statements instead of its default ``LOAD DATA LOCAL INFILE … REPLACE`` (``sparkcdc.mysql.bulk_load``),
  its rows/s as a ratio to LOAD DATA and the default's rows/s as a ratio to it. Which of the three catch-ups runs
  first rotates from round to round (a session's first catch-up is slower): use ``--rounds`` >= 3;
* ``cdc redo apply``'s rows/s (its source and target in this process: the redo log read and checked, then applied as
  the sink applies it, ``--workers 16``) against the LOAD DATA figure above, on the same final rows: a redo log of
  them as the sink writes it (one file per ``--txn-rows`` transactions, INSERTs, table definitions from the
  capture's schema history) applied into fresh tables, checked against the upstream;
* commit-to-downstream latency at moderate load, the changefeed running (after the rounds, same session): a writer
  thread commits ``--live-tps`` transactions per second upstream for ``--live-seconds``, each inserting one row whose
  payload is ``UNIX_TIMESTAMP(NOW(6))`` taken inside the transaction (so the commit's own duration counts as
  latency); a poller on the downstream reads the new rows every 20 ms and stamps each with the wall time its first
  poll returned. Latency is that stamp minus the payload (one clock: both servers run on this machine), p50 and
  p99. Target: p99 <= 2 s. The sink's trigger is 0.5 s while caught up, the puller's heartbeat 0.5 s.

Also printed per round: how many of the query's writer tasks the tables were routed to (a table's rows all go to one
writer task, ``route % writers``). With ``--rounds`` > 1 each round uses a fresh database and the median of the
ratios is reported. A micro-batch ends a backlog only at a trigger, so small ``--rows`` make the ratios noisy. The
puller runs as a thread of this process, as in ``cdc server``; the upstream and the puller are idle while a
catch-up is timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from changefeed import TABLE_COLUMNS, Bench, CheckpointLog, progress_checkpoint
from consumer import load_data
from sparkcdc.consumer.check import checksum_sql
from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.model import tso
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.pipeline.query import build_session
from sparkcdc.sink.mysql.config import MysqlSinkConfig
from sparkcdc.sink.row_payload import table_route

COLUMNS = ["id", "a", "b", "c", "d"]  # TABLE_COLUMNS' names
TICKS = "id BIGINT PRIMARY KEY, committed DECIMAL(16,6) NOT NULL"  # the live phase's table
POLL_S = 0.02


def run_sql(target: MysqlTarget, *statements: str) -> None:
    conn = target.connect(database="", autocommit=True)
    try:
        with conn.cursor() as cur:
            for s in statements:
                cur.execute(s)
    finally:
        conn.close()


def create_tables(target: MysqlTarget, db: str, tables: int) -> None:
    """The workload's tables in ``db`` of the downstream, empty."""
    run_sql(target, f"CREATE DATABASE {db}", *(f"CREATE TABLE {db}.t{i} ({TABLE_COLUMNS})" for i in range(tables)))


def checksums(conn: Any, db: str, tables: int) -> list[tuple[Any, ...]]:
    """(row count, checksum aggregates) of each workload table of ``db``."""
    with conn.cursor() as cur:
        out = []
        for i in range(tables):
            cur.execute(checksum_sql(db, f"t{i}", COLUMNS))
            out.append(tuple(cur.fetchone()))
        return out


def verify(upstream: Any, downstream: MysqlTarget, db: str, copy: str, what: str, tables: int) -> None:
    """Raises RuntimeError unless the downstream's ``copy`` tables equal the upstream's ``db`` tables."""
    conn = downstream.connect(database="", autocommit=True)
    try:
        want, got = checksums(upstream, db, tables), checksums(conn, copy, tables)
    finally:
        conn.close()
    bad = [f"t{i} (upstream {w[0]} rows, downstream {g[0]})" for i, (w, g) in enumerate(zip(want, got)) if w != g]
    if bad:
        raise RuntimeError(f"{what}: downstream {copy} differs from upstream {db} in {', '.join(bad)}")


def read_rows(upstream: Any, db: str, tables: int) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the workload tables of ``db``, by table, in key order."""
    rows = {}
    with upstream.cursor() as cur:
        for i in range(tables):
            cur.execute(f"SELECT {','.join(COLUMNS)} FROM {db}.t{i} ORDER BY id")
            rows[f"t{i}"] = list(cur.fetchall())
    return rows


def run_executemany(target: MysqlTarget, rows: dict[str, list[tuple[Any, ...]]], db: str, per: int) -> float:
    """Seconds pymysql's ``executemany`` takes to INSERT ``rows`` into ``db`` in transactions of ``per`` rows of one
    table each, the tables taking turns as the upstream workload's transactions did; one connection."""
    sql = {t: f"INSERT INTO {db}.{t} ({','.join(COLUMNS)}) VALUES ({','.join(['%s'] * len(COLUMNS))})" for t in rows}
    longest = max(len(r) for r in rows.values())
    chunks = [(t, rows[t][i : i + per]) for i in range(0, longest, per) for t in sorted(rows) if rows[t][i : i + per]]
    conn = target.connect(database="", autocommit=False)
    try:
        started = time.perf_counter()
        with conn.cursor() as cur:
            for table, chunk in chunks:
                cur.executemany(sql[table], chunk)
                conn.commit()
        return time.perf_counter() - started
    finally:
        conn.close()


def writer_tasks(db: str, tables: int, writers: int) -> int:
    """How many writer tasks the tables' rows go to (``sparkcdc.sink.row_payload.table_route`` % writers)."""
    return len({table_route(db, f"t{i}") % writers for i in range(tables)})


def write_redo_log(bench: Bench, rows: dict[str, list[tuple[Any, ...]]], db: str, copy: str, storage: str) -> int:
    """A redo log of ``rows`` (``db``'s final rows) as INSERTs into ``copy``, as the sink writes one: a file per
    ``--txn-rows`` transactions of each table in turn; returns the rows in it."""
    from sparkcdc.capture.schema_history import SchemaHistory
    from sparkcdc.changefeed.consistent import ConsistentConfig
    from sparkcdc.model import RowChange, RowOp
    from sparkcdc.redo.meta import RedoMeta
    from sparkcdc.redo.names import LogName, file_key, meta_name
    from sparkcdc.redo.writer import ChunkLog, storage_of
    from sparkcdc.sink.row_payload import pack

    config = ConsistentConfig.from_toml({"level": "eventual", "storage": storage})
    store = storage_of(config)
    history = SchemaHistory.load(bench.capture)
    infos = {t: replace(history.table_info_at(db, t, 1 << 62), schema=copy) for t in rows}  # type: ignore[type-var]
    per, key, ts, n = bench.args.txn_rows, file_key("bench/redo"), tso.compose(1_700_000_000_000), 0
    chunks = [(t, r[i : i + per]) for i in range(0, max(len(r) for r in rows.values()), per)
              for t, r in sorted(rows.items()) if r[i : i + per]]  # fmt: skip
    store.write(meta_name(key), RedoMeta("bench/redo", ts, ts).to_json())
    for i, (t, chunk) in enumerate(chunks):
        begin, ts = ts, ts + 1
        log = ChunkLog(store, config, LogName(key, begin, ts, 0, 1))
        changes = [RowChange(ts, infos[t], RowOp.INSERT, None, tuple(_value(v) for v in row)) for row in chunk]
        log.add_rows(ts, i, infos[t], infos[t].table_id, len(changes), pack(changes))
        log.close()
        n += len(changes)
    return n


def _value(v: Any) -> Any:
    """A value read back with pymysql as the capture carries it (DATETIME as its text)."""
    return v.strftime("%Y-%m-%d %H:%M:%S") if hasattr(v, "strftime") else v


def run_redo_apply(downstream: MysqlTarget, storage: str, tmp: Path) -> float:
    """Seconds ``cdc redo apply`` takes (source and target in this process, 16 workers)."""
    from sparkcdc.changefeed.consistent import storage_uri
    from sparkcdc.consumer.redo_source import RedoSource
    from sparkcdc.consumer.runner import Consumer
    from sparkcdc.mysql.engine import ApplyEngine
    from sparkcdc.sink.mysql.session import CHECKPOINT_SCHEMA
    from sparkcdc.storage.external import ExternalStorage

    started = time.perf_counter()
    source = RedoSource(ExternalStorage.from_uri(storage_uri(storage)), tmp)
    consumer = Consumer(source, ApplyEngine(downstream, changefeed=source.log.changefeed, workers=16,
                                            checkpoint_schema=CHECKPOINT_SCHEMA))  # fmt: skip
    try:
        consumer.run_once()
    finally:
        consumer.close()
    if not source.finished:
        raise RuntimeError("redo apply did not finish")
    return time.perf_counter() - started


def run_round(bench: Bench, spark: Any, downstream: MysqlTarget, uri: str, r: int, work: Path) -> dict[str, Any]:
    """One catch-up of the sink on a fresh database, then the same with a redo log, then the baselines and the redo
    apply on its final rows."""
    args = bench.args
    db = f"mysql_r{r}"
    create_tables(downstream, db, args.tables)
    create_tables(downstream, f"{db}_ev", args.tables)
    consistent = {"consistent": {"level": "eventual", "storage": f"file://{work}/redo-{db}"}}

    def without() -> float:
        return bench.catch_up(spark, db, uri, progress_checkpoint)

    def with_redo() -> float:
        return bench.catch_up(spark, f"{db}_ev", uri, progress_checkpoint, config=consistent)

    def statements() -> float:
        return bench.catch_up(spark, f"{db}_st", f"{uri}&bulk-load=false", progress_checkpoint)

    create_tables(downstream, f"{db}_st", args.tables)
    runs = [("rate", without), ("eventual", with_redo), ("statements", statements)]
    timed: dict[str, float] = {}
    for name, run in runs[r % 3 :] + runs[: r % 3]:  # which goes first rotates: a session's first is the slower one
        timed[name] = run()
    rate, eventual = timed["rate"], timed["eventual"]
    verify(bench.conn, downstream, db, db, "mysql sink", args.tables)
    verify(bench.conn, downstream, f"{db}_ev", f"{db}_ev", "mysql sink with a redo log", args.tables)
    verify(bench.conn, downstream, f"{db}_st", f"{db}_st", "mysql sink with bulk-load=false", args.tables)
    rows = read_rows(bench.conn, db, args.tables)
    count = sum(len(v) for v in rows.values())
    if count != args.rows:
        raise RuntimeError(f"upstream {db} holds {count} rows, expected {args.rows}")
    create_tables(downstream, f"{db}_load", args.tables)
    load = count / load_data(downstream, rows, f"{db}_load", COLUMNS, work)
    verify(bench.conn, downstream, db, f"{db}_load", "LOAD DATA", args.tables)
    create_tables(downstream, f"{db}_many", args.tables)
    many = count / run_executemany(downstream, rows, f"{db}_many", args.txn_rows)
    verify(bench.conn, downstream, db, f"{db}_many", "executemany", args.tables)
    create_tables(downstream, f"{db}_redo", args.tables)
    redo_uri = f"file://{work}/redo-apply-{db}"
    logged = write_redo_log(bench, rows, db, f"{db}_redo", redo_uri)
    apply = logged / run_redo_apply(downstream, redo_uri, work / "redo-tmp")
    verify(bench.conn, downstream, db, f"{db}_redo", "redo apply", args.tables)
    writers = min(MysqlSinkConfig.from_uri(uri).worker_count, spark.sparkContext.defaultParallelism)
    routed = f"{writer_tasks(db, args.tables, writers)} of {writers}"
    return {"rate": rate, "eventual": eventual, "statements": timed["statements"], "load": load, "many": many,
            "apply": apply, "writers": routed}  # fmt: skip


def live_latency(bench: Bench, spark: Any, downstream: MysqlTarget, uri: str) -> list[float]:
    """Seconds from each live transaction's ``NOW(6)`` until the downstream poller first sees its row, sorted."""
    args = bench.args
    db = "lat"
    bench.sql(f"CREATE DATABASE {db}", f"CREATE TABLE {db}.ticks ({TICKS})")
    run_sql(downstream, f"CREATE DATABASE {db}", f"CREATE TABLE {db}.ticks ({TICKS})")
    committed: list[int] = []
    failed: list[BaseException] = []

    def write(done: threading.Event) -> None:
        import pymysql  # type: ignore[import-untyped]

        conn = pymysql.connect(**bench.db.connect_kwargs("root", autocommit=True))
        try:
            with conn.cursor() as cur:
                interval, next_at = 1.0 / args.live_tps, time.monotonic()
                stop_at = next_at + args.live_seconds
                while time.monotonic() < stop_at:
                    k = len(committed)
                    cur.execute(f"INSERT INTO {db}.ticks VALUES ({k}, UNIX_TIMESTAMP(NOW(6)))")
                    committed.append(k)
                    next_at += interval
                    time.sleep(max(0.0, next_at - time.monotonic()))
        except BaseException as e:  # reported by the poller's thread
            failed.append(e)
        finally:
            conn.close()
            done.set()

    def measure(_log: CheckpointLog) -> list[float]:
        seen: dict[int, float] = {}
        done = threading.Event()
        writer = threading.Thread(target=write, args=(done,), daemon=True)
        conn = downstream.connect(database="", autocommit=True)
        try:
            writer.start()
            deadline, low = None, 0
            with conn.cursor() as cur:
                while not done.is_set() or len(seen) < len(committed):
                    if failed:
                        raise RuntimeError(f"live writer failed: {failed[0]}") from failed[0]
                    if deadline is None and done.is_set():
                        deadline = time.monotonic() + 120
                    if deadline is not None and time.monotonic() > deadline:
                        raise RuntimeError(f"{len(committed) - len(seen)} live rows not downstream after 120 s")
                    # key slots are applied in parallel: a row may appear before an earlier one, so read from the
                    # lowest id not seen yet
                    cur.execute(f"SELECT id, committed FROM {db}.ticks WHERE id >= %s", (low,))
                    got = cur.fetchall()
                    now = time.time()
                    for k, at in got:
                        seen.setdefault(int(k), now - float(at))
                    while low in seen:
                        low += 1
                    time.sleep(POLL_S)
        finally:
            writer.join(30)
            conn.close()
        if failed:
            raise RuntimeError(f"live writer failed: {failed[0]}") from failed[0]
        if sorted(seen) != committed:
            raise RuntimeError(f"live rows downstream {len(seen)} differ from the {len(committed)} committed")
        return sorted(seen.values())

    result: list[float] = bench.run_feed(spark, db, db, measure, uri, progress_checkpoint)
    return result


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--rows", type=int, default=200_000, help="catch-up rows (a multiple of --txn-rows)")
    ap.add_argument("--tables", type=int, default=4, help="tables the rows are spread over")
    ap.add_argument("--txn-rows", type=int, default=1000, help="rows per upstream (and executemany) transaction")
    ap.add_argument("--master", default="local[2]", help="Spark master")
    ap.add_argument("--rounds", type=int, default=1, help="catch-up rounds (median of the ratios)")
    ap.add_argument("--worker-count", type=int, default=16, help="sink URI worker-count (writer tasks)")
    ap.add_argument("--max-txn-row", type=int, default=2048, help="sink URI max-txn-row (rows per downstream txn)")
    ap.add_argument("--live-seconds", type=float, default=30.0, help="length of the latency phase (0 skips it)")
    ap.add_argument("--live-tps", type=float, default=20.0, help="transactions per second in the latency phase")
    args = ap.parse_args()
    if args.rows <= 0 or args.rows % args.txn_rows:
        ap.error("--rows must be a positive multiple of --txn-rows")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    results: list[dict[str, Any]] = []
    latencies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="sparkcdc-bench-") as tmp:
        bench = Bench(Path(tmp), args)
        down = MariaDB(Path(tmp) / "downstream", server_id=2).start()
        spark = None
        try:
            assert down.port is not None
            downstream = MysqlTarget("127.0.0.1", down.port, "root")
            uri = f"mysql://root@127.0.0.1:{down.port}/?worker-count={args.worker_count}&max-txn-row={args.max_txn_row}"
            spark = build_session(args.master, "sparkcdc-bench")
            for r in range(args.rounds):
                got = run_round(bench, spark, downstream, uri, r, Path(tmp))
                results.append(got)
                print(f"round {r + 1}: mysql sink catch-up {got['rate']:,.0f} rows/s (tables on {got['writers']} "
                      f"writer tasks), with a redo log {got['eventual']:,.0f} rows/s; LOAD DATA {got['load']:,.0f} "
                      f"rows/s; executemany {got['many']:,.0f} rows/s; redo apply {got['apply']:,.0f} rows/s; "
                      "downstream equals upstream for all five", flush=True)  # fmt: skip
                print(f"round {r + 1}: mysql sink with bulk-load=false (REPLACE statements) {got['statements']:,.0f} "
                      "rows/s; downstream equals upstream", flush=True)  # fmt: skip
            if args.live_seconds > 0:
                latencies = live_latency(bench, spark, downstream, uri)
        finally:
            if spark is not None:
                spark.stop()
            down.stop()
            bench.close()
    print(f"{args.rows} rows, {args.tables} tables, {args.txn_rows} rows/txn, {args.master}, catch-up mode, "
          f"worker-count={args.worker_count} max-txn-row={args.max_txn_row}; median of {args.rounds} round(s)")
    rate = statistics.median(x["rate"] for x in results)
    vs_load = statistics.median(x["rate"] / x["load"] for x in results)
    vs_many = statistics.median(x["rate"] / x["many"] for x in results)
    print(f"mysql sink (checkpointed): {rate:,.0f} rows/s; ratio to LOAD DATA "
          f"({statistics.median(x['load'] for x in results):,.0f} rows/s) {vs_load:.2f}x (target >= 0.5x); "
          f"ratio to pymysql executemany ({statistics.median(x['many'] for x in results):,.0f} rows/s) "
          f"{vs_many:.2f}x", flush=True)  # fmt: skip
    print(f"mysql sink with bulk-load=false (REPLACE statements): "
          f"{statistics.median(x['statements'] for x in results):,.0f} rows/s; ratio to LOAD DATA "
          f"{statistics.median(x['statements'] / x['load'] for x in results):.2f}x; bulk load (default) / statements "
          f"{statistics.median(x['rate'] / x['statements'] for x in results):.2f}x", flush=True)  # fmt: skip
    print(f"mysql sink with [consistent] level = \"eventual\" (redo log on file://): "
          f"{statistics.median(x['eventual'] for x in results):,.0f} rows/s; ratio to level none "
          f"{statistics.median(x['eventual'] / x['rate'] for x in results):.2f}x (target >= 0.8x)", flush=True)
    print(f"cdc redo apply: {statistics.median(x['apply'] for x in results):,.0f} rows/s; ratio to LOAD DATA "
          f"{statistics.median(x['apply'] / x['load'] for x in results):.2f}x", flush=True)
    if latencies:
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        print(f"latency upstream commit -> row visible downstream ({args.live_tps:g} txn/s for "
              f"{args.live_seconds:g} s, {len(latencies)} txns, polled every {POLL_S * 1000:g} ms): p50 {p50:.2f}s "
              f"p99 {p99:.2f}s max {latencies[-1]:.2f}s (target p99 <= 2 s)", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
