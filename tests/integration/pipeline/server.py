"""Test helpers driving a real ``cdc server`` (Spark runner) and a mixed upstream workload."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import httpx

from sparkcdc.devtools.mariadb import CDC_PASSWORD, CDC_USER
from sparkcdc.model import tso
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.replay import text
from tests.support import CDC, ThreadWatch, free_port, server_env


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name: state, ppid, pgrp, session, ..."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def child_sessions(pid: int) -> set[int]:
    """Sessions of ``pid``'s children other than its own: Spark's JVM runs in a session of its own."""
    own = _proc_stat(pid)
    out: set[int] = set()
    for entry in os.listdir("/proc"):
        fields = _proc_stat(int(entry)) if entry.isdigit() else None
        if own is not None and fields is not None and int(fields[1]) == pid and fields[3] != own[3]:
            out.add(int(fields[3]))
    return out


def session_members(sessions: set[int]) -> list[int]:
    """Live processes (zombies left out: the container's init may reap them late) of ``sessions``."""
    out = []
    for entry in os.listdir("/proc"):
        fields = _proc_stat(int(entry)) if entry.isdigit() else None
        if fields is not None and int(fields[3]) in sessions and fields[0] != "Z":
            out.append(int(entry))
    return out


class SparkServer:
    """``cdc server`` with the Spark runner on a free port, a private data dir, and the given upstream;
    ``args`` are extra ``cdc server`` options."""

    def __init__(self, root: Path, upstream_port: int, spark_master: str = "local[2]",
                 env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> None:
        self.root = root
        self.args = args
        self.data_dir = root / "data"
        self.upstream = f"mysql://{CDC_USER}:{CDC_PASSWORD}@127.0.0.1:{upstream_port}"
        self.spark_master = spark_master
        self.env = server_env(env)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 180) -> SparkServer:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        log = open(self.root / "server.out", "ab")  # noqa: SIM115 - owned by the child process
        self.proc = subprocess.Popen(
            [CDC, "server", "--addr", f"127.0.0.1:{self.port}", "--data-dir", str(self.data_dir), "--upstream",
             self.upstream, "--spark-master", self.spark_master, "--status-interval", "0.2", "--log-file",
             str(self.root / "server.log"), *self.args],
            stdout=log, stderr=log, env=self.env, start_new_session=True,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"cdc server exited with {self.proc.returncode}: {self.tail()}")
            try:
                if httpx.get(self.url + "/api/v2/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise AssertionError(f"cdc server not healthy after {timeout}s: {self.tail()}")

    def tail(self) -> str:
        p = self.root / "server.log"
        return p.read_text()[-3000:] if p.exists() else ""

    def kill(self) -> None:
        """kill -9 the server and everything it started (Spark's JVM, in a session of its own, and the Python
        workers the JVM started)."""
        if self.proc is None:
            return
        spark = child_sessions(self.proc.pid)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for pid in session_members(spark):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(30)
        self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CDC, "cli", "changefeed", *args, "--server", self.url], capture_output=True,
                              text=True, env=self.env, timeout=120)  # fmt: skip

    def changefeed(self, cf: str) -> dict[str, Any]:
        r = httpx.get(f"{self.url}/api/v2/changefeeds/{cf}", timeout=10)
        r.raise_for_status()
        doc: dict[str, Any] = r.json()
        return doc

    def wait_checkpoint(self, cf: str, target: int, timeout: float = 240) -> dict[str, Any]:
        """Wait until ``cf``'s checkpoint reaches ``target``, failing at once if the changefeed leaves normal."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.changefeed(cf)
            assert state["state"] == "normal", (state, self.tail())
            if state["checkpoint_ts"] >= target:
                return state
            assert time.monotonic() < deadline, f"checkpoint {state['checkpoint_ts']} < {target}: {self.tail()}"
            time.sleep(0.3)

    @property
    def log(self) -> Path:
        """The server's log file (every start of it appends)."""
        return self.root / "server.log"

    def remove(self, cf: str) -> None:
        """Remove changefeed ``cf`` (Open API); its query stops between micro-batches before this returns."""
        r = httpx.delete(f"{self.url}/api/v2/changefeeds/{cf}", timeout=300)
        assert r.status_code == 200, r.text

    def remove_all(self) -> None:
        """Remove every changefeed, whatever its state: a shared server's next test starts without any."""
        r = httpx.get(f"{self.url}/api/v2/changefeeds", params={"state": "all"}, timeout=30)
        r.raise_for_status()
        for item in r.json()["items"]:
            self.remove(item["id"])


