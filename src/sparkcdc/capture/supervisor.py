"""Binlog capture supervision for ``cdc server``: the puller thread of this server, restarted after retryable failures.

One capture per server pulls the upstream binlog into ``<data-dir>/capture/relay``. In a cluster the owner's capture
leads (allocates commit-ts, publishes how far its relay log is durable) and every other server's follows it, so any
server can run any changefeed at once (``sparkcdc.changefeed.runner.SharedCaptureState``). No Spark here: the
changefeed runner only starts, stops and asks this.
"""

from __future__ import annotations

import logging
import socket
import sqlite3
import threading
import time
import zlib
from pathlib import Path
from typing import Any

from sparkcdc.capture.position import BinlogPosition
from sparkcdc.capture.puller import BOOTSTRAP_FILE
from sparkcdc.capture.relay_log import Progress, RelayLog
from sparkcdc.changefeed.runner import SharedCaptureState
from sparkcdc.errors import SparkcdcError, UpstreamError
from sparkcdc.mysql.target import MysqlTarget

log = logging.getLogger(__name__)


class CaptureThread:
    """Runs the upstream's puller in the server process; restarts it after retryable failures.

    In a cluster (``shared``) it either leads (``follow=False``, on the owner: allocates commit-ts, stores its
    reservations and publishes how far its relay log is durable) or follows the leader's published position
    (every other server), so that each server holds the same relay log and can run any changefeed at once."""

    PUBLISH_INTERVAL_S = 0.1

    def __init__(self, upstream_uri: str, capture_dir: Path, segment_bytes: int = 256 << 20,
                 shared: SharedCaptureState | None = None, follow: bool = False) -> None:  # fmt: skip
        self.args = MysqlTarget.parse(upstream_uri, upstream=True).client_args()
        self.capture_dir = capture_dir
        self.segment_bytes = segment_bytes
        self.shared = shared
        self.follow = follow
        self.stop_event = threading.Event()
        self.error: SparkcdcError | None = None
        self.warning: SparkcdcError | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True, name="capture")
        self.publisher: threading.Thread | None = None
        if shared is not None and not follow:
            self.publisher = threading.Thread(target=self._publish_loop, daemon=True, name="capture-publisher")

    def start(self, timeout: float = 60.0) -> int:
        """Start pulling; wait until the relay log exists. Returns the relay log's bootstrap ts (the oldest
        commit-ts a changefeed can start after). Raises UpstreamError when capture cannot start."""
        self.start_pulling()
        deadline = time.monotonic() + timeout
        while True:
            if self.error is not None:
                raise self.error
            if self.bootstrap_ts():
                return self.bootstrap_ts()
            if time.monotonic() > deadline:
                raise UpstreamError(f"capture did not start within {timeout:.0f}s; check --upstream", retryable=True)
            self.stop_event.wait(0.05)

    def start_pulling(self) -> None:
        """Start pulling without waiting (a follower may wait long for the cluster's first owner)."""
        self.thread.start()
        if self.publisher is not None:
            self.publisher.start()

    def bootstrap_ts(self) -> int:
        """The relay log's bootstrap ts, 0 while it does not exist yet."""
        resolved = self.resolved_ts()
        if not resolved:
            return 0
        marker = self.capture_dir / BOOTSTRAP_FILE
        if not marker.exists():  # a relay log from before the puller wrote it: its first resolved ts is close
            marker.write_text(str(resolved))
        return int(marker.read_text())

    def resolved_ts(self) -> int:
        progress = relay_progress(self.capture_dir)
        return progress.resolved_ts if progress else 0

    def relay_bytes(self) -> int:
        """The relay log's size on disk (its segments)."""
        size = 0
        for seg in (self.capture_dir / "relay").glob("*.seg"):
            try:
                size += seg.stat().st_size
            except FileNotFoundError:  # collected meanwhile
                pass
        return size

    def _loop(self) -> None:
        from sparkcdc.capture import PullerConfig

        backoff = 0.5
        while not self.stop_event.is_set():
            puller = None
            try:
                config = PullerConfig(data_dir=str(self.capture_dir), segment_bytes=self.segment_bytes,
                                      server_id=replica_server_id(self.capture_dir), **self.args)  # fmt: skip
                puller = self._puller(config)
                puller.run(self.stop_event)
                self.warning = None
            except SparkcdcError as e:
                if not e.retryable:
                    # a deposed owner's last heartbeat is refused by the fence: expected, its changefeeds are stopping
                    (log.info if e.code == "CDC:ErrNotOwner" else log.error)("capture stopped: %s", e)
                    self.error = e
                    return
                log.warning("capture interrupted, retrying in %.1fs: %s", backoff, e)
                self.warning = e
                self.stop_event.wait(backoff)
                backoff = min(backoff * 2, 10)
            except Exception as e:  # a bug or an unexpected driver error: fail the changefeeds, keep the server
                log.exception("capture crashed")
                self.error = UpstreamError(f"capture crashed: {type(e).__name__}: {e}")
                return
            finally:
                if puller is not None:
                    try:
                        puller.close()
                    except Exception:
                        log.debug("closing the puller failed", exc_info=True)

    def _puller(self, config: Any) -> Any:
        """A puller from this server's relay log, or, in a cluster, from the shared anchor with the cluster's
        reservations (a relay log already here continues where it is: the anchor only matters at first)."""
        from sparkcdc.capture import Puller, StartPoint

        if self.shared is None:
            return Puller(config, StartPoint.now())
        shared = self.shared
        anchor = shared.anchor()
        if self.follow:
            if anchor is None and relay_progress(self.capture_dir) is None:
                raise UpstreamError("waiting for the cluster's owner to start capturing", retryable=True)
            return Puller(config, StartPoint.at(anchor) if anchor else None, leader=shared)
        if anchor is None:  # the cluster's first capture: where it starts is the anchor
            return Puller(config, StartPoint.now(), on_reserve=shared.reserve, on_start=shared.set_anchor)
        return Puller(config, StartPoint.at(anchor), reserved=shared.reservations(), on_reserve=shared.reserve)

    def _publish_loop(self) -> None:
        """Publish the durable position for the followers; a refused write (no longer the owner) ends it."""
        assert self.shared is not None
        try:
            self.shared.published()  # what the previous owner got to: never publish below it
        except SparkcdcError as e:
            log.warning("capture: reading the published position: %s", e)
        failing = False
        while not self.stop_event.wait(self.PUBLISH_INTERVAL_S):
            p = relay_progress(self.capture_dir)
            if p is None:
                continue
            try:
                self.shared.publish(BinlogPosition(p.binlog_file, p.binlog_pos, p.gtid_state, p.last_tso))
                failing = False
            except SparkcdcError as e:
                if not e.retryable:
                    log.info("capture: no longer publishing its position: %s", e)
                    return
                if not failing:  # once per outage: etcd being away is logged by the capture session too
                    log.warning("capture: publishing its position failed, retrying: %s", e)
                failing = True

    def close(self) -> None:
        self.stop_event.set()
        for thread in (self.thread, self.publisher):
            if thread is not None and thread.is_alive():
                thread.join(30)


