"""Data-path failover: two `cdc server --pd` (Spark runner) on one etcd and one MariaDB, a storage changefeed
under a continuous workload; kill -9 of the owner. The other server, which followed the owner's capture, leads it
from its own relay log and continues: the files replay to the upstream's rows, the checkpoint never goes back, and
every transaction that both servers wrote has the same commit-ts in both (the consumers' dedup relies on it)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import defaultdict
from pathlib import Path

import httpx
import pytest

from sparkcdc.devtools.etcd import EtcdServer
from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.model import tso
from sparkcdc.server.capture_state import EtcdCaptureState
from sparkcdc.server.etcd_client import EtcdClient
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.replay import replay
from tests.integration.pipeline.server import Background, CheckpointWatch, SparkServer, Workload, now_tso
from tests.support import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.exclusive]  # the owner steps down within the TTL; failover bound

TTL = 3


def owner(servers: list[SparkServer], timeout: float = 30) -> SparkServer:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = {f"127.0.0.1:{s.port}": s for s in servers if s.proc is not None}
        try:
            views = [httpx.get(s.url + "/api/v2/captures", timeout=5).json()["items"] for s in live.values()]
        except (httpx.HTTPError, KeyError):
            views = []
        named = {c["address"] for items in views for c in items if c["is_owner"]}
        if views and len(named) == 1 and named <= set(live):
            return live[named.pop()]
        time.sleep(0.2)
    raise AssertionError("no single live owner")


def commit_ts_by_change(sink: Path) -> dict[tuple[str, str, str], set[int]]:
    """Every row change in every data file (indexed or left over by the killed server), keyed by table, type and
    the row's text: the commit-ts it was written with."""
    seen: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    for f in sink.rglob("CDC*.json"):
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            msg = json.loads(line)
            if msg.get("isDdl"):
                continue
            for row in msg.get("data") or []:
                key = (f"{msg['database']}.{msg['table']}", msg["type"], json.dumps(row, sort_keys=True))
                seen[key].add(int(msg["_tidb"]["commitTs"]))
    return seen


class Bursts:
    """The workload in bursts with idle gaps: the capture's heartbeats reserve TSOs in the gaps, and the first
    transaction after a gap gets its commit-ts from that reservation (so a new owner must know it)."""

    def __init__(self, work: Workload) -> None:
        self.work = work

    def step(self, i: int) -> None:
        self.work.step(i)
        if i % 10 == 9:
            time.sleep(2.0)


def relay_commits(root: Path) -> dict[tuple[str, int], int]:
    """Commit-ts of every transaction in a server's relay log, by the binlog position where it ends."""
    db = sqlite3.connect(f"file:{root / 'data' / 'capture' / 'relay' / 'index.db'}?mode=ro", uri=True)
    try:
        return {(f, p): ts for ts, f, p in db.execute("SELECT commit_ts, binlog_file, binlog_pos FROM txn")}
    finally:
        db.close()


def test_killing_the_owner_under_load_loses_nothing_and_keeps_commit_ts(
    fresh_db: FreshDatabase, mariadb: MariaDB, etcd: EtcdServer, tmp_path: Path
) -> None:
    db = fresh_db
    work = Workload(db, tables=3, ddl_every=10**9)
    work.create()
    cluster = tmp_path.name[-30:]
    args = ("--pd", etcd.endpoint, "--cluster-id", cluster, "--session-ttl", str(TTL),
            "--gc-interval", "1", "--gc-life-time", "0")  # fmt: skip
    a = SparkServer(tmp_path / "a", mariadb.port or 0, args=args)
    b = SparkServer(tmp_path / "b", mariadb.port or 0, args=args)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    sink = tmp_path / "sink"
    sink_uri = f"file://{sink}?protocol=canal-json&enable-tidb-extension=true&flush-interval=2s"
    bg = Background(Bursts(work))
    try:
        a.start()
        assert owner([a]) is a
        b.start()
        r = b.cli("create", "-c", "ha", "--sink-uri", sink_uri)  # forwarded to the owner
        assert r.returncode == 0, r.stderr
        watch = CheckpointWatch(ExternalStorage.from_uri(sink_uri))
        bg.thread.start()
        first = watch.wait(1, 120)
        watch.wait(first + (5000 << 18), 120)  # a few seconds of the workload replicated
        state_of_capture = EtcdCaptureState(EtcdClient([etcd.endpoint]), cluster, fence=list)
        initial = state_of_capture.anchor()
        assert initial is not None
        wait_for(lambda: state_of_capture.anchor() != initial, 120, "the relay GC to move the anchor up", 0.2)
        moved = state_of_capture.anchor()
        assert moved is not None
        # kill once a transaction after a heartbeat's reservation is captured past the anchor: b must hold it alike
        wait_for(lambda: any(ts > moved.last_tso and tso.physical(ts) % 1000 for ts in relay_commits(a.root).values()),
                 60, "a transaction after a reservation", 0.2)  # fmt: skip
        a.kill()
        killed = time.monotonic()
        assert owner([a, b]) is b
        took = time.monotonic() - killed
        time.sleep(3)  # the workload goes on while b takes over
        bg.stop.set()
        bg.thread.join(60)
        assert bg.error is None, bg.error
        end = now_tso(db)
        watch.wait(end, 240, lambda: None)
        resumed = time.monotonic() - killed
        state = b.changefeed("ha")
    finally:
        bg.stop.set()
        a.kill()
        b.stop()
    assert took <= 30, took  # the bound; about TTL + 1 s on an idle machine
    assert state["state"] == "normal", state
    assert watch.monotonic, watch.seen
    log = (tmp_path / "b" / "server.log").read_text()
    assert "is now the owner" in log and "capture leads the cluster" in log
    _, got = replay(sink_uri)
    want = work.expected()
    for name, rows in want.items():
        assert got.get(name, {}) == rows, name
    twice = {k: v for k, v in commit_ts_by_change(sink).items() if len(v) > 1}
    assert not twice, list(twice.items())[:5]
    # b followed a's capture, then led from its own relay log: every transaction both hold has one commit-ts
    in_a, in_b = relay_commits(tmp_path / "a"), relay_commits(tmp_path / "b")
    both = set(in_a) & set(in_b)
    assert both, (len(in_a), len(in_b))
    assert {p: in_a[p] for p in both} == {p: in_b[p] for p in both}
    after_gap = [p for p in both if tso.physical(in_a[p]) % 1000]  # not a binlog second: after a reservation
    assert after_gap, "no transaction took its commit-ts from a heartbeat's reservation"
    print(f"failover: new owner after {took:.1f}s, caught up {resumed:.1f}s after the kill")


