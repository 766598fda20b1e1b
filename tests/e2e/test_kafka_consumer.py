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

from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.kafka import read_topic
from sparkcdc.mysql.target import MysqlTarget
from tests.e2e.downstream import check, mysql_uri
from tests.e2e.test_consumer_changefeed import CDC, SETUP, WORKLOAD
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.consumer.servers import run_sql
from tests.integration.pipeline.server import SparkServer, now_tso, server_env

pytestmark = pytest.mark.e2e


FLAVOURS = {
    "canal-json": ("protocol=canal-json&enable-tidb-extension=true", ""),
    "simple-json": ("protocol=simple", ""),
    "simple-avro": ("protocol=simple", '[sink.kafka-config.codec-config]\nencoding-format = "avro"\n'),
}


def replicate_to_kafka(db: FreshDatabase, server: SparkServer, tmp_path: Path, uri: str, codec_toml: str,
                       workload: Callable[[Callable[[], None]], None]) -> Path:  # fmt: skip
    """A changefeed of ``db`` to ``uri`` (index-value dispatch) on ``server`` while ``workload`` runs, until its
    checkpoint covers it, then removed; returns the changefeed's config file (the consumer reads it too).
    ``workload`` gets a function that waits until the changefeed's checkpoint covers everything committed upstream
    so far."""
    cfg = tmp_path / "cf.toml"
    dispatcher = f'{{matcher = ["{db.name}.*"], partition = "index-value"}}'
    cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n\n[sink]\ndispatchers = [{dispatcher}]\n' + codec_toml)
    created = server.cli("create", "--sink-uri", uri, "--changefeed-id", "cf", "--config", str(cfg))
    assert created.returncode == 0, created.stderr + created.stdout

    def caught_up() -> None:
        server.wait_checkpoint("cf", now_tso(db))

    workload(caught_up)
    caught_up()
    server.remove("cf")
    return cfg


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_changefeed_kafka_consumer_check(
    flavour: str,
    fresh_db: FreshDatabase,
    spark_server: SparkServer,
    apache_kafka: ApacheKafka,
    target: MysqlTarget,
    tmp_path: Path,
) -> None:
    params, codec_toml = FLAVOURS[flavour]
    db = fresh_db
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            f"CREATE DATABASE `{db.name}`")  # fmt: skip
    topic = f"{db.name}-{flavour}"
    uri = f"kafka://{apache_kafka.bootstrap}/{topic}?{params}&partition-num=3"
    cfg = replicate_to_kafka(db, spark_server, tmp_path, uri, codec_toml, lambda _: db.execute(*SETUP, *WORKLOAD))
    log = tmp_path / "consumer.log"
    doc = consume_until_match(uri, cfg, f"g-{topic}", db, target, log)
    assert {t["table"] for t in doc["tables"]} == {"a", "b2", "gone", "part"}, doc
    assert {t["table"]: t["target_rows"] for t in doc["tables"]} == {"a": 4, "b2": 4, "gone": 1, "part": 4}


def consume_until_match(uri: str, cfg: Path, group: str, db: FreshDatabase, target: MysqlTarget,
                        log: Path) -> dict[str, Any]:  # fmt: skip
    """Run ``cdc kafka-consumer`` on ``uri`` until ``cdc check`` of ``db`` matches, then stop it (SIGTERM: exit 0,
    no traceback); returns the check's document."""
    consumer = subprocess.Popen(
        [CDC, "kafka-consumer", "--upstream-uri", uri, "--downstream-uri", mysql_uri(target.host, target.port),
         "--config", str(cfg), "--consumer-group-id", group, "--log-file", str(log), "--quiet"],
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
        terminate(consumer, log, started_before=0)
        _out, err = consumer.communicate(timeout=60)
    assert consumer.returncode == 0, err
    assert "Traceback" not in err + log.read_text()
    return doc


def terminate(consumer: subprocess.Popen[str], log: Path, *, started_before: int) -> None:
    """SIGTERM to ``consumer`` once it has started (its log has more start lines than ``started_before``): a
    signal that comes while Python is still importing kills it before its handler exists (exit -15)."""
    deadline = time.monotonic() + 60
    while consumer.poll() is None and starts(log) <= started_before and time.monotonic() < deadline:
        time.sleep(0.1)
    consumer.send_signal(signal.SIGTERM)


def starts(log: Path) -> int:
    """How many times a ``cdc kafka-consumer`` writing ``log`` has started consuming."""
    return log.read_text().count("kafka consumer topic=") if log.exists() else 0


def run_consumer_until(command: list[str], log: Path, done: Callable[[], bool], *, timeout: float) -> None:
    """Runs ``command`` (a ``cdc kafka-consumer``) until ``done()`` holds, then stops it as a user would (SIGTERM):
    it must not have exited before, nor take longer than ``timeout`` seconds, and must end with status 0."""
    started = starts(log)
    consumer = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=server_env())  # fmt: skip
    deadline = time.monotonic() + timeout
    try:
        while not done():
            assert consumer.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.2)
    finally:
        terminate(consumer, log, started_before=started)
        _out, err = consumer.communicate(timeout=60)
    assert consumer.returncode == 0, err


