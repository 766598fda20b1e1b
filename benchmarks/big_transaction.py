"""Peak memory of one big upstream transaction through the whole pipeline (issue 27, item 4).

    .venv/bin/python benchmarks/big_transaction.py [--rows 1000000] [--limit-mib 1024]

One transaction of ``--rows`` rows into one table (``INSERT ... SELECT`` from MariaDB's sequence engine; the
columns of ``changefeed.py``'s workload), committed and captured while the changefeed is stopped (the puller runs as
a thread of this process, as in ``cdc server``), then the changefeed's query (``local[2]``, storage sink, canal-json)
started in a warm session and timed until the sink's checkpoint covers the transaction. The peak resident memory of
the process tree (this driver with its puller thread, Spark's JVM and its Python workers; not MariaDB, which is the
upstream) is sampled every 0.2 s, separately while the transaction is captured and while it is replicated; the
replication's must stay within ``--limit-mib`` (TiCDC's own memory quota is 1 GiB). The last line:

    <rows>-row transaction: peak RSS capture <N> MiB, replication <N> MiB (limit <N> MiB: ok|over), <N> rows/s

(``failed: <why>`` instead of the rows/s, and exit status 1, when the query failed: Spark's JVM out of heap, say),
after a line with each process's share of the replication's peak and one with the tree's proportional set size then
(a page that a Spark daemon shares with the workers it forked counts once there, in each process's RSS).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from changefeed import Bench, CheckpointLog, RssSampler, metadata_checkpoint
from sparkcdc.pipeline.query import build_session, start_query, stop_between_batches


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--limit-mib", type=int, default=1024)
    args = ap.parse_args()
    bench_args = argparse.Namespace(rows=args.rows, txn_rows=args.rows, tables=1)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory(prefix="sparkcdc-bigtxn-") as tmp:
        bench = Bench(Path(tmp), bench_args)
        spark = build_session("local[2]", "sparkcdc-bench", home_dir=Path(tmp) / "spark-home")
        try:
            db = "big"
            bench.create_tables(db)
            spec, sink = bench.feed_spec(db, db)
            log = CheckpointLog(metadata_checkpoint(spec, sink))
            try:
                query = start_query(spark, spec)
                log.wait(spec.start_ts + 1, 300)  # the query is warm; stopped while the transaction is captured
                stop_between_batches(query, spec)
                rss = RssSampler(skip=("mariadbd",))
                end = bench.load(db)
                while bench._resolved() < end:
                    time.sleep(0.05)
                capture = rss.close()
                rss = RssSampler(skip=("mariadbd",))
                t0 = time.time()
                query = start_query(spark, spec)
                failed = _wait(query, log, end, 1800)
                done = time.time()
                replication = rss.close()
                pss = int(rss.pss.value)
                if not failed:
                    stop_between_batches(query, spec)
                at_peak = rss.at_peak
            finally:
                log.close()
        finally:
            try:
                spark.stop()
            except Exception as e:  # the JVM died (out of heap): nothing left to stop
                print(f"stopping Spark: {type(e).__name__}", file=sys.stderr)
            bench.close()
    print("replication peak by process: " + ", ".join(f"{name} {rss / 2**20:,.0f}" for name, rss in at_peak) + " MiB")
    print(f"replication peak as proportional set size (pages shared by forked workers counted once): "
          f"{pss / 2**20:,.0f} MiB")
    verdict = "ok" if replication <= args.limit_mib << 20 else "over"
    speed = f"failed: {failed}" if failed else f"{args.rows / (done - t0):,.0f} rows/s"
    print(f"{args.rows}-row transaction: peak RSS capture {capture / 2**20:,.0f} MiB, replication "
          f"{replication / 2**20:,.0f} MiB (limit {args.limit_mib} MiB: {verdict}), {speed}")  # fmt: skip
    return 1 if failed else 0


def _wait(query: Any, log: CheckpointLog, ts: int, timeout: float) -> str:
    """Wait until the checkpoint covers ``ts``; "" then, else the first line of why the query stopped (a JVM out
    of heap, for one). Raises RuntimeError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while log.current() < ts:
        try:
            if not query.isActive:
                error = query.exception()
                return str(getattr(error, "desc", None) or error or "the query stopped").strip().splitlines()[0][:200]
        except Exception as e:  # py4j: the JVM is gone
            return f"Spark's JVM is gone ({type(e).__name__}; its log says why, e.g. OutOfMemoryError: Java heap space)"
        if time.monotonic() > deadline:
            raise RuntimeError(f"checkpoint did not reach {ts} in {timeout}s")
        time.sleep(0.05)
    return ""


if __name__ == "__main__":
    sys.exit(main())
