"""Start Spark's JVM so that only the driver process decides when Spark stops.

PySpark starts the JVM (the py4j gateway) as a child in the driver's process group with only SIGINT ignored.
A terminal's Ctrl-C or a ``kill -TERM -<pgid>`` (how terminals and service managers stop a program) then also
reaches the JVM: SIGTERM runs its shutdown hooks, which stop the SparkContext under the running micro-batch,
and every py4j call and accumulator connection of the driver fails at once (thousands of tracebacks while
``cdc server`` was still stopping its changefeeds in order). So the JVM is started in its own session, out of
reach of signals sent to the driver's process group, and ignores SIGINT, SIGTERM and SIGHUP even when a
service manager signals every process it started (systemd's default). Python workers the JVM starts directly
inherit those dispositions. The JVM still exits with the driver: it stops when its stdin (a pipe from the
driver) closes, also after ``kill -9`` of the driver.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from typing import Any

log = logging.getLogger(__name__)

DRIVER_OWNED_SIGNALS = ("INT", "TERM", "HUP")


def ensure_detached_gateway(conf: dict[str, str], hold_fds: tuple[int, ...] = ()) -> None:
    """Start the JVM for ``conf`` (``spark.master`` and ``spark.app.name`` included) in its own session,
    ignoring ``DRIVER_OWNED_SIGNALS``, and create the SparkContext on it, unless this process already has a
    JVM (then the SparkSession builder reuses it as it is). The JVM inherits ``hold_fds`` and keeps them open
    until it exits: ``cdc server`` passes its data-dir lock, so after a ``kill -9`` of the server no new server
    takes the data dir while the old JVM (which outlives the driver for a moment) may still commit a batch.
    Raises what SparkContext raises."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return  # a JVM started earlier, or one that started us (spark-submit): not ours to change
    spark_conf = SparkConf(loadDefaults=False)
    for k, v in conf.items():
        spark_conf.set(k, v)
    popen_kwargs = {"start_new_session": True, "pass_fds": hold_fds}
    gateway = launch_gateway(spark_conf, popen_kwargs=popen_kwargs)  # type: ignore[no-untyped-call]
    ignore_shutdown_signals(gateway.jvm)
    SparkContext(conf=spark_conf, gateway=gateway)


def ignore_shutdown_signals(jvm: Any) -> None:
    """Make the JVM ignore ``DRIVER_OWNED_SIGNALS`` (no shutdown hooks on them; children inherit SIG_IGN)."""
    for name in DRIVER_OWNED_SIGNALS:
        try:
            jvm.sun.misc.Signal.handle(jvm.sun.misc.Signal(name), jvm.sun.misc.SignalHandler.SIG_IGN)
        except Exception as e:  # a JVM without sun.misc.Signal: the separate session still shields it
            log.debug("cannot ignore SIG%s in the JVM: %s", name, e)


def stop_gateway(timeout: float = 30.0) -> None:
    """End the JVM this process started (after ``SparkSession.stop``): close its stdin, as the driver's exit
    would, and wait for it, so Spark's processes are gone when the caller says it stopped. A later session
    starts a new JVM."""
    from pyspark import SparkContext

    gateway: Any = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is None:  # not ours (PYSPARK_GATEWAY_PORT) or none
        return
    try:
        gateway.shutdown()
    except Exception as e:  # already unreachable: closing stdin still ends it
        log.debug("py4j gateway shutdown: %s", e)
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        log.warning("Spark's JVM (pid %d) did not exit within %.0fs of its stdin closing; killing it", proc.pid,
                    timeout)  # fmt: skip
        proc.kill()
        proc.wait()
    SparkContext._gateway = None
    SparkContext._jvm = None
    _wait_session_empty(proc.pid, time.monotonic() + timeout)


def _wait_session_empty(sid: int, deadline: float) -> None:
    """Wait until no process of session ``sid`` (the JVM's: PySpark's daemons and workers, which exit once the
    JVM closed their pipes) is left; Linux only (``/proc``), a no-op elsewhere."""
    while time.monotonic() < deadline and _session_members(sid):
        time.sleep(0.05)


def _session_members(sid: int) -> list[int]:
    members = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        if int(fields[3]) == sid and fields[0] != b"Z":
            members.append(int(entry))
    return members