def test_etcd_gone_for_ten_seconds_the_owner_steps_down_and_the_cluster_recovers(
    fresh_db: FreshDatabase, mariadb: MariaDB, etcd: EtcdServer, tmp_path: Path
) -> None:
    db = fresh_db
    work = Workload(db, tables=2, ddl_every=10**9)
    work.create()
    cluster = tmp_path.name[-30:]
    args = ("--pd", etcd.endpoint, "--cluster-id", cluster, "--session-ttl", str(TTL))
    servers = [SparkServer(tmp_path / n, mariadb.port or 0, args=args) for n in ("a", "b")]
    for s in servers:
        s.root.mkdir()
    sink = tmp_path / "sink"
    sink_uri = f"file://{sink}?protocol=canal-json&enable-tidb-extension=true&flush-interval=2s"
    bg = Background(Bursts(work))
    both_owners: list[float] = []
    watching = threading.Event()

    def watch_owners() -> None:  # no moment where two servers both say they are the owner
        while not watching.is_set():
            says = []
            for s in servers:
                try:
                    says.append(httpx.get(s.url + "/api/v2/status", timeout=0.5).json().get("is_owner") is True)
                except (httpx.HTTPError, ValueError):
                    says.append(False)
            if all(says):
                both_owners.append(time.monotonic())
            time.sleep(0.1)

    watcher = threading.Thread(target=watch_owners, daemon=True)
    try:
        for s in servers:
            s.start()
        first_owner = owner(servers)
        r = servers[1].cli("create", "-c", "ha", "--sink-uri", sink_uri)
        assert r.returncode == 0, r.stderr
        watch = CheckpointWatch(ExternalStorage.from_uri(sink_uri))
        bg.thread.start()
        watcher.start()
        watch.wait(watch.wait(1, 120) + (3000 << 18), 120)
        etcd.pause()
        paused = time.monotonic()
        try:
            # the owner cannot reach etcd: it gives up ownership before its lease can have expired
            wait_for(lambda: httpx.get(first_owner.url + "/api/v2/status", timeout=5).json()["is_owner"] is False,
                     TTL, "the owner to step down", 0.2)  # fmt: skip
            time.sleep(max(0.0, 10 - (time.monotonic() - paused)))
        finally:
            etcd.resume()
        back = owner(servers, timeout=60)
        bg.stop.set()
        bg.thread.join(60)
        assert bg.error is None, bg.error
        end = now_tso(db)
        watch.wait(end, 240)
        state = back.changefeed("ha")
    finally:
        watching.set()
        bg.stop.set()
        for s in servers:
            s.stop()
    assert not both_owners
    assert state["state"] == "normal", state
    assert watch.monotonic, watch.seen
    log = (first_owner.root / "server.log").read_text()
    assert "giving up ownership" in log
    _, got = replay(sink_uri)
    for name, rows in work.expected().items():
        assert got.get(name, {}) == rows, name
    twice = {k: v for k, v in commit_ts_by_change(sink).items() if len(v) > 1}
    assert not twice, list(twice.items())[:5]