def test_kill_9_of_the_consumer_during_apply_loses_and_repeats_nothing(
    fresh_db: FreshDatabase,
    spark_server: SparkServer,
    apache_kafka: ApacheKafka,
    target: MysqlTarget,
    tmp_path: Path,
) -> None:
    """5x kill -9 of cdc kafka-consumer while it applies small transactions: after the last restart catches up,
    cdc check matches (the checkpoint is in the rows' transaction; offsets are committed after it)."""
    db = fresh_db
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            f"CREATE DATABASE `{db.name}`")  # fmt: skip
    topic = f"{db.name}-kill"
    uri = f"kafka://{apache_kafka.bootstrap}/{topic}?protocol=simple&partition-num=3"

    def workload(_: Callable[[], None]) -> None:
        db.execute("CREATE TABLE k (id INT PRIMARY KEY, n BIGINT, v VARCHAR(30))")
        for i in range(300):  # 600 transactions: 10 rows each, and an update of an earlier row
            values = ", ".join(f"({i * 10 + j}, {j}, 'r{i}')" for j in range(10))
            db.execute(f"INSERT INTO k VALUES {values}", f"UPDATE k SET n = n + 100 WHERE id = {i * 5}")
        db.execute("ALTER TABLE k ADD COLUMN extra INT DEFAULT 3", "UPDATE k SET extra = id % 7 WHERE id < 500",
                   "DELETE FROM k WHERE id % 11 = 0")  # fmt: skip

    cfg = replicate_to_kafka(db, spark_server, tmp_path, uri, "", workload)
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
    started = starts(log)
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
        terminate(consumer, log, started_before=started)
        _out, err = consumer.communicate(timeout=60)
    assert consumer.returncode == 0, err
    assert downstream() == final
    assert any(snap and snap != final for snap in applied), (applied, final)  # a kill landed mid-apply
    assert [t["target_rows"] for t in doc["tables"]] == [3000 - 273]


def test_a_consumer_joining_mid_stream_on_a_simple_topic_matches_upstream(
    fresh_db: FreshDatabase,
    spark_server: SparkServer,
    apache_kafka: ApacheKafka,
    target: MysqlTarget,
    tmp_path: Path,
) -> None:
    """The seed's second scenario on a real changefeed: the topic's head is gone (as after retention: the consumer
    reads a copy of every partition from its first message written after a cut, the BOOTSTRAPs before that message
    gone too) and the downstream was restored to the upstream at the cut. The rows the tail starts with cannot be
    decoded yet: they are held, and applied once their schema arrives (``m``'s from the ADD COLUMN's pre-DDL schema,
    ``n``'s from its next BOOTSTRAP), before the DDL and in commit order: ``cdc check`` matches, nothing dropped."""
    db = fresh_db
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            f"CREATE DATABASE `{db.name}`")  # fmt: skip
    topic, tail_topic = f"{db.name}-head", f"{db.name}-tail"
    params = "protocol=simple&partition-num=3"
    codec = "send-bootstrap-interval-in-sec = 1\n"  # continues the [sink] table

    def workload(caught_up: Callable[[], None]) -> None:
        db.execute("CREATE TABLE m (id INT PRIMARY KEY, v VARCHAR(30))",
                   "CREATE TABLE n (id INT PRIMARY KEY, x BIGINT)")  # fmt: skip
        for i in range(1, 41):
            db.execute(f"INSERT INTO m VALUES ({i}, 'm{i}')", f"INSERT INTO n VALUES ({i}, {i * 10})")
        caught_up()
        restore(db, target, ("m", "n"))
        for i in range(101, 111):  # before any BOOTSTRAP in the tail
            db.execute(f"INSERT INTO m VALUES ({i}, 'm{i}')", f"INSERT INTO n VALUES ({i}, {i * 10})")
        db.execute("ALTER TABLE m ADD COLUMN w INT DEFAULT 7", "UPDATE m SET v = CONCAT(v, '!') WHERE id > 100",
                   "DELETE FROM m WHERE id = 5", "UPDATE n SET x = x + 1 WHERE id = 6")  # fmt: skip
        caught_up()  # n's rows so far are sent (with any BOOTSTRAP of n before them: it is before the cut) ...
        time.sleep(1.5)  # ... so n's next rows come in a later batch, past its BOOTSTRAP interval: one precedes them
        db.execute("INSERT INTO n VALUES (200, 2000)", "INSERT INTO m (id, v, w) VALUES (200, 'm200', 1)")

    uri = f"kafka://{apache_kafka.bootstrap}/{topic}?{params}"
    cfg = replicate_to_kafka(db, spark_server, tmp_path, uri, codec, workload)
    held = copy_tail(apache_kafka.bootstrap, topic, tail_topic, after_cut)
    assert held, "the tail must start with rows whose schema the consumer does not know yet"
    log = tmp_path / "consumer.log"
    tail_uri = f"kafka://{apache_kafka.bootstrap}/{tail_topic}?{params}"
    doc = consume_until_match(tail_uri, cfg, f"g-{tail_topic}", db, target, log)
    assert "joined mid-stream: dropped" not in log.read_text()
    assert {t["table"]: t["target_rows"] for t in doc["tables"]} == {"m": 50, "n": 51}


