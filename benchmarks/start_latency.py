"""Start latency of ``cdc server``: how soon a changefeed replicates after create, after kill -9 + restart, and
after the owner of a two-server cluster is killed (issue 26, item 4).

    .venv/bin/python benchmarks/start_latency.py [--runs 3] [--uptime 30] [--only create,fresh,restart,failover]
                                                 [--keep DIR]

Each scenario runs ``--runs`` times on servers private to the run: an upstream MariaDB, a downstream MariaDB (the
changefeed's MySQL sink: it batches every 0.5 s, the sink meant for low latency), etcd for the cluster, and real
``cdc server`` processes (``--spark-master local[2]``). A figure is the time until the changefeed's checkpoint, as
``GET /api/v2/changefeeds/{id}`` reports it, reaches the commit-ts of a reference transaction (found by its GTID
in the server's relay log), so that transaction and every one before it are durable downstream. The median of the
runs is printed next to its target:

* ``create``: a server up ``--uptime`` seconds; one row is inserted the moment ``create`` returns; from sending
  ``create`` until the checkpoint passes that row's transaction. Target <= 3 s.
* ``fresh``: the same, created the moment the server's Open API answers (no target; it shows what the Spark
  session's start still costs). Also printed: when the query started after create (the server log's line).
* ``restart``: a changefeed running under a workload of 10 one-row transactions per second; ``kill -9`` of the
  server process alone (its Spark JVM then exits by itself, as after a crash), restarted at once; from the kill
  until the checkpoint passes the last transaction committed before the kill. Target <= 15 s.
* ``failover``: two servers on one etcd (default ``--session-ttl`` 10 s), the changefeed on the owner, the same
  workload; ``kill -9`` of the owner; from the kill until the survivor's checkpoint passes the last transaction
  committed before the kill. Target <= 15 s.

``--keep DIR`` keeps every run's server logs there. Timing needs a quiet machine: the load average at the start
and end is printed with the figures, and so are the CPU seconds the server's process tree (its JVM and Python
workers included) used meanwhile, which depend much less on the load.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pymysql  # type: ignore[import-untyped]

from sparkcdc.devtools.etcd import EtcdServer
from sparkcdc.devtools.mariadb import CDC_PASSWORD, CDC_USER, MariaDB
from sparkcdc.devtools.ports import free_port

CDC = str(Path(sys.executable).parent / "cdc")
TARGETS = {"create": 3.0, "restart": 15.0, "failover": 15.0}
TABLE = "id BIGINT PRIMARY KEY, v VARCHAR(32), at DECIMAL(16,6)"


class Upstream:
    """The upstream and downstream databases and the workload's table on both."""

    def __init__(self, up: MariaDB, down: MariaDB) -> None:
        self.up, self.down = up, down
        self.uri = f"mysql://{CDC_USER}:{CDC_PASSWORD}@127.0.0.1:{up.port}"
        self.sink_uri = f"mysql://root@127.0.0.1:{down.port}/"
        self.next_id = 1
        self._lock = threading.Lock()

    def reset(self, db: str) -> None:
        for server in (self.up, self.down):
            conn = pymysql.connect(**server.connect_kwargs(autocommit=True))
            with conn.cursor() as c:
                c.execute(f"DROP DATABASE IF EXISTS {db}")
                c.execute(f"CREATE DATABASE {db}")
                c.execute(f"CREATE TABLE {db}.t ({TABLE})")
            conn.close()

    def insert(self, db: str) -> str:
        """Commit one row; returns its transaction's GTID."""
        with self._lock:
            i = self.next_id
            self.next_id += 1
        conn = pymysql.connect(**self.up.connect_kwargs(autocommit=True))
        try:
            with conn.cursor() as c:
                c.execute(f"INSERT INTO {db}.t VALUES (%s, 'row', UNIX_TIMESTAMP(NOW(6)))", (i,))
                c.execute("SELECT @@last_gtid")
                return str(c.fetchone()[0])
        finally:
            conn.close()

    def last_gtid(self) -> str:
        """The GTID of the upstream's last committed transaction (one GTID domain)."""
        conn = pymysql.connect(**self.up.connect_kwargs())
        try:
            with conn.cursor() as c:
                c.execute("SELECT @@gtid_binlog_pos")
                return str(c.fetchone()[0])
        finally:
            conn.close()


