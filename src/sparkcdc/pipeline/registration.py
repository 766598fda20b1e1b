"""Register a Python data source so that several streaming queries of it can start at the same time.

``spark.dataSource.register`` wraps the class in a JVM ``PythonFunction`` whose environment is a plain
``java.util.HashMap``. Spark shares that one map, by reference, with every function it derives for the source
(the driver's streaming-source runner, the read and write functions shipped in tasks), and
``PythonStreamingSourceRunner.init`` (Spark 4.3) ``put``s four keys into it on the query's own thread when a
query starts. Two queries starting together insert into the HashMap concurrently; the map can end with a
``size`` that disagrees with its entries, and from then on every task that serializes it writes a corrupt
stream: all queries of the session fail in ``ShuffleMapTask`` deserialisation with
``java.io.OptionalDataException`` at ``java.util.HashMap.readObject``, and so does every restart.
A ``ConcurrentHashMap`` takes concurrent ``put``s and serializes consistently while they happen.
"""

from __future__ import annotations

import threading
from typing import Any

_LOCK = threading.Lock()
_SAFE_MAP = "java.util.concurrent.ConcurrentHashMap"


def register_data_source(spark: Any, source: type) -> None:
    """Register ``source`` (a ``pyspark.sql.datasource.DataSource`` subclass) with ``spark`` unless the session
    already has it registered this way; concurrent calls are serialized. A registration of the same name made
    with ``spark.dataSource.register`` is replaced."""
    from pyspark.sql.udf import _wrap_function

    name = source.name()  # type: ignore[attr-defined]
    with _LOCK:
        if environment_map_class(spark, name) == _SAFE_MAP:
            return
        sc = spark.sparkContext
        jvm = sc._jvm
        wrapped = _wrap_function(sc, source)
        func = jvm.org.apache.spark.api.python.SimplePythonFunction(
            wrapped.command(),
            jvm.java.util.concurrent.ConcurrentHashMap(wrapped.envVars()),
            wrapped.pythonIncludes(),
            wrapped.pythonExec(),
            wrapped.pythonVer(),
            wrapped.broadcastVars(),
            wrapped.accumulator(),
        )
        ds = jvm.org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource(func)
        spark._jsparkSession.dataSource().registerPython(name, ds)


def environment_map_class(spark: Any, name: str) -> str | None:
    """The JVM class of the environment map of the Python data source ``name`` in ``spark``; None when the
    session has no such source."""
    manager = spark._jsparkSession.sessionState().dataSourceManager()
    if not manager.dataSourceExists(name):
        return None
    return str(manager.lookupDataSource(name).dataSourceCls().envVars().getClass().getName())