def restore(db: FreshDatabase, target: MysqlTarget, tables: tuple[str, ...]) -> None:
    """The downstream restored to the upstream's current content of ``tables`` (a backup taken at the cut)."""
    conn = target.connect()
    try:
        with db.conn.cursor() as up, conn.cursor() as down:
            for t in tables:
                up.execute(f"SHOW CREATE TABLE `{t}`")
                down.execute(f"USE `{db.name}`")
                down.execute(up.fetchone()[1])
                up.execute(f"SELECT * FROM `{t}`")
                rows = up.fetchall()
                marks = ", ".join(["%s"] * len(rows[0]))
                down.executemany(f"INSERT INTO `{t}` VALUES ({marks})", rows)
        conn.commit()
    finally:
        conn.close()


def after_cut(message: dict[str, Any]) -> bool:
    """Whether a message of the mid-stream test was written after its cut: the ALTER, or a row with an id above 100
    (the CREATEs and rows 1..40 came before)."""
    if message["type"] in ("INSERT", "UPDATE", "DELETE"):
        return int((message.get("data") or message["old"])["id"]) > 100
    return bool(message["type"] == "ALTER")


def copy_tail(bootstrap: str, source: str, dest: str, first: Callable[[dict[str, Any]], bool]) -> int:
    """Every partition of a simple JSON topic ``source`` from its ``first`` message on, byte for byte, into the same
    partition of a new topic ``dest``. Returns on how many partitions the tail starts with a row."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    partitions = read_topic(bootstrap, source)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(dest, len(partitions), 1)])[dest].result()
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    rows_first = 0
    for p, messages in partitions.items():
        docs = [json.loads(m.value) for m in messages]
        start = next(i for i, doc in enumerate(docs) if first(doc))  # the DDL went to every partition
        rows_first += docs[start]["type"] in ("INSERT", "UPDATE", "DELETE")
        for m in messages[start:]:
            producer.produce(dest, m.value, m.key, partition=p)
    assert producer.flush(30) == 0
    return rows_first


@pytest.mark.exclusive  # dial-timeout bounds the time
def test_a_broker_nobody_answers_on_ends_it_in_one_line_after_dial_timeout(
    target: MysqlTarget,
) -> None:
    """Issue 26, item 5: it never exited and printed 779 lines in 45 s. Now the cluster gets dial-timeout (here 3 s;
    10 s by default) to answer at start, then one `Error:` line and exit 1; librdkafka's own lines stay out."""
    from tests.integration.consumer.test_kafka_consumer import closed_port

    port = closed_port()
    started = time.monotonic()
    done = subprocess.run(
        [CDC, "kafka-consumer", "--upstream-uri", f"kafka://127.0.0.1:{port}/t?protocol=simple&dial-timeout=3s",
         "--downstream-uri", mysql_uri(target.host, target.port)],
        capture_output=True, text=True, timeout=120, env=server_env(),
    )  # fmt: skip
    took = time.monotonic() - started
    lines = done.stderr.splitlines()
    assert done.returncode == 1, done.stderr
    (error,) = [line for line in lines if line.startswith("Error:")]
    assert error.startswith(f"Error: [CDC:ErrKafkaNewProducer] no Kafka broker at 127.0.0.1:{port} answered within 3 s "
                            "(dial-timeout): ")  # fmt: skip
    assert len(lines) == 2 and "kafka consumer starting" in lines[0]  # the start line, the error: nothing else
    assert 3 <= took < 3 + 20, took  # the wait, plus Python's start


