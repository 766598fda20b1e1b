"""TiCDC's ``protocol=avro`` applied by ``cdc kafka-consumer``: MariaDB -> ``cdc server`` -> Apache Kafka (one topic
per table, schemas in a real registry) -> one consumer per topic -> a second MariaDB; ``cdc check`` compares every
table. Two changefeeds over one workload (every MySQL type avro carries, key-changing updates of a primary and a
composite unique key, ADD/DROP/MODIFY COLUMN mid-stream): DECIMAL and BIGINT UNSIGNED as Avro's decimal and long,
and both as strings. Both have ``enable-tidb-extension`` and ``avro-enable-watermark``, which the consumer needs
(``sparkcdc.consumer.kafka_avro``). The server (and its Spark JVM) is killed with -9 three times while the workload
runs, each time with rows written that no checkpoint covers yet, so the restarted changefeeds send some again. The
first changefeed's topics are then applied through 3x kill -9 of a consumer while it applies; the second's
consumers start while the registry is stopped for 15 s: they warn, retry and resume, nothing lost."""

from __future__ import annotations

import logging
import random
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.devtools.schema_registry import SchemaRegistry
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.pipeline.progress import read_progress
from tests.e2e.avro_readback import TypesWorkload
from tests.e2e.downstream import check, mysql_uri
from tests.e2e.test_changefeed_avro import create
from tests.e2e.test_kafka_consumer import starts, terminate
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.consumer.servers import run_sql
from tests.integration.pipeline.server import CDC, SparkServer, StatusWatch, clock_tso, now_tso, server_env

pytestmark = pytest.mark.e2e

APPLIED = "protocol=avro&enable-tidb-extension=true&avro-enable-watermark=true"
MODES = {
    "precise": APPLIED,
    "string": f"{APPLIED}&avro-decimal-handling-mode=string&avro-bigint-unsigned-handling-mode=string",
}
TABLES = ("types", "pairs")
KILLS = 3  # of a consumer
SERVER_KILLS = 3
STEPS = 150
OUTAGE_SECONDS = 15.0
log = logging.getLogger(__name__)


class Consumers:
    """One ``cdc kafka-consumer`` per table topic of changefeed ``cf``, each with a log of its own. Each applies one
    row per downstream transaction (``--batch-rows 1``): the rows written while the server was down arrive under one
    watermark, so one step releases over a hundred rows, and in 5-row transactions such a step was applied between
    two polls of the row count, leaving no moment to kill the consumer inside it."""

    def __init__(self, kafka: ApacheKafka, registry: str, db: FreshDatabase, target: MysqlTarget,
                 cf: str, tmp_path: Path) -> None:  # fmt: skip
        self.db, self.target = db, target
        self.commands = {
            t: [CDC, "kafka-consumer", "--upstream-uri",
                f"kafka://{kafka.bootstrap}/{cf}_{db.name}_{t}?{MODES[cf]}&partition-num=3",
                "--schema-registry-uri", registry, "--downstream-uri", mysql_uri(target.host, target.port),
                "--consumer-group-id", f"g-{cf}-{t}", "--log-file", str(tmp_path / f"{cf}-{t}.log"), "--quiet",
                "--batch-rows", "1"]
            for t in TABLES
        }  # fmt: skip
        self.logs = {t: tmp_path / f"{cf}-{t}.log" for t in TABLES}
        self.running: dict[str, subprocess.Popen[str]] = {}

    def start(self, table: str) -> subprocess.Popen[str]:
        self.running[table] = p = subprocess.Popen(self.commands[table], stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.PIPE, text=True, env=server_env())  # fmt: skip
        return p

    def text(self, table: str) -> str:
        log = self.logs[table]
        return log.read_text() if log.exists() else ""

    def tail(self, table: str) -> str:
        return self.text(table)[-3000:]

    def until_match(self, timeout: float = 240) -> dict[str, Any]:
        """Wait until ``cdc check`` of the database matches (every consumer still running), then SIGTERM each:
        exit 0, no traceback. Returns the check's document."""
        up = self.db.server.connect_kwargs()
        deadline = time.monotonic() + timeout
        try:
            while not (doc := check(up, self.target, self.db.name)).get("match"):
                for t, p in self.running.items():
                    assert p.poll() is None, (t, p.communicate(), self.tail(t))
                assert time.monotonic() < deadline, (doc, {t: self.tail(t) for t in TABLES})
                time.sleep(1)
        finally:
            self.stop()
        return doc

    def stop(self) -> None:
        for t, p in self.running.items():
            terminate(p, self.logs[t], started_before=starts(self.logs[t]) - 1)
        for t, p in self.running.items():
            _out, err = p.communicate(timeout=60)
            assert p.returncode == 0, (t, err)
            assert "Traceback" not in err + self.logs[t].read_text(), t
        self.running = {}


