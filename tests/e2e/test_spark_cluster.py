"""`cdc server --spark-master spark://...` on a real standalone cluster (a master and two workers started from the
pyspark package's own scripts): a storage changefeed under a mixed workload with DDL replays equal to upstream,
and its tasks ran in executors under the workers' own work dirs, with the relay chunks shipped inside the tasks
(``tests/integration/pipeline/test_relay_shipping.py`` shows those decode with the driver's disk gone)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.devtools.spark_cluster import SparkCluster
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.replay import replay
from tests.integration.pipeline.server import CheckpointWatch, SparkServer, Workload, now_tso

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SparkCluster]:
    c = SparkCluster(tmp_path / "spark", workers=2).start()
    try:
        yield c
    finally:
        c.stop()


def test_a_changefeed_on_a_standalone_cluster_replays_equal(
    fresh_db: FreshDatabase, mariadb: MariaDB, cluster: SparkCluster, tmp_path: Path
) -> None:
    db = fresh_db
    work = Workload(db, tables=3, ddl_every=25)
    work.create()
    (tmp_path / "server").mkdir()
    server = SparkServer(tmp_path / "server", mariadb.port or 0, spark_master=cluster.url)
    sink_uri = f"file://{tmp_path / 'sink'}?protocol=canal-json&enable-tidb-extension=true&flush-interval=2s"
    try:
        server.start()
        r = server.cli("create", "-c", "on-cluster", "--sink-uri", sink_uri)
        assert r.returncode == 0, r.stderr
        for i in range(150):
            work.step(i)
        end = now_tso(db)
        watch = CheckpointWatch(ExternalStorage.from_uri(sink_uri))
        watch.wait(end, 300)
        state = server.changefeed("on-cluster")
    finally:
        server.stop()
    assert state["state"] == "normal", state
    _, got = replay(sink_uri)
    for name, rows in work.expected().items():
        assert got.get(name, {}) == rows, name
    # the work ran in executors of both workers, each in its own directory
    ran = [w for w in cluster.workers if list((w.dir / "work").glob("app-*/*/stderr"))]
    assert len(ran) == 2, [list((w.dir / "work").rglob("*"))[:5] for w in cluster.workers]
    # and the relay chunks reached them inside the tasks, not as paths on the driver's disk
    spec = json.loads((server.data_dir / "changefeeds" / "default" / "on-cluster" / "spec.json").read_text())
    assert spec["ship_relay"] is True
