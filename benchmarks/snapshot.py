"""Initial snapshot benchmark: private MariaDB -> ``[snapshot] mode = "initial"`` -> file:// storage sink.

    .venv/bin/python benchmarks/snapshot.py [--rows 1000000] [--tables 4] [--chunk-size 20000] [--parallelism 4]
                                            [--rounds 3]

Reports, in one run (generated input, same machine, the same tables for every configuration):

* rows/s of the initial snapshot into the storage sink (``file://...?protocol=canal-json``, the configuration of
  ``benchmarks/changefeed.py``) with Spark ``local[1]`` and ``local[2]``, and the ratio local[2]/local[1]. The
  tables are ``--rows`` rows over ``--tables`` tables with ``changefeed.py``'s columns, filled once, server-side
  (``INSERT ... SELECT FROM seq_1_to_N``) and captured before the first round. Each run is a fresh changefeed
  (state dir, sink) starting now, timed from ``start_query`` until ``snapshot.json`` says complete and the sink's
  ``metadata`` checkpoint reaches its start-ts: the last snapshot batch publishes it once every chunk is durable.
  The Spark session is built before the clock starts and stopped after each run, so the master alternates in one
  JVM as in ``changefeed.py``; the first run of the JVM is the coldest;
* against MariaDB exporting the same tables itself in the same run: ``SELECT * INTO OUTFILE`` per table, one
  after the other (what ``mariadb-dump --tab`` runs), timed from the first statement to the last file written.
  That is the server's own serial export, the floor of reading the rows; the snapshot adds the chunked
  consistent-snapshot SELECTs over the client protocol, converting values, canal-json encoding and Spark's batches,
  on the same 2 cores as MariaDB. Reported: snapshot rows/s / dump rows/s for each master.

Also printed: the snapshot's rows/s after its first batch (from when ``snapshot.json`` first records rows until
the end). The whole-run figure includes starting the query and the first batch's cold Python workers (9-16 s
on 2 cores whatever the size), so it grows with ``--rows``; the later figure is the copy's steady rate. The
local[2]/local[1] ratio only means something on otherwise idle cores: with other work on them local[2] gets no
second core.

Each round runs the three configurations (dump, local[1], local[2]) once, the order rotated per round so none
always runs first; the median of ``--rounds`` is reported (ratios: median of the per-round ratios). Each round's
output is deleted once measured. The puller runs as a thread of this process, as in ``cdc server``; nothing is
written upstream while a round runs, so it is idle.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from changefeed import Bench, CheckpointLog, metadata_checkpoint
from sparkcdc.devtools.mariadb import CDC_PASSWORD, CDC_USER
from sparkcdc.pipeline import snapshot_state
from sparkcdc.pipeline.query import build_session, start_query, stop_between_batches

DB = "snap"
MASTERS = ("local[1]", "local[2]")


def fill(bench: Bench, rows: int, tables: int, batch: int) -> None:
    """``rows`` rows over ``tables`` tables of ``DB`` (changefeed.py's columns), in server-side transactions of at
    most ``batch`` rows."""
    bench.create_tables(DB)
    for i in range(tables):
        n = rows // tables + (i < rows % tables)
        for lo in range(1, n + 1, batch):
            hi = min(n, lo + batch - 1)
            bench.sql(f"INSERT INTO {DB}.t{i} SELECT seq, seq % 1000, CONCAT('row-', seq, '-', {i}), seq / 7, "
                      f"'2026-01-01 00:00:00' FROM {DB}.seq_{lo}_to_{hi}")  # fmt: skip


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def snapshot(bench: Bench, master: str, round_no: int) -> dict[str, Any]:
    """Rows/s of one fresh changefeed's initial snapshot of ``DB`` with ``master``, and what it wrote.

    Raises RuntimeError when the query fails, the snapshot does not end in 900 s or copies the wrong row count."""
    args = bench.args
    name = f"r{round_no}_" + master.replace("[", "").replace("]", "")
    spark = build_session(master, "sparkcdc-bench")
    try:
        spec, sink = bench.feed_spec(name, DB)
        config = {**spec.config, "snapshot": {"mode": "initial", "chunk-size": args.chunk_size,
                                              "parallelism": args.parallelism}}  # fmt: skip
        upstream = f"mysql://{CDC_USER}:{CDC_PASSWORD}@127.0.0.1:{bench.db.port}"
        spec = dataclasses.replace(spec, config=config, upstream_uri=upstream, snapshot=True)
        log = CheckpointLog(metadata_checkpoint(spec, sink))
        t0 = time.time()
        query = start_query(spark, spec)
        try:
            deadline = time.monotonic() + 900
            first: tuple[float, int] | None = None  # when the first batch was recorded, and its rows
            while True:
                progress = snapshot_state.read_progress(spec.snapshot_progress_path)
                if first is None and progress is not None and progress.rows_done:
                    first = (time.time(), progress.rows_done)
                if progress is not None and progress.complete and log.current() >= spec.start_ts:
                    break
                if query.exception() is not None or not query.isActive:
                    raise RuntimeError(f"{master}: the query stopped: {query.exception()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{master}: the snapshot did not complete in 900 s")
                time.sleep(0.02)
            done = log.covered_at(spec.start_ts) or time.time()
        finally:
            stop_between_batches(query, spec)
            log.close()
        if progress is None or progress.rows_done != args.rows:
            copied = progress and progress.rows_done
            raise RuntimeError(f"{master}: the snapshot copied {copied} rows, not {args.rows}")
        chunks = sum(t.chunks for t in progress.tables.values())
        size = tree_bytes(sink)
        if first is None or first[1] == args.rows:  # one batch copied everything: no later rate
            first = (t0, 0)
        return {"rate": args.rows / (done - t0), "seconds": done - t0, "chunks": chunks, "bytes": size,
                "warm": (args.rows - first[1]) / (done - first[0]), "first": first[0] - t0,
                "slots": spark.sparkContext.defaultParallelism}  # fmt: skip
    finally:
        spark.stop()
        _remove(bench.work / f"sink-{name}")
        _remove(bench.work / name)


def export_dir(bench: Bench) -> Path:
    """A new directory where the server may write: under ``secure_file_priv`` if set, else in this run's work dir
    (MariaDB's default, unset, allows any directory; MySQL's NULL, which disables exports, makes the first
    ``INTO OUTFILE`` fail with the server's error)."""
    with bench.conn.cursor() as cur:
        cur.execute("SELECT @@secure_file_priv")
        priv = cur.fetchone()[0]
    return Path(tempfile.mkdtemp(prefix="sparkcdc-dump-", dir=priv or bench.work))


def dump(bench: Bench, base: Path, round_no: int) -> dict[str, Any]:
    """Rows/s of MariaDB writing every table of ``DB`` to a file with ``SELECT * INTO OUTFILE``, one table after
    the other. Raises RuntimeError when the files do not hold every row."""
    out = base / f"r{round_no}"
    out.mkdir()
    out.chmod(0o777)  # the server may run as another user
    t0 = time.perf_counter()
    for i in range(bench.args.tables):
        bench.sql(f"SELECT * FROM {DB}.t{i} INTO OUTFILE '{out / f't{i}.txt'}'")
    seconds = time.perf_counter() - t0
    size = tree_bytes(out)
    lines = 0
    for f in out.iterdir():
        with f.open("rb") as fh:
            lines += sum(1 for _ in fh)
    _remove(out)
    if lines != bench.args.rows:
        raise RuntimeError(f"the export holds {lines} rows, not {bench.args.rows}")
    return {"rate": bench.args.rows / seconds, "seconds": seconds, "bytes": size}


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows over all tables")
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--chunk-size", type=int, default=20_000, help="[snapshot] chunk-size: rows per chunk (task)")
    ap.add_argument("--parallelism", type=int, default=4, help="[snapshot] parallelism: chunks per micro-batch")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fill-rows", type=int, default=100_000, help="rows per upstream transaction while filling")
    args = ap.parse_args()
    args.txn_rows = args.fill_rows  # Bench's workload size; the tables here are filled by fill()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    configs = ["dump", *MASTERS]
    results: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    with tempfile.TemporaryDirectory(prefix="sparkcdc-bench-") as tmp:
        bench = Bench(Path(tmp), args)
        base: Path | None = None
        try:
            t0 = time.perf_counter()
            fill(bench, args.rows, args.tables, args.fill_rows)
            print(f"filled {args.rows:,} rows in {time.perf_counter() - t0:.1f}s", flush=True)
            base = export_dir(bench)
            for r in range(args.rounds):
                for c in configs[r % len(configs) :] + configs[: r % len(configs)]:
                    got = dump(bench, base, r) if c == "dump" else snapshot(bench, c, r)
                    results[c].append(got)
                    extra = (
                        f", {got['chunks']} chunks, {got['slots']} task slots, first batch recorded at "
                        f"{got['first']:.1f}s, after it {got['warm']:,.0f} rows/s"
                        if "chunks" in got
                        else ""
                    )
                    print(f"round {r + 1} {c}: {got['rate']:,.0f} rows/s ({got['seconds']:.1f}s, "
                          f"{got['bytes'] / 2**20:,.0f} MiB{extra})", flush=True)  # fmt: skip
        finally:
            if base is not None:
                _remove(base)
            bench.close()
    dumps = results["dump"]
    one, two = (results[m] for m in MASTERS)
    print(f"{args.rows:,} rows, {args.tables} tables, chunk-size {args.chunk_size}, parallelism {args.parallelism}, "
          f"storage sink file:// canal-json; median of {args.rounds} round(s)")  # fmt: skip
    print(f"MariaDB SELECT ... INTO OUTFILE (serial per table): {statistics.median(x['rate'] for x in dumps):,.0f} "
          "rows/s")  # fmt: skip
    for m, runs in zip(MASTERS, (one, two), strict=True):
        vs_dump = statistics.median(s["rate"] / d["rate"] for s, d in zip(runs, dumps, strict=True))
        print(
            f"snapshot {m}: {statistics.median(x['rate'] for x in runs):,.0f} rows/s (after the first batch: "
            f"{statistics.median(x['warm'] for x in runs):,.0f} rows/s); ratio to the dump {vs_dump:.3f}x"
        )
    scaling = statistics.median(b["rate"] / a["rate"] for a, b in zip(one, two, strict=True))
    warm = statistics.median(b["warm"] / a["warm"] for a, b in zip(one, two, strict=True))
    print(f"ratio local[2]/local[1]: {scaling:.2f} (after the first batch: {warm:.2f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
