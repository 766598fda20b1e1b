"""Helpers for pipeline integration tests: a puller thread over the session MariaDB and bounded waits."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sparkcdc.capture import Puller, PullerConfig, RelayLog
from sparkcdc.capture.position import file_seq
from tests.fixtures.mariadb import FreshDatabase
from tests.support import wait_for


class PullerThread:
    """The server's capture thread, as in ``cdc server``: pulls until stopped."""

    def __init__(self, db: FreshDatabase, data_dir: Path) -> None:
        self.db = db
        self.data_dir = data_dir
        self.puller = Puller(PullerConfig(data_dir=str(data_dir), heartbeat_s=0.5, **db.puller_kwargs()))
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True, name="test-puller")
        self.thread.start()
        wait_for(lambda: RelayLog(data_dir).progress() is not None if (data_dir / "relay" / "index.db").exists()
                 else False, 30, "relay log bootstrap")

    def _run(self) -> None:
        try:
            self.puller.run(self.stop_event)
        except BaseException as e:  # surfaced by caught_up()
            self.error = e

    def resolved_ts(self) -> int:
        relay = RelayLog(self.data_dir)
        try:
            return relay.resolved_ts()
        finally:
            relay.close()

    def caught_up(self, timeout: float = 60) -> int:
        """Wait until the relay log holds everything the upstream has written so far; its resolved ts."""

        def healthy() -> None:
            assert self.error is None, self.error

        wait_relay_caught_up(self.db, self.data_dir, healthy, timeout)
        return self.resolved_ts()

    def close(self) -> None:
        self.stop_event.set()
        self.thread.join(30)
        self.puller.close()


def wait_relay_caught_up(db: FreshDatabase, capture_dir: Path, healthy: Callable[[], None], timeout: float) -> None:
    """Wait until the relay log under ``capture_dir`` holds everything ``db``'s server has written so far;
    ``healthy`` raises when the capture failed."""
    file, pos = db.query("SHOW MASTER STATUS")[0][:2]
    target = (file_seq(file), int(pos))

    def done() -> bool:
        healthy()
        relay = RelayLog(capture_dir)
        try:
            p = relay.progress()
        finally:
            relay.close()
        return p is not None and (file_seq(p.binlog_file), p.binlog_pos) >= target

    wait_for(done, timeout, "relay log to catch up", 0.05)


@pytest.fixture
def puller_thread(fresh_db: FreshDatabase, tmp_path: Path) -> Iterator[PullerThread]:
    t = PullerThread(fresh_db, tmp_path / "capture")
    try:
        yield t
    finally:
        t.close()
