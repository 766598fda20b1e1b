"""Stopping ``cdc server`` as a terminal (Ctrl-C) or a service manager does: SIGINT or SIGTERM to its whole
process group while a workload runs and a micro-batch is in flight. The stop is quiet (no traceback, one
line saying it stopped, exit code 0), the running batch commits, Spark's processes exit with the server, and a
restart resumes with every upstream row in the sink."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.replay import layout_violations, replay, unindexed_data_files
from tests.integration.pipeline.server import (
    CheckpointWatch,
    SparkServer,
    Workload,
    child_sessions,
    now_tso,
    session_members,
)

pytestmark = pytest.mark.e2e

_PLANNED = re.compile(r"latestOffset \d+ -> (\d+)(?: \(behind\))?$")


def planned_batch(trace: Path, after: int) -> int | None:
    """The end of a batch with data the source planned after line ``after`` of ``source.trace``, if any."""
    for line in trace.read_text().splitlines()[after:]:
        m = _PLANNED.search(line)
        if m:
            return int(m.group(1))
    return None


class Steps:
    """The workload, one step at a time from the test's own thread (a step is a few statements)."""

    def __init__(self, work: Workload, timeout: float) -> None:
        self.work = work
        self.done = 0
        self.deadline = time.monotonic() + timeout

    def until(self, cond: Callable[[], Any], what: str) -> Any:
        while not (result := cond()):
            assert time.monotonic() < self.deadline, f"timed out waiting for {what}"
            self.work.step(self.done)
            self.done += 1
            time.sleep(0.02)
        return result


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_process_group_stops_cleanly(
    sig: signal.Signals, fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path
) -> None:
    work = Workload(fresh_db, tables=2, seed=5, ddl_every=400)
    work.create()
    sink = tmp_path / "sink"
    sink_uri = f"file://{sink}?protocol=canal-json&worker-count=2&flush-interval=2s"
    storage = ExternalStorage.from_uri(sink_uri)
    watch = CheckpointWatch(storage)
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    try:
        cfg = tmp_path / "cf.toml"
        cfg.write_text(f'[filter]\nrules = ["{fresh_db.name}.*"]\n')
        created = server.cli("create", "--sink-uri", sink_uri, "--changefeed-id", "cf-sig", "--config", str(cfg))
        assert created.returncode == 0, created.stderr
        start_ts = server.changefeed("cf-sig")["checkpoint_ts"]
        assert server.proc is not None
        proc = server.proc
        steps = Steps(work, 300)
        steps.until(lambda: watch.poll() > start_ts, "the first checkpoint")
        sessions = child_sessions(proc.pid)
        assert sessions, "Spark's JVM should run in a session of its own"
        trace = server.data_dir / "changefeeds" / "default" / "cf-sig" / "source.trace"
        seen = len(trace.read_text().splitlines())
        planned = steps.until(lambda: planned_batch(trace, seen), "a batch in flight")
        os.killpg(proc.pid, sig)
        steps.until(lambda: proc.poll() is not None, "the server to exit")  # the workload goes on meanwhile
        server.proc = None
        assert session_members(sessions) == []
        out = (tmp_path / "server.out").read_text()
        log = (tmp_path / "server.log").read_text()
        assert "Traceback" not in out + log, (out + log)[-6000:]
        assert proc.returncode == 0, log[-3000:]
        assert log.count("cdc server stopped") == 1
        assert f"stopping cdc server ({sig.name})" in log
        assert watch.poll() >= planned  # the batch in flight committed
        assert unindexed_data_files(sink) == []

        server.start()
        try:
            end = now_tso(fresh_db)
            watch.wait(end, 240)
            assert server.changefeed("cf-sig")["state"] == "normal"
        finally:
            server.stop()
    finally:
        server.kill()  # after a failed assertion: nothing left running
    assert watch.monotonic, watch.seen
    checkpoint, got = replay(sink_uri)
    assert checkpoint >= end
    assert steps.done > 20
    for name, rows in work.expected().items():
        assert got.get(name, {}) == rows, name
    assert layout_violations(storage) == []


def test_a_killed_servers_spark_holds_the_data_dir_until_it_exits(mariadb: MariaDB, tmp_path: Path) -> None:
    """kill -9 of the server alone: its JVM (own session) lives on for a moment and could still commit a batch,
    so it keeps the data-dir lock until it exits, and a new server waits for it instead of writing beside it."""
    import fcntl

    server = SparkServer(tmp_path, mariadb.port or 0).start()
    assert server.proc is not None
    deadline = time.monotonic() + 120
    while not (spark := child_sessions(server.proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert spark, "Spark's JVM did not start"
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(30)
    server.proc = None
    fd = os.open(server.data_dir / "LOCK", os.O_RDWR)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the orphaned JVM holds it
        deadline = time.monotonic() + 60
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, "the orphaned JVM kept the data-dir lock for 60s"
                time.sleep(0.05)
        jvm = spark  # the JVM leads its session: its pid is the session id
        assert not set(session_members(spark)) & jvm  # free only once the JVM is gone
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    server.start()  # a restart right after the kill waits for the lock, then runs
    server.stop()