class StatusWatch(ThreadWatch):
    """Polls a changefeed's ``/status`` through the Open API in a thread and records what it saw. The server may
    be down or restarting meanwhile (on another port): those polls are skipped."""

    def __init__(self, server: SparkServer, changefeed: str, interval: float = 0.1) -> None:
        super().__init__()
        self.server = server
        self.changefeed = changefeed
        self.interval = interval
        self.checkpoints: list[int] = []  # every distinct checkpoint in the order seen
        self.seen: list[tuple[float, dict[str, Any]]] = []  # (monotonic time, status) of every answered poll
        self.polls = 0

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            try:
                r = httpx.get(f"{self.server.url}/api/v2/changefeeds/{self.changefeed}/status", timeout=5)
                r.raise_for_status()
            except httpx.HTTPError:
                continue
            doc: dict[str, Any] = r.json()
            self.seen.append((time.monotonic(), doc))
            ts = int(doc["checkpoint_ts"])
            if not self.checkpoints or self.checkpoints[-1] != ts:
                self.checkpoints.append(ts)
            self.polls += 1

    @property
    def checkpoint(self) -> int:
        return self.checkpoints[-1] if self.checkpoints else 0

    def wait(self, what: str, done: Callable[[], bool], timeout: float, every: float = 0.05) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert self.alive, f"status watch died: {self.error!r}"
            assert time.monotonic() < deadline, f"{what} not within {timeout}s: {self.seen[-1:]}"
            self.stop.wait(every)

    def wait_past(self, ts: int, timeout: float = 180) -> None:
        self.wait(f"checkpoint past {ts}", lambda: self.checkpoint > ts, timeout)

    def wait_polls(self, n: int) -> None:
        target = self.polls + n
        self.wait(f"{n} polls", lambda: self.polls >= target, 60)


class CheckpointWatch:
    """Reads ``metadata`` of a sink root and records every distinct checkpoint seen (must never decrease)."""

    def __init__(self, storage: ExternalStorage) -> None:
        self.storage = storage
        self.seen: list[int] = []

    def poll(self) -> int:
        raw = self.storage.read("metadata")
        if raw is None:
            return 0
        ts = int(json.loads(raw)["checkpoint-ts"])
        if not self.seen or self.seen[-1] != ts:
            self.seen.append(ts)
        return ts

    def wait(self, target: int, timeout: float, check: Callable[[], None] = lambda: None) -> int:
        deadline = time.monotonic() + timeout
        while True:
            check()
            ts = self.poll()
            if ts >= target:
                return ts
            if time.monotonic() > deadline:
                raise AssertionError(f"checkpoint {ts} did not reach {target} in {timeout}s")
            time.sleep(0.2)

    @property
    def monotonic(self) -> bool:
        return self.seen == sorted(self.seen)


class FileTracker:
    """Records size and hash of every data file when first seen non-empty; detects overwrites."""

    def __init__(self, storage: ExternalStorage) -> None:
        self.storage = storage
        self.known: dict[str, tuple[int, str]] = {}
        self.overwritten: list[str] = []

    def poll(self) -> None:
        for path in self.storage.list(""):
            if "/CDC" not in path or "/meta/" in path or ".tmp." in path:
                continue
            data = self.storage.read(path)
            if not data:
                continue
            sig = (len(data), hashlib.sha256(data).hexdigest())
            old = self.known.setdefault(path, sig)
            if old != sig:
                self.overwritten.append(path)
                self.known[path] = sig


