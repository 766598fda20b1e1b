"""The owner's runner in a cluster (``cdc server --pd``): places each changefeed on a capture and runs it there.

The state machine (``ChangefeedManager``) stays on the owner and sees one runner; this one starts, stops and reads
each changefeed on the capture it is placed on: here through the ``Executor``, elsewhere through that capture's
internal API. Once a second it reconciles with the cluster (``sparkcdc.server.balance``):

- a changefeed whose capture died (its placement key went with the capture's lease) starts on a live capture;
- while two captures' counts differ by more than one, one changefeed moves from the fullest to the emptiest;
- a drained capture (``POST /api/v2/captures/{id}/drain``) hands all its changefeeds on.

A move stops the changefeed between micro-batches first, then starts it on the target at the checkpoint it
reached. A new owner adopts every changefeed still running on a live capture, without restarting it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from sparkcdc.changefeed.info import ChangefeedInfo
from sparkcdc.changefeed.runner import CaptureStats, ChangefeedRunner, RunnerStatus
from sparkcdc.errors import SparkcdcError
from sparkcdc.model.table import TableInfo
from sparkcdc.server import capture_client
from sparkcdc.server.balance import Key, plan
from sparkcdc.server.cluster import EtcdMembership
from sparkcdc.server.executor import Executor
from sparkcdc.server.placement import EtcdPlacement

log = logging.getLogger(__name__)

RECONCILE_INTERVAL_S = 1.0


@dataclass
class _Placed:
    info: ChangefeedInfo
    checkpoint_ts: int
    capture: str | None = None


class ClusterRunner:
    def __init__(self, local: ChangefeedRunner, executor: Executor, membership: EtcdMembership,
                 placement: EtcdPlacement) -> None:  # fmt: skip
        self.local = local
        self.executor = executor
        self.membership = membership
        self.placement = placement
        self._feeds: dict[Key, _Placed] = {}
        self._draining: set[str] = set()
        self._addresses: dict[str, str] = {}  # capture id -> address, as the last look at the cluster saw them
        self._lock = threading.RLock()  # the placements (held briefly: status reads take it every poll)
        self._schedule = threading.RLock()  # one start, stop or reconcile at a time (they may wait on a query)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- ChangefeedRunner ----------------------------------------------------------------------------
    def check_startable(self) -> None:
        self.local.check_startable()

    def start(self, info: ChangefeedInfo, checkpoint_ts: int) -> None:
        """Adopt the changefeed where it still runs, or place it now; an error placing it is raised (the
        changefeed fails with it, as on one server). Later placements are the scheduler's and are retried."""
        key = (info.namespace, info.id)
        placed = _Placed(info, checkpoint_ts)
        with self._schedule:
            live = self._live()
            holder = self.placement.holders().get(key)
            with self._lock:
                self._feeds[key] = placed
                if holder in live:
                    placed.capture = holder
                    log.info("changefeed=%s/%s: running on capture %s; adopted", *key, holder)
                    return
                moves = plan(self._placements(), live, self._draining, first=self.membership.capture_id)
            target = next((m.target for m in moves if m.key == key), self.membership.capture_id)
            try:
                self._run_on(target, placed)
            except BaseException:
                with self._lock:
                    self._feeds.pop(key, None)
                raise

    def stop(self, namespace: str, changefeed_id: str) -> None:
        with self._schedule:
            with self._lock:
                placed = self._feeds.pop((namespace, changefeed_id), None)
            if placed is not None and placed.capture is not None:
                self._stop_on(placed.capture, (namespace, changefeed_id))

    def status(self, namespace: str, changefeed_id: str) -> RunnerStatus | None:
        with self._lock:
            placed = self._feeds.get((namespace, changefeed_id))
            capture = placed.capture if placed is not None else None
        if placed is None or capture is None:
            return None
        try:
            if capture == self.membership.capture_id:
                st = self.executor.status(namespace, changefeed_id)
            else:
                st = capture_client.status(self._address(capture), namespace, changefeed_id)
        except SparkcdcError as e:
            log.debug("changefeed=%s/%s: status from capture %s: %s", namespace, changefeed_id, capture, e)
            return None
        if st is not None:
            placed.checkpoint_ts = max(placed.checkpoint_ts, st.checkpoint_ts)
        return st

    def remove(self, info: ChangefeedInfo) -> None:
        self.local.remove(info)
        for capture in self.membership.captures():
            if capture.id != self.membership.capture_id:
                try:
                    capture_client.remove(capture.address, info)
                except SparkcdcError as e:
                    log.warning("changefeed=%s: removing its state on capture %s: %s", info.id, capture.id, e)

    def current_tso(self) -> int:
        return self.local.current_tso()

    def oldest_retained_tso(self) -> int:
        return self.local.oldest_retained_tso()

    def gc(self, safepoint_ts: int) -> None:
        self.local.gc(safepoint_ts)

    def activate(self) -> None:
        self.local.activate()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="scheduler", daemon=True)
        self._thread.start()

    def suspend(self) -> None:
        """No longer the owner: forget the placements (the changefeeds on other captures keep running; the new
        owner adopts them) and stop the ones here, as this capture may be cut off from etcd."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)
            self._thread = None
        with self._schedule, self._lock:
            self._feeds.clear()
            self._draining.clear()
        self.executor.stop_all()
        self.local.suspend()

    def capture_stats(self) -> CaptureStats | None:
        return self.local.capture_stats()

    def upstream_tables(self, ts: int) -> list[TableInfo] | None:
        return self.local.upstream_tables(ts)

    def ready(self) -> bool:
        return self.local.ready()

    def close(self) -> None:
        self._stop.set()
        self.executor.stop_all()
        self.local.close()

    # -- scheduling ------------------------------------------------------------------------------------
    def drain(self, capture_id: str) -> int:
        """Move every changefeed off ``capture_id``; returns how many it still runs."""
        with self._lock:
            self._draining.add(capture_id)
            return sum(1 for p in self._feeds.values() if p.capture == capture_id)

    def placements(self) -> dict[Key, str | None]:
        with self._lock:
            return self._placements()

    def _placements(self) -> dict[Key, str | None]:
        return {key: p.capture for key, p in self._feeds.items()}

    def _loop(self) -> None:
        while not self._stop.wait(RECONCILE_INTERVAL_S):
            try:
                self.reconcile()
            except Exception as e:  # etcd or a capture away: the next round retries
                log.warning("scheduling changefeeds: %s", e)

    def reconcile(self) -> None:
        with self._schedule:
            live = self._live()
            holders = self.placement.holders()
            with self._lock:
                self._draining &= live
                for key, placed in self._feeds.items():
                    holder = holders.get(key)
                    placed.capture = holder if holder in live else None
                moves = plan(self._placements(), live, self._draining, first=self.membership.capture_id)
                feeds = {m.key: self._feeds[m.key] for m in moves}
            for move in moves:
                placed = feeds[move.key]
                if move.source is not None:
                    log.info("changefeed=%s/%s moves from capture %s to %s", *move.key, move.source, move.target)
                    self._stop_on(move.source, move.key)
                    with self._lock:
                        placed.capture = None
                try:
                    self._run_on(move.target, placed)
                except SparkcdcError as e:  # the next round places it again
                    log.warning("changefeed=%s/%s: starting on capture %s: %s", *move.key, move.target, e)

    def _run_on(self, capture: str, placed: _Placed) -> None:
        info, checkpoint = placed.info, placed.checkpoint_ts
        if capture == self.membership.capture_id:
            self.executor.start(info, checkpoint)
        else:
            capture_client.start(self._address(capture), info, checkpoint)
        with self._lock:
            placed.capture = capture

    def _stop_on(self, capture: str, key: Key) -> None:
        try:
            if capture == self.membership.capture_id:
                self.executor.stop(*key)
            else:
                capture_client.stop(self._address(capture), *key)
        except SparkcdcError as e:
            log.warning("changefeed=%s/%s: stopping on capture %s: %s", *key, capture, e)

    def _live(self) -> set[str]:
        """The live captures' ids; their addresses are kept for the status reads between two looks."""
        addresses = {c.id: c.address for c in self.membership.captures()}
        with self._lock:
            self._addresses = addresses
        return set(addresses)

    def _address(self, capture_id: str) -> str:
        address = self._addresses.get(capture_id)
        if address is not None:
            return address
        raise capture_client.CaptureUnreachable(f"capture {capture_id} is not in the cluster", retryable=True)
