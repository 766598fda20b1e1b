"""Issue 15's whole-cluster test: three `cdc server --pd` (Spark runner) on one etcd and one MariaDB, four
changefeeds (storage canal-json with the TiDB extension, storage csv, storage canal-json of one table, Kafka
simple) under a continuous workload with DDL. Five kill -9 in turn: the owner, then a non-owner, then the owner
..., each killed server started again before the next kill. The owner spreads the changefeeds over the captures by
count (``GET /api/v2/processors``): after the kills the restarted nodes have their share again (2/1/1), and draining
a non-owner under load moves its changefeeds to the other two (2/2), where they go on replicating.

Each failover is measured from the kill until every changefeed resumed (its checkpoint moved past where it stood
at the kill: a live capture runs it again; the issue's target is 30 s, see RESUME_BOUND_S), and until every
changefeed caught up past the kill's time (bounded at 60 s); both are printed. After the final catch-up every
sink replays to the upstream's rows, no data file was ever overwritten, no checkpoint went back (storage
``metadata`` and the Open API alike), and no row change appears with two different commit-ts.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.etcd import EtcdServer
from sparkcdc.devtools.kafka import read_topic
from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.storage.external import ExternalStorage
from tests.e2e.test_changefeed_kafka import decoded_rows
from tests.e2e.test_cluster import drain_until_empty
from tests.e2e.test_cluster_failover import TTL, commit_ts_by_change, owner
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.replay import replay
from tests.integration.pipeline.server import (
    Background,
    CheckpointWatch,
    FileTracker,
    SparkServer,
    Workload,
    clock_tso,
    now_tso,
)
from tests.integration.sink.kafka_replay import replay_partitions
from tests.support import ThreadWatch

pytestmark = [pytest.mark.e2e, pytest.mark.exclusive]  # every failover held to RESUME_BOUND_S
log = logging.getLogger(__name__)

KILLS = 5
# The target. With the changefeeds spread over the captures, a kill moves only the dead capture's share,
# onto servers whose Spark sessions and relay logs are warm: 5.5-9.1 s measured on the 2-core machines here (three
# Spark servers, the broker and MariaDB together). The figures are printed for the record.
RESUME_BOUND_S = 30.0
CAUGHT_UP_BOUND_S = 60.0


class Paced:
    """The workload at about ten transactions a second (the three servers, the broker and MariaDB share 2 cores)."""

    def __init__(self, work: Workload) -> None:
        self.work = work

    def step(self, i: int) -> None:
        self.work.step(i)
        time.sleep(0.08)


class Watch(ThreadWatch):
    """A thread that keeps every sink's checkpoint history and data-file signatures, and every changefeed's
    checkpoint as any live server's Open API answers it."""

    def __init__(self, servers: list[SparkServer], sinks: dict[str, str], changefeeds: list[str]) -> None:
        super().__init__()
        self.servers = servers
        self.checkpoints = {cf: CheckpointWatch(ExternalStorage.from_uri(uri)) for cf, uri in sinks.items()}
        self.files = {cf: FileTracker(ExternalStorage.from_uri(uri)) for cf, uri in sinks.items()}
        self.api: dict[str, list[int]] = {cf: [] for cf in changefeeds}

    def run(self) -> None:
        rounds = 0
        while not self.stop.wait(0.3):
            for w in self.checkpoints.values():
                w.poll()
            if rounds % 10 == 0:  # reading every data file back is slow: every 3 s
                for f in self.files.values():
                    f.poll()
            rounds += 1
            for cf, seen in self.api.items():
                ts = self.api_checkpoint(cf)
                if ts and (not seen or seen[-1] != ts):
                    seen.append(ts)

    def api_checkpoint(self, cf: str) -> int:
        for s in self.servers:
            if s.proc is None:
                continue
            try:
                r = httpx.get(f"{s.url}/api/v2/changefeeds/{cf}", timeout=2)
            except httpx.HTTPError:
                continue
            if r.status_code == 200:
                return int(r.json()["checkpoint_ts"])
        return 0

    def latest(self) -> dict[str, int]:
        return {cf: seen[-1] if seen else 0 for cf, seen in self.api.items()}

    def wait_all_past(self, ts: int | dict[str, int], timeout: float) -> None:
        """Until every changefeed's checkpoint is past ``ts`` (one ts, or one per changefeed)."""
        bound = ts if isinstance(ts, dict) else dict.fromkeys(self.api, ts)
        deadline = time.monotonic() + timeout
        while not all(seen and seen[-1] > bound[cf] for cf, seen in self.api.items()):
            assert self.error is None, self.error
            assert time.monotonic() < deadline, {cf: seen[-1:] for cf, seen in self.api.items()}
            time.sleep(0.1)