class Workload:
    """One-row transactions at ``tps`` per second on a thread, until ``stop``."""

    def __init__(self, upstream: Upstream, db: str, tps: float = 10.0) -> None:
        self.upstream, self.db, self.tps = upstream, db, tps
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Workload:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join(30)

    def _run(self) -> None:
        while not self.done.wait(1 / self.tps):
            self.upstream.insert(self.db)


class Server:
    """One ``cdc server`` process on a free port with its own data dir and log."""

    def __init__(self, root: Path, upstream: Upstream, args: tuple[str, ...] = ()) -> None:
        self.root, self.upstream, self.args = root, upstream, args
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = root / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.sessions: set[int] = set()  # the sessions of the Spark JVMs it started

    def start(self) -> float:
        """Start the process; returns when its Open API answers (the time.monotonic() then)."""
        out = open(self.root / "server.out", "ab")  # noqa: SIM115 - owned by the child process
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
               "PYSPARK_DRIVER_PYTHON": sys.executable}  # fmt: skip
        self.proc = subprocess.Popen(
            [CDC, "server", "--addr", f"127.0.0.1:{self.port}", "--data-dir", str(self.root / "data"),
             "--upstream", self.upstream.uri, "--spark-master", "local[2]", "--log-file", str(self.log), *self.args],
            stdout=out, stderr=out, env=env, start_new_session=True,
        )  # fmt: skip
        out.close()
        wait(lambda: self._healthy(), 180, f"{self.url} healthy")
        return time.monotonic()

    def _healthy(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"cdc server exited with {self.proc.returncode}; see {self.log}")
        try:
            return httpx.get(self.url + "/api/v2/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self) -> None:
        """kill -9 of the server process alone, as an operator or the OOM killer would."""
        assert self.proc is not None
        self.sessions |= _child_sessions(self.proc.pid)
        self.proc.kill()
        self.proc.wait(30)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.sessions |= _child_sessions(self.proc.pid)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
            self.proc = None
        for pid in _session_members(self.sessions):  # a JVM that did not exit with its server
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def create(self, cf: str, db: str) -> None:
        body = {"changefeed_id": cf, "sink_uri": self.upstream.sink_uri,
                "replica_config": {"filter": {"rules": [f"{db}.*"]}}}  # fmt: skip
        r = httpx.post(self.url + "/api/v2/changefeeds", json=body, timeout=60)
        if r.status_code != 200:
            raise RuntimeError(f"create {cf}: {r.status_code} {r.text}")

    def checkpoint(self, cf: str) -> int:
        try:
            r = httpx.get(f"{self.url}/api/v2/changefeeds/{cf}", timeout=5)
        except httpx.HTTPError:
            return 0
        if r.status_code != 200:
            return 0
        doc = r.json()
        if doc.get("state") not in ("normal", "warning"):
            raise RuntimeError(f"changefeed {cf} is {doc.get('state')}: {doc.get('error')}")
        return int(doc["checkpoint_ts"])

    def commit_ts(self, gtid: str, timeout: float = 180) -> int:
        """The commit-ts this server's capture gave the transaction ``gtid`` (waits until it is captured)."""
        found: list[int] = []

        def captured() -> bool:
            index = self.root / "data" / "capture" / "relay" / "index.db"
            if not index.exists():
                return False
            conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=5)
            try:
                row = conn.execute("SELECT commit_ts FROM txn WHERE gtid = ?", (gtid,)).fetchone()
            except sqlite3.Error:
                row = None
            finally:
                conn.close()
            if row is not None:
                found.append(int(row[0]))
            return row is not None

        wait(captured, timeout, f"transaction {gtid} captured")
        return found[0]

    def capture_id(self) -> str:
        return str(httpx.get(self.url + "/api/v2/status", timeout=5).json()["id"])

    def log_time(self, pattern: str, after: float) -> float | None:
        """Wall time (time.time()) of the first log line matching ``pattern`` at or after ``after``."""
        if not self.log.exists():
            return None
        for line in self.log.read_text().splitlines():
            m = re.match(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]", line)
            if m and re.search(pattern, line):
                t = datetime.datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S").timestamp() + int(m[2]) / 1000
                if t >= after - 0.001:
                    return t
        return None


