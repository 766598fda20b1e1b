"""MariaDB -> ``cdc server`` (Spark runner) -> Kafka sink with TiCDC's ``protocol=avro`` -> Apache Kafka, schemas in
a real Confluent-compatible registry; read back by a consumer nobody here wrote: confluent-kafka's
``AvroDeserializer``.

One server runs two changefeeds over the same workload (every MySQL type the protocol carries, NULLs and extremes,
key-changing updates of a primary and of a composite unique key, DDL mid-stream): one plain (DECIMAL as Avro's
decimal, BIGINT UNSIGNED as a long), one with ``enable-tidb-extension`` and both handling modes ``string``. Each
table's topic rebuilt by key (a tombstone deletes) equals the upstream table, value for value. Then the registry
is stopped for 15 s under a workload (the changefeed shows ``warning``, resumes, nothing is lost), and a schema the
registry refuses fails the changefeed with one clear line.
"""

from __future__ import annotations

import logging
import time
from decimal import Decimal
from pathlib import Path

import pytest

from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.kafka import read_topic
from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.devtools.schema_registry import SchemaRegistry
from sparkcdc.model import tso
from tests.e2e.avro_readback import ReadBack, TypesWorkload, differences, read_back, rebuild, unsigned_bigints
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.server import SparkServer, StatusWatch, Workload, now_tso

pytestmark = pytest.mark.e2e

MODES = {
    "plain": "protocol=avro",
    "ext": "protocol=avro&enable-tidb-extension=true&avro-decimal-handling-mode=string"
    "&avro-bigint-unsigned-handling-mode=string",
}
OUTAGE_SECONDS = 15.0
log = logging.getLogger(__name__)


def create(server: SparkServer, db: FreshDatabase, kafka: ApacheKafka, registry: str, cf: str, params: str,
           tmp_path: Path) -> None:  # fmt: skip
    """An avro changefeed of ``db`` to 3-partition topics ``<cf>_<schema>_<table>`` (index-value dispatcher)."""
    cfg = tmp_path / f"{cf}.toml"
    dispatcher = f'{{matcher = ["{db.name}.*"], topic = "{cf}_{{schema}}_{{table}}", partition = "index-value"}}'
    cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n\n[sink]\ndispatchers = [{dispatcher}]\n')
    uri = f"kafka://{kafka.bootstrap}/{cf}-default?{params}&partition-num=3"
    created = server.cli("create", "--sink-uri", uri, "--changefeed-id", cf, "--config", str(cfg),
                         "--schema-registry", registry)  # fmt: skip
    assert created.returncode == 0, created.stderr + created.stdout


def check_tables(
    db: FreshDatabase, kafka: ApacheKafka, registry: str, cf: str, tables: list[str]
) -> dict[str, ReadBack]:
    """Every table's topic read back with confluent-kafka's deserializer and rebuilt equals the upstream table."""
    target = f"{db.name}_{cf}"
    db.execute(f"CREATE DATABASE `{target}`")
    got = {}
    try:
        for table in tables:
            topic = f"{cf}_{db.name}_{table}"
            partitions = read_topic(kafka.bootstrap, topic, timeout=120)
            assert len(partitions) == 3, topic
            got[table] = back = read_back(registry, topic, partitions)
            rebuild(db, target, table, list(back.rows.values()), unsigned_bigints(db, table))
            assert differences(db, target, table) == [], (cf, table)
            upstream = db.query(f"SELECT COUNT(*) FROM `{table}`")[0][0]
            assert len(back.rows) == upstream, (cf, table)
    finally:
        db.execute(f"DROP DATABASE IF EXISTS `{target}`")
    return got


def test_avro_changefeeds_read_back_by_confluent_deserializer(
    fresh_db: FreshDatabase, mariadb: MariaDB, apache_kafka: ApacheKafka, schema_registry: SchemaRegistry,
    tmp_path: Path,
) -> None:  # fmt: skip
    from confluent_kafka.schema_registry import SchemaRegistryClient

    db = fresh_db
    work = Workload(db, tables=2, ddl_every=30)  # ADD COLUMN ... NOT NULL DEFAULT mid-stream, multi-table txns
    types = TypesWorkload(db)
    work.create()
    types.create()
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    try:
        for cf, params in MODES.items():
            create(server, db, apache_kafka, schema_registry.url, cf, params, tmp_path)
        for i in range(150):
            work.step(i)
            types.step(i)
        end = now_tso(db)
        for cf in MODES:
            server.wait_checkpoint(cf, end, timeout=300)
    finally:
        server.stop()

    tables = [*work.names, "types", "pairs"]
    client = SchemaRegistryClient({"url": schema_registry.url})
    for cf in MODES:
        got = check_tables(db, apache_kafka, schema_registry.url, cf, tables)
        for table in tables:  # TiCDC's subjects; the value schema registered again after each DDL of the table
            assert client.get_versions(f"{cf}_{db.name}_{table}-key") == [1]
        assert len(client.get_versions(f"{cf}_{db.name}_types-value")) == 4  # created, ADD, DROP, MODIFY
        assert got["types"].tombstones > 0 and got["pairs"].tombstones > 0  # deletes and key changes
        assert got["pairs"].key_fields == ["a", "b"]
        values = got["types"].values
        dcs = [v["dc"] for v in values if v["dc"] is not None]
        wrapped = [v["biu"] for v in values if v["biu"] is not None]
        if cf == "plain":
            assert all(isinstance(d, Decimal) for d in dcs)
            assert all(isinstance(b, int) for b in wrapped) and min(wrapped) < 0  # above 2^63-1 wraps negative
            assert not [k for v in values for k in v if k.startswith("_tidb_")]
        else:
            assert all(isinstance(d, str) for d in dcs) and str(2**64 - 1) in wrapped
            ops = {v["_tidb_op"] for t in tables for v in got[t].values}
            assert ops == {"c", "u"}, ops
            for v in values:
                assert v["_tidb_commit_physical_time"] == tso.physical(v["_tidb_commit_ts"]) > 0


