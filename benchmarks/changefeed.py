"""End-to-end changefeed benchmark: private MariaDB -> puller -> Spark query -> file:// storage sink.

    .venv/bin/python benchmarks/changefeed.py [--rows 1000000] [--tables 10] [--txn-rows 1000] [--rounds 3]
                                              [--cluster]

Reports, in one run (generated input, same machine, same workload shape for each configuration):

* throughput: ``--rows`` rows over ``--tables`` tables (multi-row INSERT ... SELECT transactions of ``--txn-rows``),
  from the first upstream commit until the sink's ``metadata`` checkpoint covers the last one, with Spark
  ``local[1]`` and ``local[2]`` (and the ratio local[2]/local[1]). The default is 1M rows, five times the
  200k floor: the query starts a micro-batch every flush-interval (2 s), so a run's end lands up to 2 s after
  its data is ready; on 200k rows (4-6 s runs) that alone moved the ratio by +-0.2 between runs. ``--rounds``
  alternates the two masters (local[1], local[2], local[1], ...) so neither always gets the colder JVM, and
  the median of each is reported. Two modes, because MariaDB and the puller run on the same 2 cores as Spark:

  - *live*: the workload is committed while the query runs; MariaDB (~4.5 CPU-s per 1M rows) and the puller
    share the cores, which local[1] leaves them one of and local[2] takes back;
  - *catch-up*: the same workload committed and captured while the changefeed is stopped, then the query
    restarted in the warm session and timed until the checkpoint covers it: the Spark pipeline alone, which
    is what the local[2]/local[1] ratio is meant to show;
* latency at moderate load (``--latency-tps`` small transactions per second for ``--latency-seconds``, local[2]):
  upstream COMMIT returned -> checkpoint >= the transaction's commit-ts (found in the relay log by its GTID),
  p50/p99, with the trigger at flush-interval (2 s, TiCDC's minimum); also to the upstream clock's TSO right
  after COMMIT, an upper bound that adds the binlog's whole-second time resolution;
* the CPU an idle changefeed costs (``--idle-seconds``, 0 skips it), in cores;
* peak RSS of the whole process tree (this Python driver + Spark JVM + Python workers);
* with ``--cluster``: the throughput on a Spark standalone cluster started for the run (a master and two
  workers of one core each, ``sparkcdc.devtools.spark_cluster``) instead of local masters: the query with one
  executor core (``spark.cores.max=1``: one worker) and with two (both workers), and the ratio 2 workers / 1.

The puller runs as a thread of this process, as in ``cdc server``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkcdc.capture import Puller, PullerConfig, RelayLog
from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.devtools.spark_cluster import SparkCluster
from sparkcdc.model import tso
from sparkcdc.pipeline.progress import read_progress
from sparkcdc.pipeline.query import build_session, start_query, stop_between_batches
from sparkcdc.pipeline.spec import FeedSpec

# The workload's tables (``Bench.create_tables``); a benchmark with a database downstream creates them there too.
# what a catch-up's CPU figure leaves out: the upstream database and the private Kafka broker
CATCH_UP_SKIP = ("mariadbd", "tansu")
TABLE_COLUMNS = "id BIGINT PRIMARY KEY, a INT, b VARCHAR(64), c DECIMAL(12,2), d DATETIME"


def _tree_stats(root: int) -> list[tuple[int, str, list[str]]]:
    """(pid, command name, /proc stat fields after the name) of ``root`` and all its descendants."""
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[str, list[str]]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                head, tail = f.read().rsplit(")", 1)
            fields = tail.split()
            children.setdefault(int(fields[1]), []).append(int(d))
        except (OSError, IndexError, ValueError):
            continue
        stats[int(d)] = (head.split("(", 1)[-1], fields)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        if p in stats:
            out.append((p, *stats[p]))
        todo.extend(children.get(p, []))
    return out


def tree_cpu_seconds(root: int, skip: tuple[str, ...] = ("mariadbd",)) -> float:
    """CPU seconds (user + system) used so far by ``root`` and its descendants, except processes named in
    ``skip``."""
    tick = os.sysconf("SC_CLK_TCK")
    return sum((int(f[11]) + int(f[12])) / tick for _pid, name, f in _tree_stats(root) if name not in skip)


def _tree_rss(root: int, exclude: int, skip: tuple[str, ...] = ()) -> dict[int, tuple[str, int]]:
    """(what the process is, resident bytes) of ``root`` and its descendants by pid, without ``exclude`` and
    ``skip``; a Python process is told by the module it runs (``-m pyspark.daemon``: forked workers say so too)."""
    page = os.sysconf("SC_PAGE_SIZE")
    return {pid: (_what(pid, name), int(f[21]) * page) for pid, name, f in _tree_stats(root)
            if pid != exclude and name not in skip}  # fmt: skip


def _what(pid: int, name: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return name
    if name.startswith("python") and b"-m" in args[:-1]:
        return f"{name}:{args[args.index(b'-m') + 1].decode(errors='replace').rsplit('.', 1)[-1]}"
    return name


def _pss(pid: int) -> int:
    """Proportional set size: the process's resident bytes with each page shared by n processes counted 1/n (a
    daemon's forked workers share most of its pages; RSS counts them in each)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # exited meanwhile
        pass
    return 0