def wait(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        time.sleep(0.05)


def wait_checkpoint(servers: list[Server], cf: str, ts: int, timeout: float = 180) -> float:
    """Wait until any of ``servers`` reports ``cf``'s checkpoint at or past ``ts``; returns time.monotonic()."""
    wait(lambda: any(s.proc is not None and s.checkpoint(cf) >= ts for s in servers), timeout,
         f"checkpoint of {cf} past {ts}")  # fmt: skip
    return time.monotonic()


def _proc_stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _child_sessions(pid: int) -> set[int]:
    """Sessions of ``pid``'s children other than its own (Spark's JVM runs in a session of its own)."""
    own = _proc_stat(pid)
    out = set()
    for entry in os.listdir("/proc"):
        fields = _proc_stat(int(entry)) if entry.isdigit() else None
        if own and fields and int(fields[1]) == pid and fields[3] != own[3]:
            out.add(int(fields[3]))
    return out


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system, with those of waited-for children that exited) of ``root`` and its live
    descendants: the work a start did, which the machine's load does not change much, unlike its duration."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        fields = _proc_stat(int(entry)) if entry.isdigit() else None
        if fields:
            parents[int(entry)] = int(fields[1])
            cpu[int(entry)] = sum(int(f) for f in fields[11:15]) / tick
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


def _session_members(sessions: set[int]) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        fields = _proc_stat(int(entry)) if entry.isdigit() else None
        if fields and int(fields[3]) in sessions and fields[0] != "Z":
            out.append(int(entry))
    return out


# -- scenarios: each returns {figure name: seconds} -------------------------------------------------------------
def create_after(upstream: Upstream, root: Path, uptime: float) -> dict[str, float]:
    """A changefeed created ``uptime`` seconds after the server's process started (0: as soon as it answers)."""
    db = "bench_create"
    upstream.reset(db)
    server = Server(root, upstream)
    try:
        began = time.monotonic()
        server.start()
        time.sleep(max(0.0, began + uptime - time.monotonic()))
        assert server.proc is not None
        cpu = tree_cpu(server.proc.pid)
        wall, t0 = time.time(), time.monotonic()
        server.create("cf", db)
        gtid = upstream.insert(db)
        done = wait_checkpoint([server], "cf", server.commit_ts(gtid))
        out = {"first rows checkpointed": done - t0, "server CPU s meanwhile": tree_cpu(server.proc.pid) - cpu}
        started = server.log_time("changefeed=default/cf query started", wall)
        if started is not None:
            out["query started"] = started - wall
        return out
    finally:
        server.stop()


def restart(upstream: Upstream, root: Path) -> dict[str, float]:
    db = "bench_restart"
    upstream.reset(db)
    server = Server(root, upstream)
    try:
        server.start()
        server.create("cf", db)
        with Workload(upstream, db):
            wait_checkpoint([server], "cf", server.commit_ts(upstream.insert(db)))
            server.kill()
            t0 = time.monotonic()
            gone: list[float] = []
            watcher = threading.Thread(target=_wait_gone, args=(set(server.sessions), gone), daemon=True)
            watcher.start()
            at_kill = upstream.last_gtid()
            wall = time.time()
            up = server.start()
            done = wait_checkpoint([server], "cf", server.commit_ts(at_kill))
            assert server.proc is not None
            cpu = tree_cpu(server.proc.pid)
        watcher.join(120)
        out = {"resumed": done - t0, "old JVM gone": gone[0] - t0, "API up": up - t0, "server CPU s meanwhile": cpu}
        started = server.log_time("changefeed=default/cf query started", wall)
        if started is not None:
            out["query started"] = started - wall
        return out
    finally:
        server.stop()


