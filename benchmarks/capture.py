"""Capture benchmark: decode throughput vs python-mysql-replication and mariadb-binlog, and the peak RSS of
capturing one 1,000,000-row transaction.

    .venv/bin/python benchmarks/capture.py [--rows 200000] [--big-rows 1000000]

Everything runs against a private MariaDB started in a temporary directory (stopped at the end).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pymysql

from sparkcdc.capture import ChunkRef, Puller, PullerConfig, RelayLog, SchemaHistory, decode_chunk
from sparkcdc.devtools.mariadb import CDC_PASSWORD, CDC_USER, MariaDB
from sparkcdc.model.events import RowChange

_HISTORY: SchemaHistory | None = None


def _init_worker(data_dir: str) -> None:
    global _HISTORY
    _HISTORY = SchemaHistory.load(data_dir)


def _count(ref: ChunkRef) -> int:
    assert _HISTORY is not None
    return sum(1 for e in decode_chunk(ref, _HISTORY) if isinstance(e, RowChange))


def _setup(db: MariaDB, rows: int) -> tuple[str, int]:
    conn = pymysql.connect(**db.connect_kwargs("root", autocommit=True))
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE bench")
        cur.execute("USE bench")
        cur.execute(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, a INT, b VARCHAR(40), c DECIMAL(12,2), d DATETIME(3), e DOUBLE)"
        )
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
        per = 1000
        for k in range(rows // per):
            cur.execute(
                f"INSERT INTO t SELECT seq + {k * per}, seq * 7, CONCAT('name-', seq), seq / 3, "
                f"'2024-01-01 00:00:00.123' + INTERVAL seq SECOND, seq * 1.5 FROM seq_1_to_{per}"
            )
    conn.close()
    return str(file), int(pos)


def _kwargs(db: MariaDB) -> dict[str, Any]:
    assert db.port is not None
    return {"host": "127.0.0.1", "port": db.port, "user": CDC_USER, "password": CDC_PASSWORD}


def bench_decode(data_dir: str, rows: int) -> dict[str, float]:
    relay = RelayLog(data_dir)
    chunks = relay.chunks(0, 1 << 62, 1 << 20)
    out: dict[str, float] = {}
    _init_worker(data_dir)
    t0 = time.perf_counter()
    n = sum(_count(c) for c in chunks)
    out["ours_1_worker"] = n / (time.perf_counter() - t0)
    assert n == rows, (n, rows)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2, initializer=_init_worker, initargs=(data_dir,)) as pool:
        pool.map(_count, chunks[:2])  # warm the workers (fork + compile) outside the measurement
        t0 = time.perf_counter()
        n2 = sum(pool.map(_count, chunks, chunksize=1))
        out["ours_2_workers"] = n2 / (time.perf_counter() - t0)
    assert n2 == rows
    return out


def bench_pymysqlreplication(db: MariaDB, file: str, pos: int, rows: int) -> float:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    settings = {**_kwargs(db), "passwd": CDC_PASSWORD}
    settings.pop("password")
    stream = BinLogStreamReader(connection_settings=settings, server_id=4242, is_mariadb=False, log_file=file,
                                log_pos=pos, resume_stream=True, blocking=False,
                                only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
    t0 = time.perf_counter()
    n = 0
    for ev in stream:
        n += len(ev.rows)
    elapsed = time.perf_counter() - t0
    stream.close()
    assert n == rows, (n, rows)
    return n / elapsed


def bench_mariadb_binlog(db: MariaDB, file: str, rows: int) -> float:
    path = db.datadir / file
    t0 = time.perf_counter()
    subprocess.run(["mariadb-binlog", "--no-defaults", "--base64-output=decode-rows", "-v", str(path)],
                   stdout=subprocess.DEVNULL, check=True)
    return rows / (time.perf_counter() - t0)


_CHILD = """
import json, resource, sys, time
from sparkcdc.capture import Puller, PullerConfig, RelayLog, SchemaHistory, decode_chunk
kw = json.loads(sys.argv[1])
mode = sys.argv[2]
t0 = time.perf_counter()
if mode == "capture":
    p = Puller(PullerConfig(**kw))
    p.catch_up(600)
    p.close()
    n = len(RelayLog(kw["data_dir"]).transactions(0))
