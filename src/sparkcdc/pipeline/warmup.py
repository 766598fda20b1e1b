"""Warm a server's new SparkSession up, so that its first changefeed starts as fast as its later ones.

A session's first streaming query pays for much more than its own plan: the JVM loads and compiles the
streaming engine's and the Python data sources' classes, and Spark starts a Python daemon for each kind of
Python work (creating a data source, the tasks, the sink's commit), each importing pyspark and our modules.
Measured on 2 busy cores, a changefeed created on a server up 30 s started its query 8.5 s after create and
checkpointed its first rows 27 s after; its first micro-batch alone took 17 s. ``cdc server`` therefore runs
one micro-batch of a changefeed-shaped query (the relay source, the route shuffle, the sink) when its session
is up, over an empty relay log of its own into the blackhole sink, before it reports itself ready.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from sparkcdc.capture.relay_log import Progress
from sparkcdc.capture.relay_writer import RelayLogWriter
from sparkcdc.errors import SparkcdcError
from sparkcdc.pipeline.progress import CommittedProgress, read_progress
from sparkcdc.pipeline.query import start_query, stop_between_batches
from sparkcdc.pipeline.spec import FeedSpec

log = logging.getLogger(__name__)

WARMUP_TIMEOUT_S = 120.0
_FIRST_TS, _LAST_TS = 1, 2  # the warm-up batch's range (an empty relay log resolved up to _LAST_TS)


def warm_up(spark: Any, work_dir: Path, cancel: threading.Event | None = None,
            timeout: float = WARMUP_TIMEOUT_S) -> CommittedProgress | None:  # fmt: skip
    """Run one micro-batch of a changefeed-shaped query in ``spark``, under ``work_dir`` (emptied first and
    removed after); returns what its commit recorded, or None when ``cancel`` was set first (the server is
    stopping). Raises SparkcdcError when the batch does not commit within ``timeout`` seconds, and what Spark
    raises; either way nothing is left running."""
    shutil.rmtree(work_dir, ignore_errors=True)
    capture = work_dir / "capture"
    relay = RelayLogWriter(capture)
    try:
        relay.flush(Progress(_LAST_TS, _LAST_TS, "", 0, ""))
    finally:
        relay.close()
    spec = FeedSpec(changefeed="warm-up", capture_dir=str(capture), state_dir=str(work_dir / "state"),
                    sink_uri="blackhole://", start_ts=_FIRST_TS, target_ts=_LAST_TS,
                    sink_start_ts=_FIRST_TS)  # fmt: skip
    began = time.monotonic()
    query = start_query(spark, spec, trigger_seconds=0.0)
    try:
        while (committed := read_progress(spec.progress_path)) is None:
            if cancel is not None and cancel.is_set():
                return None
            if not query.isActive:
                raise SparkcdcError(f"the warm-up query stopped: {query.exception()}")
            if time.monotonic() - began > timeout:
                raise SparkcdcError(f"the warm-up query did not commit within {timeout:.0f}s", retryable=True)
            time.sleep(0.05)
    finally:
        stop_between_batches(query, spec)
        shutil.rmtree(work_dir, ignore_errors=True)
    log.info("Spark session warmed up in %.1fs", time.monotonic() - began)
    return committed