def relay_exists(capture_dir: Path) -> bool:
    """Whether a relay log (its index) exists under ``capture_dir``."""
    return (capture_dir / "relay" / "index.db").exists()


def relay_progress(capture_dir: Path) -> Progress | None:
    """The relay log's durable ``Progress`` under ``capture_dir``, None while it does not exist (or is still
    being created)."""
    if not relay_exists(capture_dir):
        return None
    relay = RelayLog(capture_dir)
    try:
        return relay.progress()
    except (SparkcdcError, sqlite3.Error):  # the puller is still creating the index
        return None
    finally:
        relay.close()


def relay_covers(capture_dir: Path, anchor: BinlogPosition | None) -> bool:
    """Whether the relay log here can go on serving a cluster whose capture anchor is ``anchor``: it must start at
    or before the anchor and reach it (the reservations below the anchor are gone, so it cannot be re-pulled
    there). True without an anchor or a relay log."""
    if anchor is None or not relay_exists(capture_dir):
        return True
    progress = relay_progress(capture_dir)
    try:
        start = int((capture_dir / BOOTSTRAP_FILE).read_text())
    except (OSError, ValueError):
        return False
    if progress is None:
        return False
    end = BinlogPosition(progress.binlog_file, progress.binlog_pos)
    return start <= anchor.last_tso and end.key() >= anchor.key()


def relay_anchor(capture_dir: Path, at_or_below: int) -> BinlogPosition | None:
    """The end of the relay log's last transaction at or below ``at_or_below``, with its commit-ts (a capture
    anchor for the cluster: nothing below it is needed again)."""
    relay = RelayLog(capture_dir)
    try:
        txn = relay.position_after(at_or_below)
    finally:
        relay.close()
    return BinlogPosition(txn.binlog_file, txn.binlog_pos, txn.gtid_state, txn.commit_ts) if txn else None


def replica_server_id(capture_dir: Path) -> int:
    """The server_id this capture's binlog connection uses. MariaDB and MySQL drop a replica connection when
    another one connects with the same id, so every capture of an upstream needs its own: a cluster's leader and
    followers, or two clusters. Derived from the host and the capture directory, so a restart keeps it; in
    0x40000000-0x4FFFFFFF, far from the small ids servers are usually given and from ``BDR_SERVER_ID``."""
    return 0x4000_0000 | (zlib.crc32(f"{socket.gethostname()}:{capture_dir.resolve()}".encode()) & 0x0FFF_FFFF)
