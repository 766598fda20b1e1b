"""The JVM ``build_session`` starts is out of reach of signals meant for the driver (its process group) and
ignores SIGINT, SIGTERM and SIGHUP even when sent to it directly (a service manager signalling everything)."""

from __future__ import annotations

import signal
from typing import Any

import pytest

pytestmark = pytest.mark.integration


def _status(pid: int, key: str) -> str:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split()[1]
    raise AssertionError(f"no {key} in /proc/{pid}/status")


def test_jvm_ignores_the_drivers_stop_signals(spark: Any) -> None:
    from pyspark import SparkContext

    gateway: Any = SparkContext._gateway
    jvm_pid = gateway.proc.pid
    with open(f"/proc/{jvm_pid}/stat") as f:
        session = int(f.read().rsplit(")", 1)[1].split()[3])
    assert session == jvm_pid  # a session (and process group) of its own
    ignored = int(_status(jvm_pid, "SigIgn"), 16)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        assert ignored & (1 << (sig - 1)), sig.name
    assert spark.range(3).count() == 3


def test_python_workers_import_the_installed_pyspark_not_the_zip(spark: Any) -> None:
    """Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on its workers' path; Python never caches bytecode
    for a zip, so each worker compiled pyspark anew (``gateway.pyspark_home``)."""

    def where(_: Any) -> Any:
        import pyspark

        yield pyspark.__file__

    found = set(spark.sparkContext.parallelize(range(2), 2).mapPartitions(where).collect())
    assert found and all(".zip" not in path for path in found), found
