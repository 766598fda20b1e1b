"""Peers side by side: Debezium and a sparkcdc changefeed capture the same MariaDB workload into the same Kafka broker.

    benchmarks/peers_setup.sh        # once: Debezium 3.6.1.Final and our driver, with Maven, into .cache/peers
    .venv/bin/python benchmarks/peers.py [--rows 1000000] [--tables 4] [--txn-rows 1000] [--rounds 3]
                                         [--master 'local[2]'] [--protocol canal-json] [--broker HOST:PORT]
                                         [--warm-rows 20000] [--timeout 1800] [--keep DIR]

What runs, in one process run on one private MariaDB (``sparkcdc.devtools.mariadb``) and one broker (a private
Apache Kafka 4.4, ``sparkcdc.devtools.apache_kafka``, its JVM with C2 and the G1 collector as a deployed broker
runs, unless ``--broker`` names one), both sides as they would be deployed:

* **Debezium**: its MySQL connector (3.6.1.Final) in the embedded engine, in a JVM of its own, driven by
  ``benchmarks/peers/.../DebeziumKafka.java``, which sends every change event to Kafka as Debezium Server's Kafka
  sink does (a batch sent asynchronously, every send acknowledged before the batch's offsets are committed;
  ``acks=all``, idempotent, the client's defaults otherwise). JSON without embedded schemas (the smaller
  messages), DECIMAL as strings, no tombstones, no schema-change topic; one topic per table. Debezium 3.6 takes
  MariaDB 10.11 for a MySQL >= 8.4 and asks it ``SHOW BINARY LOG STATUS``; the driver's JDBC shim
  (``MariaDbDriver``) answers with ``SHOW MASTER STATUS`` (Debezium's MariaDB connector is not on Maven Central).
* **sparkcdc**: ``cdc server`` (``--master``) with one changefeed to a Kafka sink (``--protocol``, canal-json or
  simple; one topic of 3 partitions): the server's binlog capture, relay log and Spark pipeline.

Each side is started once, alone (the other paused), as a fresh process: its *start-up* is the time from the
process start until its first event is in Kafka (rows are committed into ``peers_probe`` every second meanwhile;
for sparkcdc this includes ``cdc cli changefeed create``, for Debezium its schema snapshot). Then both replicate a
``--warm-rows`` load (JIT, Spark's first batches) and are paused (SIGSTOP of the whole process tree; MariaDB's
``net_write_timeout`` is raised so the paused replica connections survive). Each round commits ``--rows`` rows
over ``--tables`` tables of ``benchmarks/changefeed.py``'s mixed-type columns (BIGINT key, INT, VARCHAR, DECIMAL,
DATETIME) in INSERT ... SELECT transactions of ``--txn-rows``, into a database of its own, while both are paused:
a backlog in the binlog. Then each side in turn (the order alternates by round) is resumed alone and timed until
every row of the round is in Kafka, and paused again: its *catch-up* events/s, from the resume to the last
event. Pausing rather than restarting keeps both sides warm, and it is needed: Debezium's MySQL connector does not
see MariaDB's transaction starts (MariaDB's GTID event stands for BEGIN), so the offset it commits at a stop keeps
the row count of the last rows event and a restart skips that many rows of the next transaction (seen: 65 rows
lost).

Events are counted by consuming the topics (a consumer thread of this process, beside both sides alike): a side is
done when it delivered every row of the round's database (distinct keys; duplicates are counted apart); the message
timestamps (set by each side's producer) date the first and the last. Printed per side and round: the catch-up
events/s, when the first event arrived (for sparkcdc also when its relay log held the whole backlog) and the
events/s from the first event to the last, the CPU seconds of the side's process tree (sampled every 0.2 s, so
Spark's short-lived Python workers count), of MariaDB and of the private broker meanwhile, and the load average
(other work on the machine takes cores from both sides: the events/s follow each side's share, the CPU per event
much less); at the end the medians, the ratio of CPU per event, where each side's CPU went by process and thread
(thread names as the kernel keeps them: 15 characters), and how many distinct rows and messages each side delivered.
``--keep DIR`` keeps the logs.
The last line, with the median catch-up events/s of each side, is ``sparkcdc <N.NN>x Debezium (<sparkcdc rows/s>
vs <Debezium rows/s>)``. Target (issue 27): sparkcdc >= 5x.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from changefeed import TABLE_COLUMNS, _tree_stats
from sparkcdc.capture.position import file_seq
from sparkcdc.capture.supervisor import relay_progress
from sparkcdc.devtools.apache_kafka import KAFKA_VERSION, ApacheKafka
from sparkcdc.devtools.mariadb import CDC_PASSWORD, CDC_USER, MariaDB
from sparkcdc.devtools.quickstart import CDC, _env, _Server

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / ".cache" / "peers"
DEBEZIUM = "3.6.1.Final"
PARTITIONS = 3
BROKER_JAVA_OPTS = "-Xms512m -Xmx1g -XX:+UseG1GC"
_QUIET = {"log_level": 3}
# A row message of either sparkcdc protocol (canal-json, simple): its database, its type and its row's key (the
# column "id" of every table here, in the message's "data": first in canal-json, last in simple, whose keys are
# sorted); Debezium's key (schemas disabled) is {"id":N}.
_DATABASE = re.compile(rb'"database":"([^"]*)"')
_ROW_TYPE = re.compile(rb'"type":"(?:INSERT|UPDATE|DELETE)"')
_CDC_ID = re.compile(rb'"id":"(\d+)"')
_DBZ_ID = re.compile(rb'"id":(\d+)')


@dataclass
class Delivered:
    """Row events of one side for one database seen in Kafka: how many messages, how many distinct rows (by key),
    and the first and last message time."""

    count: int = 0
    distinct: int = 0
    first_ms: int = 0
    last_ms: int = 0

    @property
    def duplicates(self) -> int:
        return self.count - self.distinct


@dataclass
class _Seen(Delivered):
    """A :class:`Delivered` with the keys seen so far: one byte per key (the keys of a database are 0..rows)."""

    keys: bytearray = field(default_factory=bytearray)

    def add(self, key: int, ts_ms: int) -> None:
        if key >= len(self.keys):
            self.keys.extend(bytes(max(key + 1 - len(self.keys), len(self.keys))))
        if not self.keys[key]:
            self.keys[key] = 1
            self.distinct += 1
        self.count += 1
        self.first_ms = min(self.first_ms, ts_ms) if self.first_ms else ts_ms
        self.last_ms = max(self.last_ms, ts_ms)


class TopicCounter:
    """Consumes every topic of both sides from the beginning (assign, no group: new topics are picked up from the
    metadata every 0.5 s) and counts row events and distinct rows (by key) per (side, database), so a side is done
    only when every row arrived, and duplicates show. Debezium's topics are ``<prefix>.<db>.<table>`` with one
    message per row event; sparkcdc's one topic also carries DDL (and, for simple, watermark and bootstrap)
    messages, which are not counted."""

    def __init__(self, bootstrap: str, dbz_prefix: str, cdc_topic: str) -> None:
        self.bootstrap = bootstrap
        self.dbz_prefix = dbz_prefix + "."
        self.cdc_topic = cdc_topic
        self.seen: dict[tuple[str, str], _Seen] = {}
        self.probes = 0  # rows committed into peers_probe.t0 so far (start_up)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "peers-counter",
                             "enable.auto.commit": False, "fetch.max.bytes": 64 << 20, **_QUIET})  # fmt: skip
        assigned: set[str] = set()
        next_refresh = 0.0
        try:
            while not self.stop.is_set():
                if time.monotonic() >= next_refresh:
                    topics = consumer.list_topics(timeout=10).topics
                    new = [t for t in topics if t not in assigned and self._side(t) is not None]
                    parts = [TopicPartition(t, p, OFFSET_BEGINNING) for t in new for p in topics[t].partitions]
                    if parts:
                        consumer.incremental_assign(parts)
                        assigned.update(new)
                    next_refresh = time.monotonic() + 0.5
                for m in consumer.consume(10_000, 0.2):
                    if m.error() is not None:
                        continue
                    self._count(m.topic(), m.key(), m.value(), m.timestamp()[1])
        except BaseException as e:  # reported by wait()
            self.error = e
        finally:
            consumer.close()

    def _side(self, topic: str) -> str | None:
        if topic.startswith(self.dbz_prefix):
            return "debezium"
        return "sparkcdc" if topic == self.cdc_topic else None

    def _count(self, topic: str, key: bytes | None, value: bytes | None, ts_ms: int) -> None:
        side = self._side(topic)
        if side == "debezium":
            db = topic[len(self.dbz_prefix) :].split(".", 1)[0]
            found = _DBZ_ID.search(key or b"")
        else:
            value = value or b""
            head = value[:400]
            in_db = _DATABASE.search(head)
            if in_db is None or _ROW_TYPE.search(head) is None:
                return
            db = in_db.group(1).decode()
            at = value.find(b'"data":')
            found = _CDC_ID.search(value, at) if at >= 0 else None
        if side is None or found is None:
            raise ValueError(f"no row key in a message of {topic}: {(value or b'')[:200]!r}")
        with self.lock:
            self.seen.setdefault((side, db), _Seen()).add(int(found.group(1)), ts_ms)

    def get(self, side: str, db: str) -> Delivered:
        """What ``side`` delivered of ``db`` so far; raises RuntimeError once the consumer failed."""
        if self.error is not None:
            raise RuntimeError(f"counting consumer failed: {self.error}")
        with self.lock:
            d = self.seen.get((side, db), _Seen())
            return Delivered(d.count, d.distinct, d.first_ms, d.last_ms)

    def wait(self, side: str, db: str, rows: int, timeout: float, alive: Any) -> Delivered:
        """Until ``side`` delivered all ``rows`` rows (distinct keys) of ``db``; raises RuntimeError on a timeout,
        a dead side (``alive()`` false) or a failed consumer."""
        deadline = time.monotonic() + timeout
        while (got := self.get(side, db)).distinct < rows:
            if not alive():
                raise RuntimeError(f"{side} exited before delivering {rows} rows of {db} ({got.distinct} so far)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{side} delivered {got.distinct} of {rows} rows of {db} in {timeout:.0f}s")
            time.sleep(0.05)
        return got

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


def thread_cpu(root: int) -> Counter[str]:
    """CPU seconds used so far by each thread of ``root``'s process tree, summed by ``process/thread`` name with
    digits dropped (``java/kafka-producer-network-thread``, ``java/Executor task launch worker for task``)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: Counter[str] = Counter()
    for pid, name, _fields in _tree_stats(root):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    head, tail = f.read().rsplit(")", 1)
            except OSError:
                continue
            fields = tail.split()
            thread = re.sub(r"[\d.:-]+", "", head.split("(", 1)[-1]).strip() or "?"
            out[f"{name}/{thread}"] += (int(fields[11]) + int(fields[12])) / tick
    return out