else:
    h = SchemaHistory.load(kw["data_dir"])
    n = sum(1 for c in RelayLog(kw["data_dir"]).chunks(0, 1 << 62, 1 << 30) for e in decode_chunk(c, h)
            if hasattr(e, "op"))
print(json.dumps({"n": n, "s": time.perf_counter() - t0,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def bench_big_txn(db: MariaDB, work: Path, big_rows: int) -> dict[str, Any]:
    data_dir = work / "big"
    kw = {**_kwargs(db), "data_dir": str(data_dir)}
    # Start the puller at "now" (schema snapshot + position) before the big transaction is written.
    p = Puller(PullerConfig(**kw))
    p.catch_up(60)
    p.close()
    conn = pymysql.connect(**db.connect_kwargs("root", autocommit=False))
    with conn.cursor() as cur:
        cur.execute("USE bench")
        cur.execute("CREATE TABLE big (id BIGINT PRIMARY KEY, a INT, b VARCHAR(40))")
        cur.execute("BEGIN")
        step = 100000
        for k in range(0, big_rows, step):
            cur.execute(f"INSERT INTO big SELECT seq + {k}, seq, CONCAT('row-', seq) FROM seq_1_to_{step}")
        cur.execute("COMMIT")
    conn.close()
    out: dict[str, Any] = {}
    for mode in ("capture", "decode"):
        res = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(kw), mode], capture_output=True, text=True,
                             check=True)
        out[mode] = json.loads(res.stdout.strip().splitlines()[-1])
    seg_bytes = sum(f.stat().st_size for f in (data_dir / "relay").glob("*.seg"))
    out["relay_mib"] = seg_bytes / 2**20
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows in the throughput binlog (multiple of 1000)")
    ap.add_argument("--big-rows", type=int, default=1_000_000, help="rows of the single big transaction (0: skip)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sparkcdc-bench-") as tmp:
        work = Path(tmp)
        db = MariaDB(work / "mariadb").start()
        try:
            data_dir = str(work / "relay")
            p = Puller(PullerConfig(**_kwargs(db), data_dir=data_dir))
            p.catch_up(60)
            file, pos = _setup(db, args.rows)
            t0 = time.perf_counter()
            p.catch_up(600)
            capture_s = time.perf_counter() - t0
            p.close()
            res = bench_decode(data_dir, args.rows)
            res["python_mysql_replication"] = bench_pymysqlreplication(db, file, pos, args.rows)
            res["mariadb_binlog_C"] = bench_mariadb_binlog(db, file, args.rows)
            load = os.getloadavg()
            print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} (decode figures scale with free cores)")
            print(f"binlog: {args.rows} rows in {args.rows // 1000} transactions; "
                  f"puller framed them in {capture_s:.2f} s ({args.rows / capture_s:,.0f} rows/s)")
            for k, v in res.items():
                print(f"  {k:28s} {v:>12,.0f} rows/s")
            base = res["python_mysql_replication"]
            print(f"  ratio ours_1_worker / python-mysql-replication  = {res['ours_1_worker'] / base:.2f}x")
            print(f"  ratio ours_2_workers / python-mysql-replication = {res['ours_2_workers'] / base:.2f}x "
                  "(target >= 5x)")
            c_ratio = res["mariadb_binlog_C"] / res["ours_2_workers"]
            print(f"  ratio mariadb-binlog / ours_2_workers           = {c_ratio:.2f}x")
            if args.big_rows:
                big = bench_big_txn(db, work, args.big_rows)
                print(f"single transaction of {args.big_rows:,} rows (relay {big['relay_mib']:.0f} MiB):")
                for mode in ("capture", "decode"):
                    r = big[mode]
                    what = "transactions in the relay" if mode == "capture" else "rows decoded"
                    print(f"  {mode:8s} peak RSS {r['rss_mib']:.0f} MiB, {r['s']:.1f} s, {r['n']:,} {what} "
                          "(limit 1024 MiB)")
        finally:
            db.stop()
    print(f"benchmark driver peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