def clock_tso() -> int:
    """Now as a TSO. The upstream runs on this host's clock: a checkpoint past it was committed after now."""
    return tso.compose(time.time_ns() // 1_000_000)


def now_tso(db: FreshDatabase) -> int:
    """The upstream's clock as a TSO, 1 ms ahead: every transaction committed before is below it."""
    return server_now_tso(db.query)


def server_now_tso(query: Callable[[str], list[Any]]) -> int:
    """A MySQL server's clock as a TSO, 1 ms ahead, read with ``query`` (SQL -> rows)."""
    ms = query("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS UNSIGNED)")[0][0]
    return tso.compose(int(ms) + 1)


class Workload:
    """A seeded mixed workload over ``tables`` tables: multi-row inserts, updates (some key-changing),
    deletes, multi-table transactions and, every ``ddl_every`` steps, ADD COLUMN on one table."""

    def __init__(self, db: FreshDatabase, tables: int = 4, seed: int = 7, ddl_every: int = 40) -> None:
        self.db = db
        self.names = [f"w{i}" for i in range(tables)]
        self.rng = random.Random(seed)
        self.next_id = {n: 1 for n in self.names}
        self.ids: dict[str, list[int]] = {n: [] for n in self.names}
        self.added = 0
        self.ddl_every = ddl_every

    def create(self) -> None:
        for n in self.names:
            self.db.execute(f"CREATE TABLE {n} (id INT PRIMARY KEY, v VARCHAR(40), n BIGINT, d DECIMAL(12,3))")

    def step(self, i: int) -> None:
        rng = self.rng
        t = rng.choice(self.names)
        kind = rng.random()
        if i and i % self.ddl_every == 0:
            self.added += 1
            self.db.execute(f"ALTER TABLE {t} ADD COLUMN c{self.added} INT NOT NULL DEFAULT {self.added}")
        elif kind < 0.5 or len(self.ids[t]) < 3:
            rows = []
            for _ in range(rng.randint(1, 20)):
                k = self.next_id[t]
                self.next_id[t] += 1
                self.ids[t].append(k)
                rows.append(f"({k}, 'v{k}-{rng.randint(0, 999)}', {rng.randint(-10**12, 10**12)}, "
                            f"{rng.randint(-10**6, 10**6) / 1000:.3f})")  # fmt: skip
            self.db.execute(f"INSERT INTO {t} (id, v, n, d) VALUES {', '.join(rows)}")
        elif kind < 0.75:
            k = rng.choice(self.ids[t])
            self.db.execute(f"UPDATE {t} SET v = 'u{i}', n = n + 1 WHERE id = {k}")
        elif kind < 0.8:
            k = rng.choice(self.ids[t])
            new = self.next_id[t]
            self.next_id[t] += 1
            self.ids[t].remove(k)
            self.ids[t].append(new)
            self.db.execute(f"UPDATE {t} SET id = {new} WHERE id = {k}")
        elif kind < 0.92:
            k = rng.choice(self.ids[t])
            self.ids[t].remove(k)
            self.db.execute(f"DELETE FROM {t} WHERE id = {k}")
        else:
            u = rng.choice(self.names)
            a, b = rng.choice(self.ids[t]), self.next_id[u]
            self.next_id[u] += 1
            self.ids[u].append(b)
            self.db.execute("BEGIN", f"UPDATE {t} SET n = n * 2 WHERE id = {a}",
                            f"INSERT INTO {u} (id, v) VALUES ({b}, 'txn{i}')", "COMMIT")  # fmt: skip

    def expected(self) -> dict[str, dict[Any, dict[str, str | None]]]:
        out: dict[str, dict[Any, dict[str, str | None]]] = {}
        for t in self.names:
            with self.db.conn.cursor() as cur:
                cur.execute(f"SELECT * FROM `{self.db.name}`.`{t}`")
                cols = [d[0] for d in cur.description]
                out[f"{self.db.name}.{t}"] = {
                    text(r[0]): {c: text(v) for c, v in zip(cols, r, strict=True)} for r in cur.fetchall()
                }
        return out


class Steps(Protocol):
    """A workload :class:`Background` runs: ``step(i)`` does the i-th change."""

    def step(self, i: int) -> None: ...


class Paced:
    """Every ``every``-th step of ``work`` (:class:`Background` steps about every 20 ms): a steady load that the
    sinks keep up with on a shared 2-core machine, so the backlog after each restart and the final catch-up stay
    bounded however long the test runs. ``done`` counts the steps of ``work`` taken."""

    def __init__(self, work: Steps, every: int) -> None:
        self.work = work
        self.every = every
        self.done = 0

    def step(self, i: int) -> None:
        if i % self.every == 0:
            self.work.step(i // self.every)
            self.done += 1


class Background:
    """Runs the workload in a thread until stopped; its database connection belongs to that thread meanwhile
    (pymysql connections are not thread-safe: query the upstream only after ``stop``)."""

    def __init__(self, work: Steps) -> None:
        self.work = work
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.steps = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                self.work.step(self.steps)
                self.steps += 1
                self.stop.wait(0.02)
        except BaseException as e:
            self.error = e
