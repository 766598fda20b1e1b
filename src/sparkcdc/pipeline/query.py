"""Build and start one changefeed's Structured Streaming query: relay source -> (route shuffle ->) the sink."""

from __future__ import annotations

import logging
import os
import struct
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from sparkcdc.local_file import private_dir
from sparkcdc.pipeline.spec import FeedSpec

log = logging.getLogger(__name__)

_INT = struct.Struct("<i")
_SPARK_HASH_SEED = 42  # Spark's Murmur3Hash seed for hash() and hash partitioning


def spark_env() -> None:
    """Environment this machine's Spark needs (shared/ENVIRONMENT.md); existing values win."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


# Why the other defaults: the UI and progress bar cost CPU nobody reads; a changefeed's Spark checkpoint always lives
# on local disk (``<state dir>/spark``), where Hadoop's default FileContext/ChecksumFileSystem path forks
# ``chmod`` and ``readlink`` ~20 times per micro-batch (no native Hadoop library here) and writes ``.crc``
# twins: the FileSystem-based manager on the raw local filesystem forks twice per batch and renames just as
# atomically.
# A stage row is a whole payload (a transaction's rows of a table, or a part of a big one: ``transform.PART_BYTES``),
# and the JVM hands them to the sink's Python writer in Arrow batches of this many rows (Spark's default, 10,000,
# held a task's whole output in memory at once: with a big transaction, several times over); the relay source makes
# its own batches, bounded by rows and bytes (``stage_row.BATCH_ROWS``, ``BATCH_BYTES``).
_SESSION_DEFAULTS = {
    "spark.sql.execution.arrow.maxRecordsPerBatch": "16",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.streaming.stopTimeout": "60s",
    "spark.sql.streaming.checkpointFileManagerClass": (
        "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
    ),
    "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
}
# The driver JVM only plans micro-batches and, in local mode, moves encoded bytes between Python workers: the
# C2 compiler kept recompiling each batch's generated code and was the largest JVM CPU user of an idle
# changefeed; C1 alone cut the JVM's CPU per idle batch from ~0.5 to ~0.23 core-seconds with equal or better
# throughput (benchmarks/changefeed.py). Its live heap is small (~70 MB: payloads are bounded, see
# ``transform.PART_BYTES``), but G1 with the default initial heap (1/64 of the machine's memory) grew to 0.4-0.7 GiB
# resident under a big transaction; the serial collector from a 64 MiB initial heap grows only as the live data
# needs (the maximum stays ``spark.driver.memory``): 0.4 GiB at the peak of a 1M-row transaction
# (benchmarks/big_transaction.py).
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xms64m"
# How often Spark asks the relay source for a new batch; a poll with nothing to plan runs no Spark job.
TRIGGER_POLL_SECONDS = 0.5


def build_session(
    master: str,
    app_name: str = "sparkcdc",
    extra: dict[str, str] | None = None,
    hold_fds: tuple[int, ...] = (),
    home_dir: Path | None = None,
) -> Any:
    """A SparkSession for pipelines; ``extra`` settings win over the defaults, except that
    ``spark.driver.extraJavaOptions`` is appended to ``DRIVER_JAVA_OPTIONS`` and the class archive's option
    (``class_archive``: when one was made). JVM options only take effect when
    this call starts the JVM (the first session of the process); that JVM ignores the signals that stop the
    driver (``gateway``), so stopping Spark is the driver's decision, and holds ``hold_fds`` open while it lives.
    ``home_dir``: a private directory, kept while the JVM lives, for the SPARK_HOME that lets its Python
    processes import the installed pyspark (``gateway.pyspark_home``)."""
    spark_env()
    from pyspark.sql import SparkSession

    from sparkcdc.pipeline.class_archive import java_options
    from sparkcdc.pipeline.gateway import ensure_detached_gateway

    conf = {**_SESSION_DEFAULTS, **(extra or {})}
    java = conf.get("spark.driver.extraJavaOptions", "")
    conf["spark.driver.extraJavaOptions"] = " ".join(o for o in (DRIVER_JAVA_OPTIONS, java_options(), java) if o)
    ensure_detached_gateway({"spark.master": master, "spark.app.name": app_name, **conf}, hold_fds, home_dir)
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in conf.items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def register(spark: Any) -> None:
    """Register the relay source and the sink with ``spark`` (see ``registration`` for why not with
    ``spark.dataSource.register``: the server starts its changefeeds' queries from several threads)."""
    from sparkcdc.pipeline.registration import register_data_source
    from sparkcdc.pipeline.relay_source import RelaySource
    from sparkcdc.pipeline.sink_writer import SinkDataSource

    register_data_source(spark, RelaySource)
    register_data_source(spark, SinkDataSource)


def start_query(spark: Any, spec: FeedSpec, *, trigger_seconds: float | None = None) -> Any:
    """Write the spec under ``spec.state_dir`` and start the query; returns the StreamingQuery.

    The Spark checkpoint lives in ``<state_dir>/spark``: a restart with it resumes at the last committed batch.
    ``trigger_seconds`` (the pause between micro-batches while caught up) defaults to the sink's flush-interval.
    The query's Spark trigger is at most ``TRIGGER_POLL_SECONDS``: the source plans a batch when that pause has
    passed, or at once when the last batch was cut short (DDL barrier, byte cap), so a backlog is read back to
    back instead of one batch per flush-interval. ``worker-count`` bounds the writer tasks; there are no more of
    them than the cluster's task slots, since each task costs fixed work per micro-batch. When the plan is
    ``route_aligned`` the source's partitions are those writer tasks and there is no shuffle (one stage per batch).
    """
    from sparkcdc.pipeline.relay_source import NAME as SOURCE
    from sparkcdc.pipeline.sink_writer import NAME as SINK
    from sparkcdc.pipeline.stage_row import spark_schema

    # The JVM resolves a streaming sink's format in the calling thread's *active* session; the server builds
    # its session in another thread, so make it active here or format("sparkcdc_sink") is not found.
    try:
        spark._jvm.org.apache.spark.sql.classic.SparkSession.setActiveSession(spark._jsparkSession)
    except Exception:  # not a classic (JVM) session: nothing to activate
        log.debug("cannot set the active session", exc_info=True)
    register(spark)
    sink = spec.sink_config()
    interval = trigger_seconds if trigger_seconds is not None else sink.flush_interval
    state = Path(spec.state_dir)
    private_dir(state)  # its spec.json holds the sink URI and its secrets
    spec.drain_path.unlink(missing_ok=True)  # left by a stop that never finished
    spec_path = state / "spec.json"
    writers = min(sink.worker_count, spark.sparkContext.defaultParallelism)
    spec = replace(spec, batch_interval=interval, writer_tasks=writers if route_aligned(spec) else 0)
    spec.save(spec_path)
    df = spark.readStream.format(SOURCE).schema(spark_schema()).option("spec", str(spec_path)).load()
    if not spec.writer_tasks:
        df = df.repartition(writers, writer_route(spark, writers))
    query = (
        df.writeStream.format(SINK)
        .option("spec", str(spec_path))
        .option("checkpointLocation", str(state / "spark"))
        .queryName(_query_name(spec.changefeed))
        .trigger(processingTime=f"{min(interval, TRIGGER_POLL_SECONDS)} seconds")
        .start()
    )
    log.info("changefeed=%s query started from %d (batches every %.1fs when caught up, %d writer tasks for "
             "worker-count %d, %s)", spec.changefeed, spec.start_ts, interval, writers, sink.worker_count,
             "each decoding its own tables" if spec.writer_tasks else "rows shuffled to them by route")  # fmt: skip
    return query


def drain(spec: FeedSpec) -> None:
    """Tell ``spec``'s source to plan no new micro-batch (``stop_between_batches`` does this itself; call it
    first for every query when stopping several, so their running batches finish together). Raises OSError
    when the state dir is not writable."""
    spec.drain_path.touch()


def stop_between_batches(query: Any, spec: FeedSpec | None = None, timeout: float = 60.0) -> None:
    """Stop ``query`` once its running micro-batch (if any) has committed, waiting at most ``timeout`` seconds.

    ``StreamingQuery.stop()`` interrupts a running batch: Spark aborts it, its Python workers die mid-write
    (PySpark prints EOFError tracebacks) and the data files its tasks already wrote stay in the sink, named by
    no index. So the source of ``spec`` (the query's) is drained first: it plans no new batch, where a backlog
    would start the next batch the moment the last one ended and the query was never between batches. The
    query stops when no trigger is active. A batch is bounded by the spec's max_batch_bytes, so waiting for it
    is normally short; after ``timeout`` the batch is interrupted (as safe, only noisier).
    """
    if spec is not None:
        drain(spec)
    try:
        deadline = time.monotonic() + timeout
        while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
            time.sleep(0.02)
        query.stop()
    finally:
        if spec is not None:
            spec.drain_path.unlink(missing_ok=True)


def route_aligned(spec: FeedSpec) -> bool:
    """Whether the source's partitions can be the writer tasks (no shuffle): the sink's encoder routes by table
    (``sink.base.TableRouted``), so a task can pick its tables by name before decoding them. Not with a redo log
    (its writers must start after every chunk's log is durable: the shuffle is that barrier, ``redo_log``), a
    snapshot (a table's copied chunks are read by several tasks and written by one) or a shipped relay log
    (each task would carry the whole batch's bytes)."""
    from sparkcdc.sink.base import TableRouted

    if spec.redo() is not None or spec.snapshot or spec.ship_relay:
        return False
    return isinstance(spec.sink().encoder(spec.sink_config(), spec.sink_context()), TableRouted)


def writer_route(spark: Any, writers: int) -> Any:
    """Column that sends a row of writer ``route`` (the sink encoder's: storage's DML worker bucket, Kafka's
    partition) to writer task ``route % writers`` exactly.

    ``repartition(n, col)`` places a row by ``pmod(hash(col), n)`` (Murmur3), which lets two busy routes
    share one task while another idles. Routing each route through the smallest int that Spark's own hash
    sends to the wanted task keeps the writers balanced and every route in one task.
    """
    from pyspark.sql import functions as F

    keys = route_keys(writers)
    return F.element_at(F.array(*[F.lit(k) for k in keys]), F.pmod(F.col("route"), F.lit(writers)) + 1)


def route_keys(writers: int) -> list[int]:
    """For each writer task ``p``, the smallest int that Spark's ``hash`` (Murmur3 x86 32-bit of the int's 4
    little-endian bytes, seed 42) sends to task ``p`` of ``writers``. Computed here rather than by a Spark
    job: a query start then runs no job before its first batch."""
    import mmh3

    keys: dict[int, int] = {}
    k = 0
    while len(keys) < writers:
        keys.setdefault(mmh3.hash(_INT.pack(k), _SPARK_HASH_SEED) % writers, k)
        k += 1
    return [keys[p] for p in range(writers)]


def _query_name(changefeed: str) -> str:
    return "cf_" + "".join(c if c.isalnum() else "_" for c in changefeed)
