"""Fault tolerance of the Kafka sink end to end: MariaDB -> ``cdc server`` -> broker under a continuous workload.

* kill -9 of the server (and its Spark JVM) five times, at random moments and while a batch is on the broker
  but not committed, restarting it each time: the changefeed resumes from its checkpoint, the checkpoint the
  Open API shows never goes back, nothing is lost and a partition's commit-ts goes back only where the
  uncommitted batch is sent again (at-least-once).
* the broker frozen for 15 s (SIGSTOP: it neither answers nor closes its connections, as a hung broker): the
  batch in flight times out after ``write-timeout`` (10 s), the changefeed shows ``warning`` with the Kafka
  error, retries and comes back to ``normal`` once the broker answers; nothing is lost. The frozen broker still
  appends what it had received when it wakes, so the timed-out messages arrive as well as their resend.

Topics are ``{schema}_{table}`` with 3 partitions and the index-value dispatcher, as in test_changefeed_kafka.
"""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.codec.simple.decoder import SimpleDecoder
from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.kafka import Partitions, read_topic
from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.pipeline.progress import read_progress
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.server import Background, SparkServer, StatusWatch, Workload, clock_tso, now_tso
from tests.integration.sink.kafka_replay import (
    Header,
    bootstrap_violations,
    commit_ts_order_violations,
    ddl_on_every_partition,
    headers,
    replay_partitions,
    watermarks_on_every_partition,
)
from tests.support import ThreadWatch

pytestmark = pytest.mark.e2e


log = logging.getLogger(__name__)

KILLS = 5
PAUSE_SECONDS = 15.0


class SentWatch(ThreadWatch):
    """Follows the newest messages of some simple-protocol topics (a plain consumer from their ends) in a thread
    and keeps the largest row commit-ts seen: rows above the committed checkpoint belong to a batch the changefeed
    has sent but not committed."""

    def __init__(self, bootstrap: str, topics: list[str]) -> None:
        super().__init__()
        self.bootstrap = bootstrap
        self.topics = topics
        self.max_row_ts = 0

    def run(self) -> None:
        from confluent_kafka import OFFSET_END, Consumer, TopicPartition

        parse = SimpleDecoder().parse
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "sparkcdc-sent-watch",
                             "enable.auto.commit": False, "fetch.wait.max.ms": 20,
                             "log.connection.close": False})  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not set(self.topics) <= (meta := consumer.list_topics(timeout=10).topics).keys():
                assert time.monotonic() < deadline, f"topics {self.topics} not created within 60s"
                self.stop.wait(0.2)
            consumer.assign([TopicPartition(t, p, OFFSET_END) for t in self.topics for p in meta[t].partitions])
            while not self.stop.is_set():
                for m in consumer.consume(500, 0.05):
                    if m.error() is None and (msg := parse(m.value() or b"")).is_dml:
                        self.max_row_ts = max(self.max_row_ts, msg.commit_ts)
        finally:
            consumer.close()


def create_changefeed(server: SparkServer, db: FreshDatabase, broker: ApacheKafka, cf: str, params: str,
                      tmp_path: Path) -> str:  # fmt: skip
    """A changefeed to 3-partition ``{schema}_{table}`` topics (index-value); returns its default topic."""
    default_topic = f"{db.name}-{cf}-default"
    cfg = tmp_path / "cf.toml"
    dispatcher = f'{{matcher = ["{db.name}.*"], topic = "{{schema}}_{{table}}", partition = "index-value"}}'
    cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n\n[sink]\ndispatchers = [{dispatcher}]\n')
    uri = f"kafka://{broker.bootstrap}/{default_topic}?{params}&partition-num=3"
    created = server.cli("create", "--sink-uri", uri, "--changefeed-id", cf, "--config", str(cfg))
    assert created.returncode == 0, created.stderr + created.stdout
    return default_topic


def read_all(broker: ApacheKafka, db: FreshDatabase, work: Workload, default_topic: str) -> dict[str, Partitions]:
    topics = {f"{db.name}_{n}": read_topic(broker.bootstrap, f"{db.name}_{n}") for n in work.names}
    topics[default_topic] = read_topic(broker.bootstrap, default_topic)
    return topics


def replayed_rows(heads: dict[int, list[Header]]) -> int:
    """Row messages of a topic that repeat one sent before on their partition (at-least-once resends)."""
    rows = [(p, h.fingerprint) for p, hs in heads.items() for h in hs if h.kind == "row"]
    return len(rows) - len(set(rows))


def check_topics(topics: dict[str, Partitions], protocol: str, options: dict[str, Any]) -> tuple[int, int]:
    """TiCDC's delivery rules on every topic, commit-ts going back only where a batch is resent; returns the
    number of resent row messages and of places where a partition's commit-ts goes back (resends begin)."""
    resent = steps_back = 0
    for topic, partitions in topics.items():
        assert len(partitions) == 3, topic
        heads = headers(partitions, protocol, options)
        assert commit_ts_order_violations(heads, allow_replays=True) == [], topic
        assert ddl_on_every_partition(heads, protocol) == [], topic
        assert watermarks_on_every_partition(heads) == [], topic
        if protocol == "simple":
            assert bootstrap_violations(heads) == [], topic
        resent += replayed_rows(heads)
        steps_back += len(commit_ts_order_violations(heads))
    return resent, steps_back


