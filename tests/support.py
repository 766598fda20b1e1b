"""Helpers every integration and e2e test shares, and the map of the servers the tests share.

Servers (pytest fixtures from ``tests/fixtures/``, loaded by ``tests/conftest.py``). Each starts on free ports with a
private directory, at most once per pytest process, and is stopped by its PID at the end. ``scripts/test.sh`` runs
pytest-xdist workers: each worker is its own process, so it starts its own copy of every server it uses and no
test sees another worker's data. Nothing a server or a test writes may be shared by path with the other worker
(a server's temporary files go under its directory: ``MariaDB.tmpdir``), and ports come from ``free_port``, which
reserves each for the worker (``sparkcdc.devtools.ports``), so a server can be stopped and started on its port again.

==========================  ========  =================================================================================
fixture                     scope     what a test gets
==========================  ========  =================================================================================
``mariadb``                 session   the upstream MariaDB (binlog ROW/FULL, utf8mb4)
``fresh_db``                test      a new database on it (``.name``, ``.execute``, ``.query``), dropped after
``downstream_server``       session   a second MariaDB; ``target`` / ``source`` are ``MysqlTarget`` s of the two
``apache_kafka``            session   an Apache Kafka 4 broker (KRaft, ``.bootstrap``): use topics of your own
``etcd``                    session   a one-member etcd (``.endpoint``): use a cluster id or key prefix of your own
``moto_server`` ...         session   S3, GCS and Azure Blob emulators; ``sink_root`` runs a test on each backend
``spark``                   session   one in-process SparkSession (``local[2]``)
``pem``                     session   TLS files: a CA, a certificate and key signed by it
``spark_server``            test      the test module's ``cdc server`` (Spark runner, upstream ``mariadb``), see below
==========================  ========  =================================================================================

The shared ``cdc server``. Starting one costs a JVM and a Spark session (10-20 s of CPU on two cores), so a module's
tests share one unless the process's life is what they test (kill -9, signals, restarts: those build their own
``SparkServer``). ``spark_server`` is that server; after each test every changefeed on it is removed, so a test
starts on a server without changefeeds. A test on it:

* names its changefeeds as it likes (the next test gets them removed) and filters them to its own database
  (``[filter] rules = ["<fresh_db.name>.*"]``): the server captures everything the session's MariaDB writes;
* removes its changefeed (``spark_server.remove(cf)``) where it used to stop its server before reading the sink:
  removal stops the query between micro-batches, so nothing is written after it;
* reads ``spark_server.log`` (the whole module's log) instead of a log of its own.

While it is up, the shared server's capture relays everything written to the session's MariaDB, other modules' tests
included: a module that loads hundreds of thousands of rows upstream (the snapshot tests) starts its own servers.

Options for the whole module (extra ``cdc server`` arguments or environment) come from a module-level override of
the ``spark_server_options`` fixture, returning :class:`ServerOptions`.

Parallel runs (``tests/fixtures/scheduling.py``). ``scripts/test.sh`` runs two xdist workers with ``--dist loadfile``:
a module's tests run on one worker, one after another. A test that holds a measured time to a bound takes the
``exclusive`` mark: it waits until no other test runs, and no other test starts until it ends.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self, TypeVar

from sparkcdc.devtools.ports import free_port

__all__ = ["CDC", "ServerOptions", "free_port", "server_env", "wait_for"]

CDC = str(Path(sys.executable).parent / "cdc")

T = TypeVar("T")


@dataclass(frozen=True)
class ServerOptions:
    """Module-wide settings of the shared ``cdc server``: extra command-line arguments and environment."""

    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a ``cdc`` subprocess needs: this interpreter as Spark's Python, Spark on loopback."""
    env = dict(os.environ)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env.update(extra or {})
    return env


def wait_for(
    cond: Callable[[], T],
    timeout: float = 20.0,
    what: str = "condition",
    interval: float = 0.05,
    detail: Callable[[], object] | None = None,
) -> T:
    """Poll ``cond`` until it returns something true, and return that; after ``timeout`` seconds fail with ``what``
    (and ``detail()``, e.g. a server's log tail). ``cond`` may itself assert, to fail at once on a bad state."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            extra = f": {detail()}" if detail is not None else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{extra}")
        time.sleep(interval)


class ThreadWatch:
    """Runs :meth:`run` in a daemon thread while a ``with`` block lasts (a watcher beside the code under test: a
    status poller, a topic follower). What the thread raises is kept in ``error`` for the test to assert on; ``stop``
    is set when the block ends, and ``run`` returns when it sees it."""

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._guarded, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self._thread.join(30)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def run(self) -> None:
        raise NotImplementedError

    def _guarded(self) -> None:
        try:
            self.run()
        except BaseException as e:
            self.error = e