def _sample_rss(root: int, peak: Any, stop: Any, skip: tuple[str, ...], where: Any, pss: Any) -> None:
    top: dict[int, tuple[str, int]] = {}
    while not stop.is_set():
        sample = _tree_rss(root, os.getpid(), skip)
        total = sum(rss for _name, rss in sample.values())
        if total > peak.value:
            peak.value, top = total, sample
            pss.value = sum(_pss(pid) for pid in sample)
        stop.wait(0.2)
    where.put(sorted(top.values(), key=lambda p: -p[1]))


class RssSampler:
    """Peak resident memory of this process and all its descendants (from /proc), sampled every 0.2 s by a
    separate process: a thread here would take the GIL from the puller thread it measures beside. Processes named
    in ``skip`` (e.g. ``mariadbd``, the upstream) are left out."""

    def __init__(self, skip: tuple[str, ...] = ()) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.peak = ctx.Value("q", 0)
        self.stop = ctx.Event()
        self.where = ctx.Queue()
        self.pss = ctx.Value("q", 0)  # the tree's proportional set size at the RSS peak
        self.process = ctx.Process(target=_sample_rss, args=(os.getpid(), self.peak, self.stop, skip, self.where,
                                                             self.pss), daemon=True)  # fmt: skip
        self.process.start()
        self.at_peak: list[tuple[str, int]] = []  # (command name, resident bytes) per process at the peak

    def close(self) -> int:
        self.stop.set()
        self.at_peak = self.where.get(timeout=10)
        self.process.join(10)
        return int(self.peak.value)


# Given a changefeed's spec and its sink directory, a function returning the changefeed's checkpoint (0 before the
# first commit): where that is kept depends on the sink.
CheckpointReader = Callable[[FeedSpec, Path], Callable[[], int]]


def metadata_checkpoint(spec: FeedSpec, sink: Path) -> Callable[[], int]:
    """The storage sink's checkpoint: ``checkpoint-ts`` in ``<sink>/metadata``."""
    path = sink / "metadata"

    def read() -> int:
        try:
            return int(json.loads(path.read_bytes())["checkpoint-ts"])
        except (OSError, ValueError, KeyError):
            return 0

    return read


def progress_checkpoint(spec: FeedSpec, _sink: Path) -> Callable[[], int]:
    """Any sink's checkpoint as the pipeline records it: ``checkpoint_ts`` in the spec's ``progress.json``."""

    def read() -> int:
        progress = read_progress(spec.progress_path)
        return 0 if progress is None else progress.checkpoint_ts

    return read