def test_a_dropped_downstream_stops_it_in_one_line_and_reset_checkpoints_starts_over(
    apache_kafka: ApacheKafka, target: MysqlTarget, tmp_path: Path
) -> None:
    """Issue 26, item 7, for `cdc kafka-consumer`: the same group after a `DROP DATABASE` downstream read nothing (its
    offsets were at the end) and said nothing; now one `Error:` line and exit 1, and `--reset-checkpoints` reads
    the topic again from its first offset."""
    from tests.integration.consumer.test_kafka_consumer import DB, messages, rows, topic_with

    create = (f"CREATE DATABASE {DB}", f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))")
    run_sql(target, f"DROP DATABASE IF EXISTS {DB}", "DROP DATABASE IF EXISTS sparkcdc_consumer", *create)
    topic_with(apache_kafka, "kc-cli-again", messages())
    log = tmp_path / "consumer.log"
    command = [CDC, "kafka-consumer", "--upstream-uri", f"kafka://{apache_kafka.bootstrap}/kc-cli-again?protocol=simple",
               "--downstream-uri", mysql_uri(target.host, target.port), "--consumer-group-id", "g-cli-again",
               "--log-file", str(log), "--quiet"]  # fmt: skip

    def until_applied(extra: list[str]) -> None:
        run_consumer_until([*command, *extra], log, lambda: rows(target) == [(1, "a"), (2, "b")], timeout=60)

    until_applied([])
    run_sql(target, f"DROP DATABASE {DB}", *create)
    run_sql(target, "UPDATE sparkcdc_consumer.checkpoint SET updated_at = updated_at - INTERVAL 1 MINUTE")
    refused = subprocess.run(command, capture_output=True, text=True, timeout=120, env=server_env())
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: [CDC:ErrConsumerCheckpointAhead] "), lines
    assert f"applied rows to {DB}.t " in lines[0] and "empty and was created after" in lines[0]
    assert rows(target) == []
    until_applied(["--reset-checkpoints"])
    assert "--reset-checkpoints: the group g-cli-again reads topic kc-cli-again again from {0: 0}" in log.read_text()


def test_cdc_kafka_consumer_keeps_a_delta_table_from_apache_kafka(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    """Issue 30, item 4, on a real broker: `cdc kafka-consumer --downstream-uri delta://...` keeps the topic's table,
    its commit recording the watermark's commit-ts; `--reset-checkpoints` reads the whole topic again and the lake
    table takes none of it twice (no new commit). Iceberg goes through the same target (`consumer/lake_target.py`;
    tests/integration/consumer/test_lake_consumer.py runs both formats)."""
    from deltalake import DeltaTable

    from sparkcdc.lake.as_of import read_as_of
    from sparkcdc.lake.location import LakeLocation
    from sparkcdc.lake.target import open_tables
    from tests.integration.consumer.test_kafka_consumer import DB, TS, messages, topic_with

    topic_with(apache_kafka, "kc-lake", messages())
    log = tmp_path / "consumer.log"
    uri = f"delta://{tmp_path}/delta"

    def run_until(done: Callable[[], bool], *extra: str) -> None:
        upstream = f"kafka://{apache_kafka.bootstrap}/kc-lake?protocol=simple"
        command = [CDC, "kafka-consumer", "--upstream-uri", upstream, "--downstream-uri", uri,
                   "--consumer-group-id", "g-lake", "--log-file", str(log), "--quiet", *extra]  # fmt: skip
        run_consumer_until(command, log, done, timeout=90)

    tables = open_tables(LakeLocation.from_uri(uri)[0], "g-lake")
    run_until(lambda: tables.applied_ts(DB, "t") == TS + 3)  # the last watermark's commit-ts
    assert sorted(tuple(r.values()) for r in read_as_of(uri, f"{DB}.t", TS + 3).to_pylist()) == [(1, "a"), (2, "b")]
    assert read_as_of(uri, f"{DB}.t", TS).num_rows == 0  # before the first row's commit-ts
    table = f"{tmp_path}/delta/{DB}/t"
    version = DeltaTable(table).version()
    positions = tmp_path / "delta" / ".sparkcdc" / "consumer-g-lake.json"
    before = positions.stat().st_mtime_ns

    def read_again() -> bool:  # the reset deletes the positions; they come back once the topic was read again
        return "reads topic kc-lake again" in log.read_text() and positions.exists() and \
            positions.stat().st_mtime_ns > before  # fmt: skip

    run_until(read_again, "--reset-checkpoints")
    assert DeltaTable(table).version() == version
    assert sorted(tuple(r.values()) for r in read_as_of(uri, f"{DB}.t", TS + 3).to_pylist()) == [(1, "a"), (2, "b")]

