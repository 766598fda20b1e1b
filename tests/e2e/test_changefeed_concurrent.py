"""Four changefeeds created at the same moment with the same start-ts on one ``cdc server``, then the server
restarted three times under a workload (each start resumes all four queries at once in a new JVM): no changefeed
ever fails, and every sink replays to the upstream.

Before ``sparkcdc.pipeline.registration``, queries starting together in a fresh JVM could corrupt the Java
HashMap Spark shares between every query of a Python data source; all changefeeds then failed with
``java.io.OptionalDataException`` and every retry failed the same way. In a warm JVM the window is too narrow
to hit, hence fresh server processes. When the race was found it hit at the first start; with the fix reverted
on 2026-11-26 it was not hit in four starts of four queries nor in one of eight, so ten restarts bought no
more than three. What fails without the fix every time is ``tests/integration/pipeline/test_session.py``: it
checks the map's class after concurrent registrations.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.replay import replay
from tests.integration.pipeline.server import Background, CheckpointWatch, Paced, SparkServer, Workload, now_tso

pytestmark = pytest.mark.e2e

PROTOCOLS = ["canal-json", "csv", "canal-json", "csv"]
RESTARTS = 3


def test_four_changefeeds_created_at_once_survive_restarts(
    fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = Workload(fresh_db, tables=3, seed=5, ddl_every=150)
    work.create()
    uris = [f"file://{tmp_path / f'sink{i}'}?protocol={p}&flush-interval=2s" for i, p in enumerate(PROTOCOLS)]
    watches = [CheckpointWatch(ExternalStorage.from_uri(u)) for u in uris]
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    request.addfinalizer(server.kill)  # a failure before the last stop must not leave it running
    tso = httpx.post(f"{server.url}/api/v2/tso", json={}, timeout=10).json()
    start_ts = (int(tso["timestamp"]) << 18) | int(tso["logic_time"])  # the server's: never in its future
    rules = {"filter": {"rules": [f"{fresh_db.name}.*"]}}
    answers: list[tuple[int, str]] = []

    def create(i: int) -> None:
        body = {"changefeed_id": f"cf{i}", "sink_uri": uris[i], "start_ts": start_ts, "replica_config": rules}
        r = httpx.post(f"{server.url}/api/v2/changefeeds", json=body, timeout=60)
        answers.append((r.status_code, r.text))

    def all_normal() -> None:
        states = {f"cf{i}": server.changefeed(f"cf{i}")["state"] for i in range(len(uris))}
        assert set(states.values()) == {"normal"}, (states, server.tail())

    threads = [threading.Thread(target=create, args=(i,)) for i in range(len(uris))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert [code for code, _ in answers] == [200] * len(uris), answers
    paced = Paced(work, 5)  # ~10 transactions/s: each start resumes a bounded backlog
    bg = Background(paced)
    bg.thread.start()
    try:
        for _ in range(RESTARTS):
            for w in watches:
                w.wait(w.poll() + 1, 240, all_normal)
            server.stop()
            server.start()
            assert bg.error is None, bg.error
        for w in watches:
            w.wait(w.poll() + 1, 240, all_normal)
    finally:
        bg.stop.set()
        bg.thread.join(60)
    try:
        assert bg.error is None, bg.error
        end = now_tso(fresh_db)
        for w in watches:
            w.wait(end, 300, all_normal)
    finally:
        server.stop()
    want = work.expected()
    assert paced.done > 20
    for uri, w in zip(uris, watches, strict=True):
        assert w.monotonic, w.seen
        checkpoint, got = replay(uri)
        assert checkpoint >= end
        for name, rows in want.items():
            assert got.get(name, {}) == rows, (uri, name)