def test_kill_9_during_kafka_workload(
    fresh_db: FreshDatabase, mariadb: MariaDB, apache_kafka: ApacheKafka, tmp_path: Path
) -> None:
    rng = random.Random(2027)
    work = Workload(fresh_db, tables=3, seed=13, ddl_every=150)
    work.create()
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    default_topic = create_changefeed(server, fresh_db, apache_kafka, "cf-kill", "protocol=simple", tmp_path)
    bg = Background(work)
    progress = server.data_dir / "changefeeds" / "default" / "cf-kill" / "progress.json"

    def committed() -> int:
        found = read_progress(progress)
        return found.checkpoint_ts if found is not None else 0

    started = time.monotonic()
    try:
        with StatusWatch(server, "cf-kill") as watch:
            watch.wait_past(clock_tso())
            bg.thread.start()
            with SentWatch(apache_kafka.bootstrap, [f"{fresh_db.name}_{n}" for n in work.names]) as sent:
                since = clock_tso()
                for kill in range(KILLS):
                    # Once the (re)started query committed a batch (the first polls after a restart can show a
                    # newer checkpoint the killed query committed; only one past the kill's time is the new
                    # query's), kill at a random moment or, every other time, as soon as the broker holds rows
                    # above the committed checkpoint (the runner's progress file: the API lags it): a batch sent
                    # but not committed, which the restarted query sends again.
                    watch.wait_past(since)
                    if kill % 2:
                        watch.wait("rows of an uncommitted batch", lambda: sent.max_row_ts > committed(), 60, 0.01)
                    else:
                        watch.wait_polls(rng.randint(0, 20))
                    since = clock_tso()
                    server.kill()
                    server.start()
                    assert bg.error is None, bg.error
                    assert sent.error is None, sent.error
            bg.stop.set()
            bg.thread.join(60)
            assert bg.error is None, bg.error
            end = now_tso(fresh_db)
            state = server.wait_checkpoint("cf-kill", end, timeout=120)
            watch.wait_polls(2)
    finally:
        bg.stop.set()
        bg.thread.join(60)
        server.stop()
    log.info("kill test: %d workload steps, %d checkpoints seen, %.0fs", bg.steps, len(watch.checkpoints),
             time.monotonic() - started)  # fmt: skip
    assert bg.steps > 50
    assert state["checkpoint_ts"] >= end
    assert watch.checkpoints == sorted(watch.checkpoints), watch.checkpoints
    assert watch.checkpoint >= end

    topics = read_all(apache_kafka, fresh_db, work, default_topic)
    summary, got = replay_partitions(topics, "simple", {})
    want = work.expected()
    for name, rows in want.items():
        assert got.get(name, {}) == rows, name
    assert summary.resolved_ts >= end and summary.pending == 0
    resent, steps_back = check_topics(topics, "simple", {})
    log.info("kill test: %d row messages, %d resent, commit-ts goes back at %d places", summary.rows, resent,
             steps_back)  # fmt: skip
    assert resent > 0  # the kills between send and commit made the restarted query send a batch again


def test_broker_paused_during_workload(
    fresh_db: FreshDatabase, mariadb: MariaDB, apache_kafka: ApacheKafka, tmp_path: Path
) -> None:
    params = "protocol=canal-json&enable-tidb-extension=true"
    options = {"enable-tidb-extension": True}
    work = Workload(fresh_db, tables=3, seed=17, ddl_every=150)
    work.create()
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    default_topic = create_changefeed(server, fresh_db, apache_kafka, "cf-pause", params, tmp_path)
    bg = Background(work)
    try:
        with StatusWatch(server, "cf-pause") as watch:
            watch.wait_past(clock_tso())
            bg.thread.start()
            watch.wait_past(clock_tso())  # rows are flowing
            paused = time.monotonic()
            apache_kafka.pause()
            try:
                watch.wait("the pause", lambda: time.monotonic() - paused >= PAUSE_SECONDS, PAUSE_SECONDS + 5)
            finally:
                apache_kafka.resume()
            resumed = time.monotonic()
            watch.wait("warning", lambda: any(s["state"] == "warning" for t, s in watch.seen if t > paused), 60)
            watch.wait("normal again", lambda: watch.seen[-1][1]["state"] == "normal", 120)
            recovered = time.monotonic()
            bg.stop.set()
            bg.thread.join(60)
            assert bg.error is None, bg.error
            end = now_tso(fresh_db)
            server.wait_checkpoint("cf-pause", end, timeout=120)
    finally:
        apache_kafka.resume()  # idempotent; the session's broker must never stay frozen
        bg.stop.set()
        bg.thread.join(60)
        server.stop()
    warned = [(t, s) for t, s in watch.seen if t > paused and s["state"] == "warning"]
    first_warning = warned[0][1]["last_warning"]
    log.info("pause test: warning %.1fs after the pause (%s), normal %.1fs after the resume, warning shown "
             "%.1fs", warned[0][0] - paused, first_warning, recovered - resumed,
             warned[-1][0] - warned[0][0])  # fmt: skip
    assert first_warning["code"] == "CDC:ErrKafkaAsyncSendMessage", first_warning
    assert "Kafka" in first_warning["message"], first_warning
    assert watch.checkpoints == sorted(watch.checkpoints), watch.checkpoints
    assert all(s["state"] in ("normal", "warning") for _, s in watch.seen), watch.seen

    topics = read_all(apache_kafka, fresh_db, work, default_topic)
    summary, got = replay_partitions(topics, "canal-json", options)
    want = work.expected()
    for name, rows in want.items():
        assert got.get(name, {}) == rows, name
    assert summary.resolved_ts >= end
    resent, steps_back = check_topics(topics, "canal-json", options)
    log.info("pause test: %d row messages, %d resent, commit-ts goes back at %d places", summary.rows, resent,
             steps_back)  # fmt: skip