def failover(upstream: Upstream, root: Path, etcd: EtcdServer) -> dict[str, float]:
    db = "bench_failover"
    upstream.reset(db)
    cluster = f"bench{int(time.time() * 1000)}"
    args = ("--pd", etcd.endpoint, "--cluster-id", cluster)
    first = Server(root / "a", upstream, args)
    second = Server(root / "b", upstream, args)
    try:
        first.start()
        wait(lambda: httpx.get(first.url + "/api/v2/status", timeout=5).json()["is_owner"], 60, "first owner")
        second.start()
        first.create("cf", db)
        owner_id = first.capture_id()
        wait(lambda: _runs_on(first, "cf") == owner_id, 60, "cf placed on the owner")
        with Workload(upstream, db):
            wait_checkpoint([first], "cf", first.commit_ts(upstream.insert(db)))
            assert second.proc is not None
            cpu = tree_cpu(second.proc.pid)
            first.kill()
            t0 = time.monotonic()
            at_kill = upstream.last_gtid()
            wall = time.time()
            done = wait_checkpoint([second], "cf", second.commit_ts(at_kill))
            cpu = tree_cpu(second.proc.pid) - cpu
        out = {"survivor's checkpoint moved": done - t0, "survivor CPU s meanwhile": cpu}
        owner = second.log_time("is now the owner", wall)
        if owner is not None:
            out["survivor is owner"] = owner - wall
        started = second.log_time("changefeed=default/cf query started", wall)
        if started is not None:
            out["query started"] = started - wall
        return out
    finally:
        first.stop()
        second.stop()


def _wait_gone(sessions: set[int], at: list[float]) -> None:
    """Append the time.monotonic() when the processes of ``sessions`` (a killed server's JVM) are gone."""
    wait(lambda: not _session_members(sessions), 120, "the killed server's JVM to exit")
    at.append(time.monotonic())


def _runs_on(server: Server, cf: str) -> str | None:
    for item in httpx.get(server.url + "/api/v2/processors", timeout=5).json().get("items", []):
        if item["changefeed_id"] == cf:
            return str(item["capture_id"])
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--uptime", type=float, default=30.0, help="seconds the server is up before create")
    parser.add_argument("--only", default="create,fresh,restart,failover")
    parser.add_argument("--keep", type=Path, default=None, help="keep the servers' logs under this directory")
    args = parser.parse_args()
    only = set(args.only.split(","))
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="start-latency-") as tmp:
        work = args.keep or Path(tmp)
        up = MariaDB(Path(tmp) / "upstream").start()
        down = MariaDB(Path(tmp) / "downstream", server_id=2).start()
        etcd = EtcdServer(Path(tmp) / "etcd").start() if "failover" in only else None
        upstream = Upstream(up, down)
        results: dict[str, list[dict[str, float]]] = {}
        try:
            for run in range(args.runs):
                scenarios: dict[str, Callable[[Path], dict[str, float]]] = {
                    "create": lambda r: create_after(upstream, r, args.uptime),
                    "fresh": lambda r: create_after(upstream, r, 0),
                    "restart": lambda r: restart(upstream, r),
                    "failover": lambda r: failover(upstream, r, etcd) if etcd else {},
                }
                for name, scenario in scenarios.items():
                    if name in only:
                        figures = scenario(work / f"{name}-{run}")
                        results.setdefault(name, []).append(figures)
                        shown = ", ".join(f"{k} {v:.1f}s" for k, v in figures.items())
                        print(f"run {run + 1} {name}: {shown}", flush=True)
        finally:
            if etcd is not None:
                etcd.stop()
            down.stop()
            up.stop()
    print(f"\nmedians of {args.runs} runs (load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end)")
    headline = {"create": "first rows checkpointed", "fresh": "first rows checkpointed", "restart": "resumed",
                "failover": "survivor's checkpoint moved"}  # fmt: skip
    for name, runs in results.items():
        for key in runs[0]:
            values = [r[key] for r in runs if key in r]
            median = statistics.median(values)
            target = TARGETS.get(name) if key == headline[name] else None
            verdict = f"  target <= {target:.0f} s: {'met' if median <= target else 'MISSED'}" if target else ""
            spread = f"{min(values):.1f}-{max(values):.1f}"
            print(f"{name:9} {key:30} {median:6.1f} s  (runs {spread}){verdict}")


if __name__ == "__main__":
    main()
