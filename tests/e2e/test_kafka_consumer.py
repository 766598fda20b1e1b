"""The whole Kafka path: MariaDB -> ``cdc server`` -> Kafka changefeed (3 partitions, index-value dispatch) ->
``cdc kafka-consumer`` -> a second MariaDB -> ``cdc check`` reports zero difference, for canal-json with the TiDB
extension, simple JSON and simple Avro; the workload has add/modify/drop column, rename, truncate, drop and
re-create, and a partitioned table."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.consumer.downstream import MysqlTarget
from sparkcdc.devtools.kafka import KafkaBroker
from sparkcdc.devtools.mariadb import MariaDB
from tests.e2e.test_consumer_changefeed import CDC, SETUP, WORKLOAD
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.consumer.servers import downstream_server, run_sql, target  # noqa: F401
from tests.integration.pipeline.server import SparkServer, now_tso, server_env

pytestmark = pytest.mark.e2e

FLAVOURS = {
    "canal-json": ("protocol=canal-json&enable-tidb-extension=true", ""),
    "simple-json": ("protocol=simple", ""),
    "simple-avro": ("protocol=simple", '[sink.kafka-config.codec-config]\nencoding-format = "avro"\n'),
}


def mysql_uri(host: str, port: int) -> str:
    return f"mysql://root@{host}:{port}/"


def check(up: dict[str, Any], target: MysqlTarget, db: str) -> dict[str, Any]:  # noqa: F811
    res = subprocess.run([CDC, "check", "--source", mysql_uri(up["host"], up["port"]), "--target",
                          mysql_uri(target.host, target.port), "--tables", f"{db}.*", "--output", "json"],
                         capture_output=True, text=True, timeout=300, env=server_env())  # fmt: skip
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def replicate_to_kafka(db: FreshDatabase, mariadb: MariaDB, tmp_path: Path, uri: str, codec_toml: str,
                       workload: Callable[[], None]) -> Path:  # fmt: skip
    """A changefeed of ``db`` to ``uri`` (index-value dispatch) while ``workload`` runs, until its checkpoint
    covers it; returns the changefeed's config file (the consumer reads it too)."""
    cfg = tmp_path / "cf.toml"
    dispatcher = f'{{matcher = ["{db.name}.*"], partition = "index-value"}}'
    cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n\n[sink]\ndispatchers = [{dispatcher}]\n' + codec_toml)
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    try:
        created = server.cli("create", "--sink-uri", uri, "--changefeed-id", "cf", "--config", str(cfg))
        assert created.returncode == 0, created.stderr + created.stdout
        workload()
        end = now_tso(db)
        deadline = time.monotonic() + 240
        while (state := server.changefeed("cf"))["checkpoint_ts"] < end:
            assert state["state"] == "normal" and time.monotonic() < deadline, (state, server.tail())
            time.sleep(0.3)
    finally:
        server.stop()
    return cfg


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_changefeed_kafka_consumer_check(
    flavour: str,
    fresh_db: FreshDatabase,
    mariadb: MariaDB,
    kafka_broker: KafkaBroker,
    target: MysqlTarget,  # noqa: F811
    tmp_path: Path,
) -> None:
    params, codec_toml = FLAVOURS[flavour]
    db = fresh_db
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            f"CREATE DATABASE `{db.name}`")  # fmt: skip
    topic = f"{db.name}-{flavour}"
    uri = f"kafka://{kafka_broker.bootstrap}/{topic}?{params}&partition-num=3"
    cfg = replicate_to_kafka(db, mariadb, tmp_path, uri, codec_toml, lambda: db.execute(*SETUP, *WORKLOAD))
    log = tmp_path / "consumer.log"
    consumer = subprocess.Popen(
        [CDC, "kafka-consumer", "--upstream-uri", uri, "--downstream-uri", mysql_uri(target.host, target.port),
         "--config", str(cfg), "--consumer-group-id", f"g-{topic}", "--log-file", str(log), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=server_env(),
    )  # fmt: skip
    up = db.server.connect_kwargs()
    try:
        deadline = time.monotonic() + 120
        while not (doc := check(up, target, db.name)).get("match"):
            assert consumer.poll() is None, (consumer.communicate(), log.read_text())
            assert time.monotonic() < deadline, (doc, log.read_text()[-3000:])
            time.sleep(1)
    finally:
        consumer.send_signal(signal.SIGTERM)
        _out, err = consumer.communicate(timeout=60)
    assert consumer.returncode == 0, err
    assert "Traceback" not in err + log.read_text()
    assert {t["table"] for t in doc["tables"]} == {"a", "b2", "gone", "part"}, doc
    assert {t["table"]: t["target_rows"] for t in doc["tables"]} == {"a": 4, "b2": 4, "gone": 1, "part": 4}


def test_kill_9_of_the_consumer_during_apply_loses_and_repeats_nothing(
    fresh_db: FreshDatabase,
    mariadb: MariaDB,
    kafka_broker: KafkaBroker,
    target: MysqlTarget,  # noqa: F811
    tmp_path: Path,
) -> None:
    """5x kill -9 of cdc kafka-consumer while it applies small transactions: after the last restart catches up,
    cdc check matches (the checkpoint is in the rows' transaction; offsets are committed after it)."""
    db = fresh_db
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            f"CREATE DATABASE `{db.name}`")  # fmt: skip
    topic = f"{db.name}-kill"
    uri = f"kafka://{kafka_broker.bootstrap}/{topic}?protocol=simple&partition-num=3"

    def workload() -> None:
        db.execute("CREATE TABLE k (id INT PRIMARY KEY, n BIGINT, v VARCHAR(30))")
        for i in range(300):  # 600 transactions: 10 rows each, and an update of an earlier row
            values = ", ".join(f"({i * 10 + j}, {j}, 'r{i}')" for j in range(10))
            db.execute(f"INSERT INTO k VALUES {values}", f"UPDATE k SET n = n + 100 WHERE id = {i * 5}")
        db.execute("ALTER TABLE k ADD COLUMN extra INT DEFAULT 3", "UPDATE k SET extra = id % 7 WHERE id < 500",
                   "DELETE FROM k WHERE id % 11 = 0")  # fmt: skip

    cfg = replicate_to_kafka(db, mariadb, tmp_path, uri, "", workload)
    log = tmp_path / "consumer.log"
    command = [CDC, "kafka-consumer", "--upstream-uri", uri, "--downstream-uri", mysql_uri(target.host, target.port),
               "--config", str(cfg), "--consumer-group-id", f"g-{topic}", "--log-file", str(log), "--quiet",
               "--batch-rows", "5"]  # fmt: skip
    with db.conn.cursor() as cur:
        cur.execute("SELECT COUNT(*), SUM(n) FROM k")
        final = tuple(cur.fetchone())

    def downstream() -> tuple[Any, ...]:
        """(rows, SUM(n)) of the downstream table, () before it exists."""
        if not run_sql(target, f"SHOW TABLES FROM `{db.name}`"):
            return ()
        return tuple(run_sql(target, f"SELECT COUNT(*), SUM(n) FROM `{db.name}`.k")[0])

    applied: list[tuple[Any, ...]] = []  # downstream after each kill
    for _ in range(5):
        consumer = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env())
        deadline = time.monotonic() + 30
        while downstream() in ((), *applied[-1:]) and applied[-1:] != [final] and time.monotonic() < deadline:
            time.sleep(0.01)  # until it has applied something since the last kill (or there is nothing left)
        assert consumer.poll() is None, (consumer.communicate(), log.read_text()[-2000:])
        consumer.kill()
        consumer.wait(30)
        applied.append(downstream())
    consumer = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=server_env())  # fmt: skip
    up = db.server.connect_kwargs()
    try:
        deadline = time.monotonic() + 180
        while not (doc := check(up, target, db.name)).get("match"):
            assert consumer.poll() is None, (consumer.communicate(), log.read_text()[-3000:])
            assert time.monotonic() < deadline, (doc, log.read_text()[-3000:])
            time.sleep(1)
    finally:
        consumer.send_signal(signal.SIGTERM)
        _out, err = consumer.communicate(timeout=60)
    assert consumer.returncode == 0, err
    assert downstream() == final
    assert any(snap and snap != final for snap in applied), (applied, final)  # a kill landed mid-apply
    assert [t["target_rows"] for t in doc["tables"]] == [3000 - 273]