def outage(registry: SchemaRegistry, consumers: Consumers) -> None:
    """Every consumer started while the registry is stopped: each warns that it retries (it cannot read a row's
    schema), keeps running, and the registry comes back after ``OUTAGE_SECONDS``."""
    registry.stop()
    stopped = time.monotonic()
    for t in TABLES:
        consumers.start(t)
    deadline = stopped + 120
    while not all("retryable error, retrying" in consumers.text(t) for t in TABLES) or (
        time.monotonic() - stopped < OUTAGE_SECONDS
    ):
        for t, p in consumers.running.items():
            assert p.poll() is None, (t, p.communicate(), consumers.tail(t))
        assert time.monotonic() < deadline, {t: consumers.tail(t) for t in TABLES}
        time.sleep(0.5)
    for t in TABLES:
        assert "cannot read schema" in consumers.text(t) and registry.url in consumers.text(t), consumers.tail(t)
    registry.start()
    log.info("registry outage: %.1fs; the consumers warned and retried", time.monotonic() - stopped)


def server_kills(server: SparkServer, db: FreshDatabase, types: TypesWorkload) -> list[bool]:
    """Run the workload in ``SERVER_KILLS + 1`` slices; after each but the last, once the (re)started changefeeds
    have committed a batch, kill -9 the server a few status polls after the slice's last write, and start it again.
    Returns, for each kill, whether ``precise`` had left rows of the slice uncommitted (its progress file, which the
    API lags, below the slice's end)."""
    rng = random.Random(29)
    progress = server.data_dir / "changefeeds" / "default" / "precise" / "progress.json"
    uncovered = []
    bounds = [STEPS * k // (SERVER_KILLS + 1) for k in range(SERVER_KILLS + 2)]
    started = time.monotonic()
    with StatusWatch(server, "precise") as watch:
        for k in range(SERVER_KILLS + 1):
            watch.wait_past(clock_tso())  # the (re)started query runs: it committed a batch after now
            for i in range(bounds[k], bounds[k + 1]):
                types.step(i)
            if k == SERVER_KILLS:
                break
            written = now_tso(db)
            watch.wait_polls(rng.randint(0, 3))
            server.kill()
            committed = read_progress(progress)
            uncovered.append(committed is None or committed.checkpoint_ts < written)
            server.start()
    log.info("%d server kills in %.1fs; rows uncommitted at each: %s", SERVER_KILLS, time.monotonic() - started,
             uncovered)  # fmt: skip
    return uncovered


def downstream_rows(target: MysqlTarget, db: str) -> int:
    """Rows of the downstream ``types`` table, -1 before it exists."""
    if not run_sql(target, f"SHOW TABLES FROM `{db}` LIKE 'types'"):
        return -1
    return int(run_sql(target, f"SELECT COUNT(*) FROM `{db}`.types")[0][0])


def test_kafka_consumer_applies_avro_topics_through_kill_9_and_a_registry_outage(
    fresh_db: FreshDatabase, mariadb: MariaDB, apache_kafka: ApacheKafka, durable_schema_registry: SchemaRegistry,
    target: MysqlTarget, tmp_path: Path,
) -> None:  # fmt: skip
    db, schema_registry = fresh_db, durable_schema_registry
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    try:
        for cf, params in MODES.items():
            create(server, db, apache_kafka, schema_registry.url, cf, params, tmp_path)
        types = TypesWorkload(db)
        types.create()  # after the changefeeds: each table's CREATE TABLE is in its topic
        uncovered = server_kills(server, db, types)
        end = now_tso(db)
        for cf in MODES:
            server.wait_checkpoint(cf, end, timeout=300)
    finally:
        server.stop()
    assert any(uncovered), uncovered  # a kill landed with rows on their way to the broker
    upstream = {t: db.query(f"SELECT COUNT(*) FROM `{t}`")[0][0] for t in TABLES}

    for cf in MODES:
        run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS sparkcdc_consumer",
                f"CREATE DATABASE `{db.name}`")  # fmt: skip
        consumers = Consumers(apache_kafka, schema_registry.url, db, target, cf, tmp_path)
        snapshots: list[int] = []  # downstream rows of ``types`` after each kill
        if cf == "precise":
            for _ in range(KILLS):
                consumer = consumers.start("types")
                deadline = time.monotonic() + 60
                while downstream_rows(target, db.name) in (-1, 0, *snapshots[-1:]) and time.monotonic() < deadline:
                    time.sleep(0.01)  # until it has applied rows since the last kill
                assert consumer.poll() is None, (consumer.communicate(), consumers.tail("types"))
                consumer.kill()
                consumer.wait(30)
                del consumers.running["types"]
                snapshots.append(downstream_rows(target, db.name))
            assert len(set(snapshots)) == KILLS, snapshots  # each run applied more before it was killed
        if cf == "string":
            outage(schema_registry, consumers)
        started = time.monotonic()
        for t in TABLES:
            if t not in consumers.running:
                consumers.start(t)
        doc = consumers.until_match()
        log.info("%s: %s rows applied by %d consumers in %.1fs (cdc check matches); types rows at the kills: %s", cf,
                 upstream, len(TABLES), time.monotonic() - started, snapshots)  # fmt: skip
        assert {t["table"]: t["target_rows"] for t in doc["tables"]} == upstream, (cf, doc)
        if snapshots:
            assert any(s != upstream["types"] for s in snapshots), snapshots  # a kill landed mid-apply
