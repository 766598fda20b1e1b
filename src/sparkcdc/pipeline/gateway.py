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

Every Python process that JVM starts (a daemon per kind of Python work, and one process per streaming query for
its source) finds pyspark first in ``$SPARK_HOME/python/lib/pyspark.zip``, which Spark puts at the head of its
``PYTHONPATH``. Python never caches bytecode for a zip, so each of them compiled pyspark again: 0.8 CPU-seconds per
process against 0.16 from the installed package's cached bytecode (the first query of a session starts six or
seven such processes: 13.7 against 8.0 CPU-seconds; a later query start 1.8 against 0.9). When pyspark is the
pip-installed package, the JVM is therefore launched with ``SPARK_HOME`` set to ``pyspark_home`` (see there): the
same Spark without the zips, so its Python processes import the installed pyspark.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DRIVER_OWNED_SIGNALS = ("INT", "TERM", "HUP")


def ensure_detached_gateway(conf: dict[str, str], hold_fds: tuple[int, ...] = (),
                            home_dir: Path | None = None) -> None:  # fmt: skip
    """Start the JVM for ``conf`` (``spark.master`` and ``spark.app.name`` included) in its own session,
    ignoring ``DRIVER_OWNED_SIGNALS``, and create the SparkContext on it, unless this process already has a
    JVM (then the SparkSession builder reuses it as it is). The JVM inherits ``hold_fds`` and keeps them open
    until it exits: ``cdc server`` passes its data-dir lock, so after a ``kill -9`` of the server no new server
    takes the data dir while the old JVM (which outlives the driver for a moment) may still commit a batch.
    With ``home_dir`` (a private directory that lives as long as the JVM) the JVM's ``SPARK_HOME`` is
    ``pyspark_home(home_dir)`` where that applies. Raises what SparkContext raises."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return  # a JVM started earlier, or one that started us (spark-submit): not ours to change
    spark_conf = SparkConf(loadDefaults=False)
    for k, v in conf.items():
        spark_conf.set(k, v)
    popen_kwargs = {"start_new_session": True, "pass_fds": hold_fds}
    home = pyspark_home(home_dir) if home_dir is not None else None
    try:
        if home is not None:  # launch_gateway passes os.environ, and finds spark-submit by SPARK_HOME
            os.environ["SPARK_HOME"] = str(home)
        gateway = launch_gateway(spark_conf, popen_kwargs=popen_kwargs)  # type: ignore[no-untyped-call]
    finally:
        if home is not None:
            del os.environ["SPARK_HOME"]
    ignore_shutdown_signals(gateway.jvm)
    SparkContext(conf=spark_conf, gateway=gateway)


def pyspark_home(home_dir: Path) -> Path | None:
    """``home_dir`` made into the pip-installed pyspark's SPARK_HOME without its ``python/`` (which only holds
    the zips of pyspark and py4j that both are installed beside it anyway): a symlink to every other entry. None
    (the JVM keeps the usual SPARK_HOME) when SPARK_HOME is set (a Spark distribution of its own, whose zips may
    be the only pyspark its workers have) or pyspark is not laid out as pip installs it. Raises OSError when
    ``home_dir`` cannot be written."""
    import importlib.util

    import pyspark

    if "SPARK_HOME" in os.environ:
        return None
    real = Path(pyspark.__file__).resolve().parent
    py4j = importlib.util.find_spec("py4j")
    installed = py4j is not None and py4j.origin is not None and ".zip" not in py4j.origin and ".zip" not in str(real)
    if not installed or not (real / "jars").is_dir() or not (real / "bin" / "spark-submit").exists():
        return None
    home_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    wanted = {entry.name: entry for entry in real.iterdir() if entry.name != "python"}
    for link in home_dir.iterdir():
        if link.name not in wanted or not link.is_symlink() or Path(os.readlink(link)) != wanted[link.name]:
            link.unlink()
    for name, target in wanted.items():
        if not (home_dir / name).is_symlink():
            (home_dir / name).symlink_to(target)
    return home_dir


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