def test_five_kills_across_three_servers_with_four_changefeeds(
    fresh_db: FreshDatabase, mariadb: MariaDB, etcd: EtcdServer, apache_kafka: ApacheKafka, tmp_path: Path
) -> None:
    db = fresh_db
    work = Workload(db, tables=3, seed=15, ddl_every=200)
    work.create()
    cluster = tmp_path.name[-30:]
    args = ("--pd", etcd.endpoint, "--cluster-id", cluster, "--session-ttl", str(TTL))
    servers = [SparkServer(tmp_path / n, mariadb.port or 0, args=args) for n in ("a", "b", "c")]
    for s in servers:
        s.root.mkdir()
    sinks = {
        "canal": f"file://{tmp_path / 'canal'}?protocol=canal-json&enable-tidb-extension=true&flush-interval=2s",
        "csv": f"file://{tmp_path / 'csv'}?protocol=csv&flush-interval=2s",
        "one-table": f"file://{tmp_path / 'one'}?protocol=canal-json&flush-interval=2s",
    }
    topic = f"{db.name}-ha"
    sinks_all = {**sinks, "kafka": f"kafka://{apache_kafka.bootstrap}/{topic}?protocol=simple&partition-num=3"}
    one_table = tmp_path / "one.toml"
    one_table.write_text(f'[filter]\nrules = ["{db.name}.{work.names[0]}"]\n')
    bg = Background(Paced(work))
    failovers: list[tuple[str, float, float]] = []  # victim, resumed after, caught up after (s)
    started = time.monotonic()
    try:
        for s in servers:
            s.start()
        for cf, uri in sinks_all.items():
            extra = ("--config", str(one_table)) if cf == "one-table" else ()
            r = servers[2].cli("create", "-c", cf, "--sink-uri", uri, *extra)  # forwarded to the owner
            assert r.returncode == 0, r.stderr + r.stdout
        with Watch(servers, sinks, list(sinks_all)) as watch:
            watch.wait_all_past(clock_tso(), 180)
            bg.thread.start()
            for kill in range(KILLS):
                watch.wait_all_past(clock_tso(), 120)  # every changefeed is replicating the workload
                boss = owner(servers)
                victim = boss if kill % 2 == 0 else next(s for s in servers if s is not boss)
                since, at_kill = clock_tso(), watch.latest()
                victim.kill()
                killed = time.monotonic()
                owner([s for s in servers if s is not victim], timeout=RESUME_BOUND_S)
                watch.wait_all_past(at_kill, RESUME_BOUND_S * 2)
                resumed = time.monotonic() - killed
                watch.wait_all_past(since, CAUGHT_UP_BOUND_S * 2)
                caught_up = time.monotonic() - killed
                failovers.append(("owner" if victim is boss else "non-owner", resumed, caught_up))
                log.info("kill %d (%s): every changefeed resumed after %.1fs, past the kill after %.1fs", kill,
                         *failovers[-1])  # fmt: skip
                victim.start()
                assert bg.error is None, bg.error
            # balance by count: the restarted node got its share back; then drain one non-owner under load
            balanced = wait_spread(servers, lambda counts: sorted(counts) == [1, 1, 2])
            boss = owner(servers)
            ids = {c["address"]: c["id"] for c in httpx.get(boss.url + "/api/v2/captures", timeout=10).json()["items"]}
            drained = ids[f"127.0.0.1:{next(s for s in servers if s is not boss).port}"]
            drain_until_empty(boss.url, drained)
            after_drain = wait_spread(servers, lambda counts: sorted(counts) == [2, 2])
            assert drained not in after_drain.values(), after_drain
            watch.wait_all_past(clock_tso(), 120)  # every changefeed goes on replicating where it moved
            bg.stop.set()
            bg.thread.join(60)
            assert bg.error is None, bg.error
            end = now_tso(db)
            watch.wait_all_past(end, 240)
            for w in watch.checkpoints.values():
                w.wait(end, 60)
            assert watch.error is None, watch.error
        for f in watch.files.values():
            f.poll()  # a last round over the final files, once the watch thread has stopped
        states = {cf: owner(servers).changefeed(cf)["state"] for cf in sinks_all}
    finally:
        bg.stop.set()
        for s in servers:
            s.stop()
    print(f"cluster kills: {bg.steps} workload steps in {time.monotonic() - started:.0f}s; failovers (victim, "
          "resumed s, caught up s): " + ", ".join(f"{v} {r:.1f} {c:.1f}" for v, r, c in failovers)
          + f"; placed after the kills {sorted(balanced.items())}, after draining {drained}: "
          f"{sorted(after_drain.items())}")  # fmt: skip
    assert states == dict.fromkeys(sinks_all, "normal"), states
    assert [v for v, _, _ in failovers] == ["owner", "non-owner"] * 2 + ["owner"]
    assert all(r <= RESUME_BOUND_S and c <= CAUGHT_UP_BOUND_S for _, r, c in failovers), failovers
    assert bg.steps > 100

    want = work.expected()
    for cf, uri in sinks.items():
        _, got = replay(uri)
        names = [f"{db.name}.{work.names[0]}"] if cf == "one-table" else list(want)
        for name in names:
            assert got.get(name, {}) == want[name], (cf, name)
        if cf == "one-table":
            assert set(got) <= set(names), (cf, set(got))
        assert watch.checkpoints[cf].monotonic, (cf, watch.checkpoints[cf].seen)
        assert not watch.files[cf].overwritten, (cf, watch.files[cf].overwritten)
    for cf, seen in watch.api.items():
        assert seen == sorted(seen), (cf, seen)
    twice = {k: v for k, v in commit_ts_by_change(tmp_path / "canal").items() if len(v) > 1}
    assert not twice, list(twice.items())[:5]

    topics = {t: read_topic(apache_kafka.bootstrap, t) for t in (topic,)}
    summary, got = replay_partitions(topics, "simple", {})
    for name, rows in want.items():
        assert got.get(name, {}) == rows, ("kafka", name)
    assert summary.pending == 0
    by_change: dict[tuple[Any, ...], set[int]] = defaultdict(set)
    for schema, table, ts, op, before, after in decoded_rows(topics[topic], "simple", {}):
        by_change[(schema, table, op, before, after)].add(ts)
    twice = {k: v for k, v in by_change.items() if len(v) > 1}
    assert not twice, list(twice.items())[:5]


def wait_spread(servers: list[SparkServer], ok: Callable[[list[int]], bool], timeout: float = 60) -> dict[str, str]:
    """changefeed -> capture (``GET /api/v2/processors``) once the per-capture counts satisfy ``ok``."""
    deadline = time.monotonic() + timeout
    while True:
        items = httpx.get(owner(servers).url + "/api/v2/processors", timeout=10).json()["items"]
        placed = {p["changefeed_id"]: p["capture_id"] for p in items}
        counts = [list(placed.values()).count(c) for c in set(placed.values())]
        if "" not in placed.values() and ok(counts):
            return placed
        assert time.monotonic() < deadline, placed
        time.sleep(0.5)

