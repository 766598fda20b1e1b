"""The pipeline's SparkSession defaults and its routing of sink writer routes (TiCDC DML worker buckets, Kafka
partitions) to writer tasks, on real
Spark (the session fixture is built by ``build_session``, as in ``cdc server``)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sparkcdc.pipeline.query import DRIVER_JAVA_OPTIONS, writer_route
from sparkcdc.pipeline.registration import environment_map_class

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("writers", [1, 2, 3, 5, 16])
def test_every_route_goes_to_writer_route_mod_writers(spark: Any, writers: int) -> None:
    from pyspark.sql import functions as F

    df = spark.range(0, 48).selectExpr("CAST(id AS INT) AS route")
    placed = df.repartition(writers, writer_route(spark, writers)).select("route", F.spark_partition_id().alias("p"))
    assert {(r["route"], r["p"]) for r in placed.collect()} == {(b, b % writers) for b in range(48)}


def test_the_jvm_runs_with_the_driver_options(spark: Any) -> None:
    args = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert all(opt in args for opt in DRIVER_JAVA_OPTIONS.split())
    assert any(a.startswith("-Dderby.system.home=") for a in args)  # the caller's options are kept beside ours


def test_streaming_checkpoints_write_no_crc_files(spark: Any, tmp_path: Any) -> None:
    query = (
        spark.readStream.format("rate").option("rowsPerSecond", 1).load()
        .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination(120)
    names = [p.name for p in (tmp_path / "ckpt").rglob("*")]
    assert "0" in names  # the offsets and commits logs were written
    assert not [n for n in names if n.endswith(".crc")]


def test_concurrent_first_registrations_do_not_collide(spark: Any) -> None:
    from sparkcdc.pipeline import query

    fresh = spark.newSession()  # its own data source registry
    fresh._jvm.org.apache.spark.sql.classic.SparkSession.setActiveSession(fresh._jsparkSession)
    errors: list[BaseException] = []

    def go() -> None:
        try:
            query.register(fresh)
        except BaseException as e:  # collected and asserted below
            errors.append(e)

    try:
        threads = [threading.Thread(target=go) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        spark._jvm.org.apache.spark.sql.classic.SparkSession.setActiveSession(spark._jsparkSession)
    assert errors == []
    for name in ("sparkcdc_relay", "sparkcdc_sink"):
        assert environment_map_class(fresh, name) == "java.util.concurrent.ConcurrentHashMap"


def test_a_plain_registration_is_replaced_by_the_concurrency_safe_one(spark: Any) -> None:
    from sparkcdc.pipeline.ticdc_source import TicdcDataSource, register

    fresh = spark.newSession()
    fresh._jvm.org.apache.spark.sql.classic.SparkSession.setActiveSession(fresh._jsparkSession)
    try:
        fresh.dataSource.register(TicdcDataSource)
        assert environment_map_class(fresh, "ticdc") == "java.util.HashMap"
        register(fresh)
    finally:
        spark._jvm.org.apache.spark.sql.classic.SparkSession.setActiveSession(spark._jsparkSession)
    assert environment_map_class(fresh, "ticdc") == "java.util.concurrent.ConcurrentHashMap"


def test_warm_up_runs_one_batch_and_leaves_nothing_behind(spark: Any, tmp_path: Any) -> None:
    from sparkcdc.pipeline.warmup import warm_up

    work = tmp_path / "warmup"
    (work / "state").mkdir(parents=True)
    (work / "state" / "left-by-a-killed-server").write_text("x")
    before = {q.id for q in spark.streams.active}
    committed = warm_up(spark, work)
    assert committed.checkpoint_ts == 2 and committed.batch_id == 0  # its one batch reached the end of its range
    assert not work.exists()
    assert {q.id for q in spark.streams.active} == before


def test_a_cancelled_warm_up_stops_its_query(spark: Any, tmp_path: Any) -> None:
    from sparkcdc.pipeline.warmup import warm_up

    before = {q.id for q in spark.streams.active}
    stopping = threading.Event()
    stopping.set()  # the server is stopping
    assert warm_up(spark, tmp_path / "warmup", cancel=stopping) is None
    assert not (tmp_path / "warmup").exists()
    assert {q.id for q in spark.streams.active} == before