def test_registry_outage_warns_and_resumes_then_a_refused_schema_is_retried(
    fresh_db: FreshDatabase, mariadb: MariaDB, apache_kafka: ApacheKafka,
    durable_schema_registry: SchemaRegistry, tmp_path: Path,
) -> None:  # fmt: skip
    """The registry stopped 15 s while DDL needs a new schema: retried, ``warning`` with the registry's error,
    back to ``normal`` once it answers again, every row there. Then a NOT NULL DECIMAL column, which Avro's precise
    decimal cannot give a default (TiCDC's schema), is refused under BACKWARD: as TiCDC, the changefeed shows
    ``warning`` with one ``CDC:ErrAvroSchemaAPIError`` line naming the subject and retries, and once the subject's
    compatibility is NONE it goes on by itself: the refused row is on the topic with its new schema."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    db, registry = fresh_db, durable_schema_registry
    work = Workload(db, tables=2, ddl_every=1000)
    work.create()
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    try:
        create(server, db, apache_kafka, registry.url, "cf", MODES["plain"], tmp_path)
        for i in range(40):
            work.step(i)
        server.wait_checkpoint("cf", now_tso(db))
        with StatusWatch(server, "cf") as watch:
            registry.stop()
            stopped = time.monotonic()
            db.execute("ALTER TABLE w0 ADD COLUMN during VARCHAR(10) DEFAULT 'o'")  # a new schema to register
            for i in range(40, 80):
                work.step(i)
            watch.wait("warning", lambda: any(s["state"] == "warning" for _, s in watch.seen), 120)
            warned = next(s for _, s in watch.seen if s["state"] == "warning")
            assert warned["last_warning"]["code"] == "CDC:ErrAvroSchemaAPIError", warned
            assert registry.url in warned["last_warning"]["message"], warned
            watch.wait("the outage's end", lambda: time.monotonic() - stopped >= OUTAGE_SECONDS, 60)
            registry.start()
            restarted = time.monotonic()
            for i in range(80, 120):
                work.step(i)
            end = now_tso(db)
            watch.wait_past(end, timeout=300)
            assert watch.seen[-1][1]["state"] == "normal", watch.seen[-1]
            assert all(s["state"] in ("normal", "warning") for _, s in watch.seen), watch.seen
            warned_at = next(t for t, s in watch.seen if s["state"] == "warning")
            normal_at = next(t for t, s in watch.seen if t > restarted and s["state"] == "normal")
            log.info("registry outage: warning %.1fs after the stop (%s), normal %.1fs after the restart",
                     warned_at - stopped, warned["last_warning"], normal_at - restarted)  # fmt: skip
        check_tables(db, apache_kafka, registry.url, "cf", work.names)

        subject = f"cf_{db.name}_w1-value"
        with StatusWatch(server, "cf") as watch:
            db.execute("ALTER TABLE w1 ADD COLUMN amount DECIMAL(10,2) NOT NULL DEFAULT 0",
                       "INSERT INTO w1 (id, v) VALUES (900001, 'refused')")  # fmt: skip
            end = now_tso(db)
            watch.wait("warning", lambda: any(s["state"] == "warning" for _, s in watch.seen), 180)
            error = next(s for _, s in watch.seen if s["state"] == "warning")["last_warning"]
            log.info("refused schema: %s", error)
            assert error["code"] == "CDC:ErrAvroSchemaAPIError", error
            assert f"'{subject}'" in error["message"] and "incompatible" in error["message"], error
            assert "\n" not in error["message"] and "Traceback" not in error["message"]
            http = SchemaRegistryClient({"url": registry.url})
            http.set_compatibility(subject, "NONE")
            fixed = time.monotonic()
            watch.wait_past(end, timeout=300)
            assert watch.seen[-1][1]["state"] == "normal", watch.seen[-1]
            assert all(s["state"] in ("normal", "warning") for _, s in watch.seen), watch.seen
            log.info("refused schema: normal again %.1fs after the subject's compatibility was set to NONE",
                     next(t for t, s in watch.seen if t > fixed and s["state"] == "normal") - fixed)  # fmt: skip
        topic = subject.removesuffix("-value")
        last = read_topic(apache_kafka.bootstrap, topic, timeout=120)
        values = [AvroDeserializer(http)(m.value, SerializationContext(topic, MessageField.VALUE))
                  for messages in last.values() for m in messages if m.value]  # each with its writer's schema
        assert [(v["v"], v["amount"]) for v in values if v["id"] == 900001] == [("refused", Decimal("0.00"))]
    finally:
        server.stop()