class TreeCpu:
    """CPU seconds a process tree uses from now until :meth:`close`, sampled from /proc every 0.2 s by a thread.
    Spark starts and ends Python workers mid-run, and an ended worker's time is lost unless its parent reaps it
    (it often is not: the daemons' workers are not always waited for), so each process is counted from its samples:
    at most the last 0.2 s of a process that ends is missed."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.names: dict[int, str] = {}
        self.base = self._sample()
        self.last = dict(self.base)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _sample(self) -> dict[int, float]:
        tick = os.sysconf("SC_CLK_TCK")
        stats = _tree_stats(self.root)
        self.names.update((pid, name) for pid, name, _f in stats)
        return {pid: (int(f[11]) + int(f[12])) / tick for pid, _name, f in stats}

    def _run(self) -> None:
        while not self.stop.wait(0.2):
            self.last.update(self._sample())

    def close(self) -> Counter[str]:
        """CPU seconds by process name (``java``, ``python``: Spark's workers, ``cdc``: the server)."""
        self.stop.set()
        self.thread.join()
        self.last.update(self._sample())
        out: Counter[str] = Counter()
        for pid, cpu in self.last.items():
            out[self.names[pid]] += cpu - self.base.get(pid, 0.0)
        return out


def signal_tree(root: int, sig: signal.Signals) -> None:
    """Send ``sig`` to ``root`` and all its descendants (SIGSTOP/SIGCONT pause and resume a whole side: the cdc
    server's Spark JVM and Python workers are its descendants)."""
    for pid, _name, _fields in _tree_stats(root):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class Debezium:
    """Debezium's MySQL connector in the embedded engine (``DebeziumKafka``), one JVM per start; its offsets
    and schema history in files under ``work``, so a restart resumes where the last run stopped."""

    name = "debezium"

    def __init__(self, work: Path, db: MariaDB, bootstrap: str, prefix: str) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.work = work
        self.log = work / "debezium.log"
        self.out = work / "debezium.out"
        self.proc: subprocess.Popen[bytes] | None = None
        props = {
            "name": "peers-debezium",
            "connector.class": "io.debezium.connector.mysql.MySqlConnector",
            "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
            "offset.storage.file.filename": str(work / "offsets.dat"),
            "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
            "schema.history.internal.file.filename": str(work / "schema-history.dat"),
            "database.hostname": "127.0.0.1",
            "database.port": str(db.port),
            "database.user": CDC_USER,
            "database.password": CDC_PASSWORD,
            "database.server.id": "24293",
            "database.jdbc.driver": "sparkcdc.peers.MariaDbDriver",
            "database.protocol": "jdbc:peers-mysql",
            "topic.prefix": prefix,
            "database.include.list": "peers_.*",
            "snapshot.mode": "no_data",  # the first start records the binlog's end; later starts resume there
            "include.schema.changes": "false",
            "tombstones.on.delete": "false",
            "decimal.handling.mode": "string",
            "converter.schemas.enable": "false",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "producer.bootstrap.servers": bootstrap,
        }
        self.properties = work / "engine.properties"
        self.properties.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def start(self) -> None:
        classpath = f"{PEERS / 'target' / 'classes'}:{PEERS / 'lib'}/*"
        with open(self.out, "ab") as out, open(self.log, "ab") as err:
            self.proc = subprocess.Popen(["java", "-cp", classpath, "sparkcdc.peers.DebeziumKafka",
                                          str(self.properties)],
                                         stdout=out, stderr=err, start_new_session=True)  # fmt: skip

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM: the engine stops and commits its offsets."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            signal_tree(self.proc.pid, signal.SIGCONT)  # a paused JVM would not see SIGTERM
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self.proc = None


class Sparkcdc:
    """``cdc server`` (the quickstart's) with one Kafka changefeed on ``peers_*``; the same data dir on every
    start, so the capture and the changefeed resume where the last run stopped."""

    name = "sparkcdc"
    changefeed = "peers"

    def __init__(self, work: Path, db: MariaDB, bootstrap: str, topic: str, protocol: str, master: str) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.work = work
        self.db_port = db.port or 0
        self.master = master
        self.sink = f"kafka://{bootstrap}/{topic}?protocol={protocol}&partition-num={PARTITIONS}"
        self.server: _Server | None = None
        self.capture = work / "server" / "capture"  # _Server's --data-dir

    def start(self) -> None:
        self.server = _Server(self.work, self.db_port, self.master)

    def create(self, timeout: float = 600) -> None:
        """Wait for the API, create the changefeed and wait until its first checkpoint after start-ts."""
        assert self.server is not None
        self.server.wait_healthy()
        config = self.work / "changefeed.toml"
        config.write_text('[filter]\nrules = ["peers_*.*"]\n')
        created = subprocess.run([CDC, "cli", "changefeed", "create", "--server", self.server.url, "--sink-uri",
                                  self.sink, "--changefeed-id", self.changefeed, "--config", str(config)],
                                 capture_output=True, text=True, env=_env(), timeout=120)  # fmt: skip
        if created.returncode != 0:
            raise RuntimeError(f"changefeed create failed: {created.stderr.strip() or created.stdout.strip()}")
        start = self.checkpoint()
        deadline = time.monotonic() + timeout
        while self.checkpoint() <= start:
            if not self.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the changefeed did not advance; see {self.server.log}")
            time.sleep(0.2)

    def checkpoint(self) -> int:
        import httpx

        assert self.server is not None
        r = httpx.get(f"{self.server.url}/api/v2/changefeeds/{self.changefeed}", timeout=10)
        r.raise_for_status()
        return int(r.json()["checkpoint_ts"])

    @property
    def pid(self) -> int:
        assert self.server is not None
        return self.server.proc.pid

    def alive(self) -> bool:
        return self.server is not None and self.server.proc.poll() is None

    def stop(self) -> None:
        if self.server is not None:
            if self.alive():
                signal_tree(self.pid, signal.SIGCONT)  # a paused server would not see SIGTERM
            self.server.stop()
            self.server = None


Side = Debezium | Sparkcdc


def start_up(side: Side, conn: Any, counter: TopicCounter, timeout: float) -> float:
    """Start ``side`` (a fresh process) and commit a row into ``peers_probe.t0`` every second until it delivered
    one; returns the seconds from the process start to that first event in Kafka. From then on the side reads the
    binlog. (Debezium's first start takes a schema snapshot under a global read lock, which holds the probe's
    INSERT back, and reads the binlog after it; its engine reports polling before that.)"""
    t0 = time.time()
    side.start()
    if isinstance(side, Sparkcdc):
        side.create(timeout)
    deadline = time.monotonic() + timeout
    with conn.cursor() as cur:
        k = 0
        while (got := counter.get(side.name, "peers_probe")).count == 0:
            if not side.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{side.name} did not start replicating in {timeout:.0f}s; see its log")
            cur.execute(f"INSERT INTO peers_probe.t0 VALUES ({counter.probes + k}, 0, 'probe', 0, NOW())")
            k += 1
            time.sleep(1)
    counter.probes += k
    return got.first_ms / 1000 - t0


def load(conn: Any, db: str, rows: int, tables: int, txn_rows: int) -> None:
    """``rows`` rows over ``tables`` tables of ``db`` (created here) in INSERT ... SELECT transactions of
    ``txn_rows`` rows, round-robin over the tables (``benchmarks/changefeed.py``'s workload)."""
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        for i in range(tables):
            cur.execute(f"CREATE TABLE {db}.t{i} ({TABLE_COLUMNS})")
        for k in range(rows // txn_rows):
            cur.execute(f"INSERT INTO {db}.t{k % tables} SELECT {k * txn_rows} + seq, seq % 1000, CONCAT('row-', "
                        f"seq, '-', {k}), seq / 7, '2026-01-01 00:00:00' FROM {db}.seq_1_to_{txn_rows}")  # fmt: skip


@dataclass
class Run:
    """One timed catch-up of one side."""

    first: float  # resume -> first event of the backlog in Kafka, s
    rate: float  # events/s from the resume to the last event
    burst: float  # events/s from the first event to the last
    cpu: float  # CPU seconds of the side's process tree meanwhile
    db_cpu: float  # CPU seconds of MariaDB meanwhile
    broker_cpu: float | None  # CPU seconds of the private broker meanwhile (None with --broker)
    load: float  # the machine's 1-minute load average at the end
    duplicates: int  # messages of the round's rows beyond one per row, when the side finished
    processes: Counter[str]  # the side's CPU seconds meanwhile by process name
    threads: Counter[str]  # the side's CPU seconds meanwhile by process/thread, threads alive at the end
    captured: float | None  # sparkcdc: resume -> the relay log holds the whole backlog, s


def binlog_end(conn: Any) -> tuple[int, int]:
    """The upstream's current binlog position as (file sequence, position)."""
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
    return file_seq(file), int(pos)


def when_captured(capture: Path, target: tuple[int, int], t0: float, done: threading.Event) -> list[float]:
    """Seconds from ``t0`` until the relay log under ``capture`` has read the binlog up to ``target`` (polled
    every 0.1 s by a thread until ``done``); the list stays empty if it never did."""
    out: list[float] = []

    def poll() -> None:
        while not done.is_set():
            p = relay_progress(capture)
            if p is not None and (file_seq(p.binlog_file), p.binlog_pos) >= target:
                out.append(time.time() - t0)
                return
            done.wait(0.1)

    threading.Thread(target=poll, daemon=True).start()
    return out


def timed(side: Side, counter: TopicCounter, db: str, rows: int, timeout: float, mariadbd: int,
          broker: int | None, end: tuple[int, int]) -> Run:  # fmt: skip
    """Resume the paused ``side`` and time it until every row of ``db``'s backlog (which ends at binlog position
    ``end``) is in Kafka; pause it again. ``broker``: the private broker's pid, whose CPU is sampled too."""
    db_cpu, side_cpu, threads_before = TreeCpu(mariadbd), TreeCpu(side.pid), thread_cpu(side.pid)
    broker_cpu = TreeCpu(broker) if broker is not None else None
    done = threading.Event()
    t0 = time.time()
    captured = when_captured(side.capture, end, t0, done) if isinstance(side, Sparkcdc) else []
    signal_tree(side.pid, signal.SIGCONT)
    try:
        got = counter.wait(side.name, db, rows, timeout, side.alive)
    finally:
        signal_tree(side.pid, signal.SIGSTOP)
        done.set()
    threads = thread_cpu(side.pid)
    threads.subtract(threads_before)
    processes = side_cpu.close()
    cpu = sum(processes.values())
    return Run(first=got.first_ms / 1000 - t0, rate=rows / (got.last_ms / 1000 - t0),
               burst=rows / max(got.last_ms - got.first_ms, 1) * 1000,
               cpu=cpu, db_cpu=sum(db_cpu.close().values()),
               broker_cpu=sum(broker_cpu.close().values()) if broker_cpu is not None else None,
               load=os.getloadavg()[0], duplicates=got.duplicates, processes=processes, threads=threads,
               captured=captured[0] if captured else None)  # fmt: skip


def describe(run: Run, rows: int) -> str:
    captured = "" if run.captured is None else f"binlog in the relay log after {run.captured:.1f} s, "
    broker = "" if run.broker_cpu is None else f" + Kafka {run.broker_cpu:.1f} s"
    dup = f"; {run.duplicates} duplicates" if run.duplicates else ""
    return (f"{run.rate:,.0f} events/s ({captured}first event after {run.first:.1f} s, then {run.burst:,.0f} "
            f"events/s); all {rows:,} rows in Kafka{dup}; CPU {run.cpu:.1f} s ({run.cpu / rows * 1e6:.0f} us/event) "
            f"+ MariaDB {run.db_cpu:.2f} s{broker}; load average {run.load:.2f}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows per round (one event each)")
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--txn-rows", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--master", default="local[2]", help="cdc server --spark-master")
    ap.add_argument("--protocol", default="canal-json", choices=["canal-json", "simple"], help="sparkcdc's codec")
    ap.add_argument("--broker", default=None, metavar="HOST:PORT", help="a Kafka broker to use (default: a private "
                    "Apache Kafka started for the run)")  # fmt: skip
    ap.add_argument("--warm-rows", type=int, default=20_000, help="rows both sides replicate before the rounds")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds a side may take for one round")
    ap.add_argument("--keep", type=Path, default=None, metavar="DIR", help="work in DIR and keep it (the logs "
                    "of both sides, the server's, MariaDB's, the broker's) instead of a temporary one")  # fmt: skip
    args = ap.parse_args()
    if not (PEERS / ".built").exists():
        print(f"Error: Debezium is not set up in {PEERS}; run benchmarks/peers_setup.sh (Java 17 and Maven)",
              file=sys.stderr)  # fmt: skip
        return 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop what was started (the finally below)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    run_id = f"{os.getpid():x}"
    runs: dict[str, list[Run]] = {"debezium": [], "sparkcdc": []}
    keep = contextlib.nullcontext(str(args.keep)) if args.keep else None
    with keep or tempfile.TemporaryDirectory(prefix="sparkcdc-peers-") as tmp:
        work = Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        db = MariaDB(work / "mariadb").start()
        # a deployed broker's JIT and collector, not the dev broker's start-up options (C1, serial GC)
        os.environ.setdefault("SPARKCDC_KAFKA_JAVA_OPTS", BROKER_JAVA_OPTS)
        broker = None if args.broker else ApacheKafka(work / "kafka").start(timeout=120)
        bootstrap = args.broker or (broker.bootstrap if broker else "")
        import pymysql  # type: ignore[import-untyped]

        conn = pymysql.connect(**db.connect_kwargs("root", autocommit=True))
        mariadbd = int(db.pid_file.read_text().strip())
        broker_pid = broker.alive_pid() if broker is not None else None
        dbz_prefix, cdc_topic = f"dbz{run_id}", f"peers-{run_id}"
        counter = TopicCounter(bootstrap, dbz_prefix, cdc_topic)
        sides: dict[str, Side] = {
            "debezium": Debezium(work / "debezium", db, bootstrap, dbz_prefix),
            "sparkcdc": Sparkcdc(work / "sparkcdc", db, bootstrap, cdc_topic, args.protocol, args.master),
        }
        try:
            with conn.cursor() as cur:  # the start-up probe's table (start_up)
                cur.execute("CREATE DATABASE peers_probe")
                cur.execute(f"CREATE TABLE peers_probe.t0 ({TABLE_COLUMNS})")
                cur.execute("SET GLOBAL net_write_timeout = 86400")  # a paused side must not lose its binlog dump
            startup: dict[str, float] = {}
            for s, side in sides.items():  # one at a time, the other paused
                startup[s] = start_up(side, conn, counter, args.timeout)
                signal_tree(side.pid, signal.SIGSTOP)
                print(f"{s} started: {startup[s]:.1f} s from the process start to its first event in Kafka",
                      flush=True)  # fmt: skip
            for side in sides.values():
                signal_tree(side.pid, signal.SIGCONT)
            load(conn, "peers_warm", args.warm_rows, args.tables, args.txn_rows)
            for side in sides.values():
                counter.wait(side.name, "peers_warm", args.warm_rows, args.timeout, side.alive)
                signal_tree(side.pid, signal.SIGSTOP)
            print(f"both warmed ({args.warm_rows:,} rows) and paused; broker {bootstrap}"
                  f"{f' (Apache Kafka {KAFKA_VERSION})' if broker else ''}", flush=True)  # fmt: skip
            for r in range(args.rounds):
                name = f"peers_r{r}"
                load(conn, name, args.rows, args.tables, args.txn_rows)
                end = binlog_end(conn)
                order = list(sides) if r % 2 == 0 else list(reversed(sides))
                for s in order:
                    run = timed(sides[s], counter, name, args.rows, args.timeout, mariadbd, broker_pid, end)
                    runs[s].append(run)
                    print(f"round {r + 1} {s}: {describe(run, args.rows)}", flush=True)
            time.sleep(1)  # the counting consumer's last fetch
            final = {s: [counter.get(s, f"peers_r{r}") for r in range(args.rounds)] for s in sides}
        finally:
            for side in sides.values():
                side.stop()
            counter.close()
            conn.close()
            if broker is not None:
                broker.stop()
            db.stop()
    print(f"{args.rows:,} rows per round ({args.tables} tables, {args.txn_rows} rows/txn) caught up from the "
          f"binlog by a warm, paused side; median of {args.rounds} round(s); sparkcdc {args.master}, "
          f"{args.protocol}")  # fmt: skip
    labels = {"debezium": f"debezium {DEBEZIUM} (embedded engine, MySQL connector, JSON)",
              "sparkcdc": f"sparkcdc (cdc server, Kafka sink {args.protocol})"}  # fmt: skip
    rates, cpus = {}, {}
    for s, rs in runs.items():
        rates[s] = statistics.median(x.rate for x in rs)
        cpus[s] = cpu = statistics.median(x.cpu for x in rs)
        kafka = [x.broker_cpu for x in rs if x.broker_cpu is not None]
        broker = f" + Kafka {statistics.median(kafka) / args.rows * 1e6:.0f} us/event" if kafka else ""
        print(f"{labels[s]}: start-up {startup[s]:.1f} s; catch-up {rates[s]:,.0f} events/s, first event after "
              f"{statistics.median(x.first for x in rs):.1f} s, then {statistics.median(x.burst for x in rs):,.0f} "
              f"events/s, CPU {cpu / args.rows * 1e6:.0f} us/event + MariaDB "
              f"{statistics.median(x.db_cpu for x in rs) / args.rows * 1e6:.0f} us/event{broker}; load average "
              f"{statistics.median(x.load for x in rs):.2f}")  # fmt: skip
        procs = ", ".join(f"{k} {v:.1f}" for k, v in rs[-1].processes.most_common())
        top = ", ".join(f"{k} {v:.1f}" for k, v in rs[-1].threads.most_common(6))
        print(f"  CPU seconds of the last round by process: {procs}; by thread (those alive at its end): {top}",
              flush=True)  # fmt: skip
    for s, got in final.items():  # every round's rows were all delivered (timed waited for that): say so
        dups = sum(g.duplicates for g in got)
        print(f"delivered by {s}: {sum(g.distinct for g in got):,} distinct rows of {args.rows * args.rounds:,} in "
              f"{sum(g.count for g in got):,} messages ({dups} duplicates, from at-least-once delivery after a "
              "retry)")  # fmt: skip
    print(f"CPU per event: sparkcdc {cpus['debezium'] / cpus['sparkcdc']:.2f}x less than Debezium (on a loaded "
          "machine the events/s follow each side's share of the cores; the CPU per event does not)")  # fmt: skip
    ratio = rates["sparkcdc"] / rates["debezium"]
    print(f"sparkcdc {ratio:.2f}x Debezium ({rates['sparkcdc']:.0f} vs {rates['debezium']:.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
