"""The whole path: real MariaDB upstream -> puller -> our changefeed (Spark) -> storage (file://) ->
`cdc storage-consumer` -> MariaDB downstream -> `cdc check` reports zero difference.

The workload has add / drop / modify column, rename table, truncate, drop and re-create table and a
hash-partitioned table."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.storage.external import ExternalStorage
from tests.e2e.downstream import storage_consumer
from tests.fixtures.mariadb import FreshDatabase
from tests.fixtures.object_stores import backend_uri
from tests.integration.consumer.servers import run_sql
from tests.integration.pipeline.conftest import PullerThread
from tests.support import CDC, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.slow]

SETUP = [
    "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20), d DECIMAL(10,2), ts DATETIME(3))",
    "CREATE TABLE b (id INT PRIMARY KEY, n BIGINT, bin VARBINARY(8))",
    "CREATE TABLE gone (id INT PRIMARY KEY, s VARCHAR(10))",
    "CREATE TABLE part (id INT PRIMARY KEY, s VARCHAR(10)) PARTITION BY HASH(id) PARTITIONS 3",
]
WORKLOAD = [
    "INSERT INTO a VALUES (1, 'one', 1.50, '2024-01-01 00:00:00.001'), (2, 'two', NULL, NULL), (3, 'x', 3.25, NULL)",
    "INSERT INTO b VALUES (10, 100, 0x00ff), (11, 110, NULL), (12, 120, '')",
    "INSERT INTO gone VALUES (1, 'g1'), (2, 'g2')",
    "INSERT INTO part VALUES (1, 'p1'), (2, 'p2'), (3, 'p3'), (4, 'p4'), (5, 'p5')",
    "BEGIN",
    "UPDATE a SET v = 'uno' WHERE id = 1",
    "UPDATE b SET id = 13 WHERE id = 12",
    "DELETE FROM part WHERE id = 2",
    "COMMIT",
    "ALTER TABLE a ADD COLUMN extra INT NOT NULL DEFAULT 7",
    "INSERT INTO a VALUES (4, 'four', 4.00, NULL, 8)",
    "ALTER TABLE a MODIFY COLUMN v VARCHAR(40)",
    "UPDATE a SET v = 'a much longer value than before' WHERE id = 2",
    "ALTER TABLE a DROP COLUMN d",
    "INSERT INTO a VALUES (5, 'five', NULL, 9)",
    "RENAME TABLE b TO b2",
    "INSERT INTO b2 VALUES (14, 140, 0x01)",
    "UPDATE part SET s = 'moved' WHERE id = 3",
    "TRUNCATE TABLE gone",
    "INSERT INTO gone VALUES (3, 'after-tr')",
    "DROP TABLE gone",
    "CREATE TABLE gone (id INT PRIMARY KEY, s VARCHAR(10), extra INT)",
    "INSERT INTO gone VALUES (7, 'reborn', 1)",
    "UPDATE part SET id = 6 WHERE id = 1",
    "DELETE FROM a WHERE id = 3",
]


@pytest.fixture
def capture(fresh_db: FreshDatabase, tmp_path: Path) -> Iterator[PullerThread]:
    t = PullerThread(fresh_db, tmp_path / "capture")
    try:
        yield t
    finally:
        t.close()


def _uri(host: str, port: int) -> str:
    return f"mysql://root@{host}:{port}/"


@pytest.mark.parametrize("backend", ["file", "s3"])
def test_upstream_changefeed_storage_consumer_check(
    backend: str,
    request: pytest.FixtureRequest,
    spark: Any,
    fresh_db: FreshDatabase,
    capture: PullerThread,
    tmp_path: Path,
    target: MysqlTarget,
) -> None:
    from sparkcdc.pipeline.query import start_query
    from sparkcdc.pipeline.spec import FeedSpec

    db = fresh_db
    db.execute(*SETUP)
    # the downstream starts with the same (empty) tables, as after a snapshot import
    tables = [s.replace("CREATE TABLE ", f"CREATE TABLE `{db.name}`.") for s in SETUP]
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            f"CREATE DATABASE `{db.name}`", *tables)  # fmt: skip
    start = capture.caught_up()
    root = backend_uri(backend, request, f"e2e-{db.name}")
    uri = root + ("&" if "?" in root else "?") + "protocol=canal-json&enable-tidb-extension=true"
    storage = ExternalStorage.from_uri(uri)
    spec = FeedSpec(changefeed="default/e2e", capture_dir=str(capture.data_dir), state_dir=str(tmp_path / "cf"),
                    sink_uri=uri, config={"filter": {"rules": [f"{db.name}.*"]}}, start_ts=start,
                    sink_start_ts=start)  # fmt: skip
    query = start_query(spark, spec, trigger_seconds=0.5)
    try:
        db.execute(*WORKLOAD)
        end = capture.caught_up()

        def reached() -> bool:
            assert query.exception() is None, query.exception()
            raw = storage.read("metadata") or b'{"checkpoint-ts":0}'
            return int(json.loads(raw)["checkpoint-ts"]) >= end

        wait_for(reached, 240, "changefeed checkpoint to pass the workload")
    finally:
        query.stop()
    up = db.server.connect_kwargs()
    env = {**os.environ, "PYTHONPATH": "src"}
    res = storage_consumer(uri, target)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([CDC, "check", "--source", _uri(up["host"], up["port"]), "--target",
                          _uri(target.host, target.port), "--tables", f"{db.name}.*", "--output", "json"],
                         capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    doc = json.loads(res.stdout)
    assert {t["table"] for t in doc["tables"]} == {"a", "b2", "gone", "part"}, doc
    assert res.returncode == 0 and doc["match"], doc
    rows = {t["table"]: t["target_rows"] for t in doc["tables"]}
    assert rows == {"a": 4, "b2": 4, "gone": 1, "part": 4}
