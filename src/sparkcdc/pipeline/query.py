"""Build and start one changefeed's Structured Streaming query: relay source -> bucket shuffle -> storage sink."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from sparkcdc.pipeline.spec import FeedSpec

log = logging.getLogger(__name__)

_REGISTERED: set[int] = set()


def spark_env() -> None:
    """Environment this machine's Spark needs (shared/ENVIRONMENT.md); existing values win."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def build_session(master: str, app_name: str = "sparkcdc", extra: dict[str, str] | None = None) -> Any:
    """A SparkSession for pipelines (UI off, quiet logs)."""
    spark_env()
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stopTimeout", "60s")
    )
    for k, v in (extra or {}).items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def register(spark: Any) -> None:
    """Register the relay source and the storage sink with ``spark`` (once per session)."""
    if id(spark) in _REGISTERED:
        return
    from sparkcdc.pipeline.relay_source import RelaySource
    from sparkcdc.pipeline.storage_sink import StorageSink

    spark.dataSource.register(RelaySource)
    spark.dataSource.register(StorageSink)
    _REGISTERED.add(id(spark))


def start_query(spark: Any, spec: FeedSpec, *, trigger_seconds: float | None = None) -> Any:
    """Write the spec under ``spec.state_dir`` and start the query; returns the StreamingQuery.

    The Spark checkpoint lives in ``<state_dir>/spark``: a restart with it resumes at the last committed batch.
    ``trigger_seconds`` defaults to the sink's flush-interval; ``worker-count`` sets the writer partitions.
    """
    from sparkcdc.pipeline.relay_source import NAME as SOURCE
    from sparkcdc.pipeline.storage_sink import NAME as SINK

    # The JVM resolves a streaming sink's format in the calling thread's *active* session; the server builds
    # its session in another thread, so make it active here or format("sparkcdc_storage") is not found.
    try:
        spark._jvm.org.apache.spark.sql.classic.SparkSession.setActiveSession(spark._jsparkSession)
    except Exception:  # not a classic (JVM) session: nothing to activate
        log.debug("cannot set the active session", exc_info=True)
    register(spark)
    state = Path(spec.state_dir)
    state.mkdir(parents=True, exist_ok=True)
    spec_path = state / "spec.json"
    spec.save(spec_path)
    sink = spec.sink_config()
    interval = trigger_seconds if trigger_seconds is not None else sink.flush_interval
    df = spark.readStream.format(SOURCE).option("spec", str(spec_path)).load()
    df = df.repartition(sink.worker_count, "bucket")
    query = (
        df.writeStream.format(SINK)
        .option("spec", str(spec_path))
        .option("checkpointLocation", str(state / "spark"))
        .queryName(_query_name(spec.changefeed))
        .trigger(processingTime=f"{interval} seconds")
        .start()
    )
    log.info("changefeed=%s query started from %d (trigger %.1fs, %d writers)", spec.changefeed, spec.start_ts,
             interval, sink.worker_count)  # fmt: skip
    return query


def _query_name(changefeed: str) -> str:
    return "cf_" + "".join(c if c.isalnum() else "_" for c in changefeed)