class CheckpointLog:
    """Polls a checkpoint reader every 20 ms and keeps (wall time, checkpoint) at each change."""

    def __init__(self, read: Callable[[], int]) -> None:
        self.read = read
        self.points: list[tuple[float, int]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def current(self) -> int:
        return self.read()

    def _run(self) -> None:
        last = -1
        while not self.stop.is_set():
            ts = self.current()
            if ts != last:
                self.points.append((time.time(), ts))
                last = ts
            self.stop.wait(0.02)

    def wait(self, target: int, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        while self.current() < target:
            if time.monotonic() > deadline:
                raise RuntimeError(f"checkpoint did not reach {target} in {timeout}s")
            time.sleep(0.02)
        return time.time()

    def covered_at(self, ts: int) -> float | None:
        for when, ckpt in self.points:
            if ckpt >= ts:
                return when
        return None

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


class Bench:
    def __init__(self, work: Path, args: argparse.Namespace) -> None:
        self.work = work
        self.args = args
        self.catch_up_cpu = 0.0  # CPU seconds of the last catch-up (this process tree without CATCH_UP_SKIP)
        self.db = MariaDB(work / "mariadb").start()
        import pymysql  # type: ignore[import-untyped]

        self.conn = pymysql.connect(**self.db.connect_kwargs("root", autocommit=True))
        self.capture = work / "capture"
        kwargs: dict[str, Any] = {"host": "127.0.0.1", "port": self.db.port, "user": "cdc", "password": "cdcpw"}
        self.puller = Puller(PullerConfig(data_dir=str(self.capture), heartbeat_s=0.5, **kwargs))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.puller.run, args=(self.stop,), daemon=True)
        self.thread.start()
        while not (self.capture / "relay" / "index.db").exists() or not self._resolved():
            time.sleep(0.05)

    def _resolved(self) -> int:
        relay = RelayLog(self.capture)
        try:
            return relay.resolved_ts()
        except Exception:
            return 0
        finally:
            relay.close()

    def sql(self, *statements: str) -> None:
        with self.conn.cursor() as cur:
            for s in statements:
                cur.execute(s)

    def now_tso(self) -> int:
        with self.conn.cursor() as cur:
            cur.execute("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS UNSIGNED)")
            return tso.compose(int(cur.fetchone()[0]) + 1)

    def feed_spec(self, name: str, db: str, sink_uri: str | None = None,
                  config: dict[str, Any] | None = None) -> tuple[FeedSpec, Path]:  # fmt: skip
        """A changefeed spec on ``db``.* starting now, and its sink directory; the sink is ``sink_uri`` if given,
        else the storage sink (canal-json files) in that directory; ``config`` adds changefeed TOML tables."""
        sink = self.work / f"sink-{name}"
        start = self.now_tso()
        while self._resolved() < start:
            time.sleep(0.05)
        spec = FeedSpec(changefeed=f"bench/{name}", capture_dir=str(self.capture), state_dir=str(self.work / name),
                        sink_uri=sink_uri or f"file://{sink}?protocol=canal-json&worker-count={self.args.tables}"
                        "&flush-interval=2s&file-size=67108864",
                        config={"filter": {"rules": [f"{db}.*"]}, **(config or {})}, start_ts=start,
                        sink_start_ts=start)  # fmt: skip
        return spec, sink

    def run_feed(self, spark: Any, name: str, db: str, fn: Any, sink_uri: str | None = None,
                 checkpoint: CheckpointReader = metadata_checkpoint) -> Any:  # fmt: skip
        """Start a changefeed query on ``db``.*, wait until it runs, call ``fn(log)``, stop it. The sink is
        ``sink_uri`` (default: the storage sink), its checkpoint read by ``checkpoint``."""
        spec, sink = self.feed_spec(name, db, sink_uri)
        query = start_query(spark, spec)
        log = CheckpointLog(checkpoint(spec, sink))
        try:
            log.wait(spec.start_ts + 1, 300)  # first batch done: the query is warm
            return fn(log)
        finally:
            stop_between_batches(query, spec)
            log.close()

    def create_tables(self, db: str) -> None:
        self.sql(f"CREATE DATABASE {db}")
        for i in range(self.args.tables):
            self.sql(f"CREATE TABLE {db}.t{i} ({TABLE_COLUMNS})")

    def load(self, db: str) -> int:
        """Commit the workload into ``db``; returns a TSO above its last commit."""
        per = self.args.txn_rows
        for k in range(self.args.rows // per):
            self.sql(f"INSERT INTO {db}.t{k % self.args.tables} SELECT {k * per} + seq, seq % 1000, CONCAT('row-', "
                     f"seq, '-', {k}), seq / 7, '2026-01-01 00:00:00' FROM {db}.seq_1_to_{per}")  # fmt: skip
        return self.now_tso()

    def live(self, spark: Any, db: str) -> float:
        """Rows/s from the first upstream commit until the checkpoint covers the last, the query running."""
        self.create_tables(db)

        def run(log: CheckpointLog) -> float:
            t0 = time.time()
            done = log.wait(self.load(db), 900)
            return float(self.args.rows / (done - t0))

        result: float = self.run_feed(spark, db, db, run)
        return result

    def catch_up(
        self, spark: Any, db: str, sink_uri: str | None = None, checkpoint: CheckpointReader = metadata_checkpoint,
        config: dict[str, Any] | None = None,
    ) -> float:
        """Rows/s of the same workload as a backlog: committed and in the relay log while the changefeed is
        stopped, then the query restarted (warm session) and timed until the checkpoint covers it. The sink is
        ``sink_uri`` (default: the storage sink), its checkpoint read by ``checkpoint``; ``config`` adds changefeed
        TOML tables."""
        self.create_tables(db)
        spec, sink = self.feed_spec(db, db, sink_uri, config)
        log = CheckpointLog(checkpoint(spec, sink))
        try:
            query = start_query(spark, spec)
            log.wait(spec.start_ts + 1, 300)
            stop_between_batches(query, spec)
            end = self.load(db)
            while self._resolved() < end:
                time.sleep(0.05)
            t0, cpu0 = time.time(), tree_cpu_seconds(os.getpid(), CATCH_UP_SKIP)
            query = start_query(spark, spec)
            try:
                done = log.wait(end, 900)
                self.catch_up_cpu = tree_cpu_seconds(os.getpid(), CATCH_UP_SKIP) - cpu0
            finally:
                stop_between_batches(query, spec)
            return float(self.args.rows / (done - t0))
        finally:
            log.close()

    def throughput(self, master: str, round_no: int, conf: dict[str, str] | None = None) -> tuple[float, float]:
        """(live, catch-up) rows/s with ``master`` (and session settings ``conf``), in one session."""
        name = f"r{round_no}_" + "".join(ch for ch in master + "".join((conf or {}).values()) if ch.isalnum())[-24:]
        spark = build_session(master, "sparkcdc-bench", extra=conf)
        try:
            return self.live(spark, f"live_{name}"), self.catch_up(spark, f"backlog_{name}")
        finally:
            spark.stop()

    def last_gtid(self) -> str:
        with self.conn.cursor() as cur:
            cur.execute("SELECT @@last_gtid")
            return str(cur.fetchone()[0])

    def latency(self, master: str) -> tuple[tuple[float, float], tuple[float, float], int]:
        """p50/p99 from COMMIT returning until the checkpoint covers (a) the transaction's own commit-ts, looked
        up in the relay log by its GTID, and (b) the upstream clock read right after COMMIT (an upper bound
        that adds up to 1 s, because binlog commit times have whole-second resolution)."""
        db = "lat"
        self.create_tables(db)
        spark = build_session(master, "sparkcdc-bench")
        try:

            def load(log: CheckpointLog) -> tuple[tuple[float, float], tuple[float, float], int]:
                commits: list[tuple[float, str, int]] = []
                interval = 1.0 / self.args.latency_tps
                next_at = time.monotonic()
                k = 0
                stop_at = time.monotonic() + self.args.latency_seconds
                while time.monotonic() < stop_at:
                    t = k % self.args.tables
                    self.sql(f"INSERT INTO {db}.t{t} SELECT {k * 10} + seq, seq, 'lat', 1.5, NOW() "
                             f"FROM {db}.seq_1_to_10")
                    committed_at = time.time()
                    commits.append((committed_at, self.last_gtid(), self.now_tso()))
                    k += 1
                    next_at += interval
                    time.sleep(max(0.0, next_at - time.monotonic()))
                log.wait(commits[-1][2], 300)
                time.sleep(0.1)
                relay = RelayLog(self.capture)
                commit_ts = {r.gtid: r.commit_ts for r in relay.transactions()}
                relay.close()

                def pct(ts_of: Any) -> tuple[float, float]:
                    lat = sorted((log.covered_at(ts_of(c)) or time.time()) - c[0] for c in commits)
                    return statistics.median(lat), lat[min(len(lat) - 1, int(len(lat) * 0.99))]

                exact = pct(lambda c: commit_ts[c[1]])
                bound = pct(lambda c: c[2])
                return exact, bound, len(commits)

            result: tuple[tuple[float, float], tuple[float, float], int] = self.run_feed(spark, db, db, load)
            return result
        finally:
            spark.stop()

    def idle(self, master: str) -> float:
        """Cores used by an idle changefeed (nothing to replicate; a micro-batch every flush-interval advances the
        checkpoint): driver with its puller thread, JVM and Python workers, after a minute of warm-up."""
        db = "idle"
        self.create_tables(db)
        spark = build_session(master, "sparkcdc-bench")
        try:

            def measure(log: CheckpointLog) -> float:
                time.sleep(self.args.idle_warmup)
                before, t0 = tree_cpu_seconds(os.getpid()), time.monotonic()
                time.sleep(self.args.idle_seconds)
                return (tree_cpu_seconds(os.getpid()) - before) / (time.monotonic() - t0)

            result: float = self.run_feed(spark, db, db, measure)
            return result
        finally:
            spark.stop()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        self.puller.close()
        self.conn.close()
        self.db.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tables", type=int, default=10)
    ap.add_argument("--txn-rows", type=int, default=1000)
    ap.add_argument("--latency-tps", type=float, default=20.0)
    ap.add_argument("--latency-seconds", type=float, default=20.0)
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument("--idle-warmup", type=float, default=60.0)
    ap.add_argument("--idle-seconds", type=float, default=30.0)
    ap.add_argument("--cluster", action="store_true", help="compare 1 and 2 workers of a standalone cluster")
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    rss = RssSampler()
    with tempfile.TemporaryDirectory(prefix="sparkcdc-bench-") as tmp:
        bench = Bench(Path(tmp), args)
        cluster = SparkCluster(Path(tmp) / "spark", workers=2, cores=1).start() if args.cluster else None
        try:
            if cluster is not None:
                one_exec = {"spark.cores.max": "1", "spark.executor.memory": "1g"}
                two_exec = {"spark.cores.max": "2", "spark.executor.memory": "1g"}
                masters = {"1 worker": (cluster.url, one_exec), "2 workers": (cluster.url, two_exec)}
            else:
                masters = {"local[1]": ("local[1]", {}), "local[2]": ("local[2]", {})}
            runs: dict[str, list[tuple[float, float]]] = {label: [] for label in masters}
            for r in range(args.rounds):
                for label, results in runs.items():
                    master, conf = masters[label]
                    results.append(bench.throughput(master, r, conf))
                    print(f"round {r + 1} {label}: live {results[-1][0]:,.0f} rows/s, catch-up "
                          f"{results[-1][1]:,.0f} rows/s", flush=True)  # fmt: skip
            print(f"{args.rows} rows, {args.tables} tables, {args.txn_rows} rows/txn; median of {args.rounds} rounds")
            modes = ("live (upstream loading on the same cores)", "catch-up (backlog, upstream idle)")
            low, high = runs
            for i, what in enumerate(modes):
                one, two = (statistics.median(v[i] for v in results) for results in runs.values())
                print(f"{what}: {low} {one:,.0f} rows/s, {high} {two:,.0f} rows/s, ratio {high}/{low} "
                      f"{two / one:.2f}", flush=True)  # fmt: skip
            if cluster is None and not args.skip_latency:
                (p50, p99), (b50, b99), count = bench.latency("local[2]")
                print(f"latency commit -> checkpoint covers the txn's commit-ts (local[2], flush-interval 2s, "
                      f"{args.latency_tps:g} txn/s, {count} txns): p50 {p50:.2f}s p99 {p99:.2f}s; "
                      f"to the upstream clock after COMMIT (upper bound): p50 {b50:.2f}s p99 {b99:.2f}s",
                      flush=True)  # fmt: skip
            if cluster is None and args.idle_seconds > 0:
                print(f"idle changefeed (local[2], flush-interval 2s, {args.idle_seconds:g}s after "
                      f"{args.idle_warmup:g}s of warm-up): {bench.idle('local[2]'):.2f} cores", flush=True)  # fmt: skip
        finally:
            bench.close()
            if cluster is not None:
                cluster.stop()
    print(f"peak RSS (driver + JVM + Python workers): {rss.close() / 2**20:,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
