"""This capture's share of a cluster's changefeeds: the runner of the ones placed here, fenced by the placement
keys (a changefeed is claimed before its query starts and released after it stopped)."""

from __future__ import annotations

import logging
import threading

from sparkcdc.changefeed.info import ChangefeedInfo
from sparkcdc.changefeed.runner import ChangefeedRunner, RunnerStatus
from sparkcdc.errors import SparkcdcError
from sparkcdc.server.placement import EtcdPlacement

log = logging.getLogger(__name__)

ERR_RUNNING_ELSEWHERE = "CDC:ErrChangefeedRunningElsewhere"


class Executor:
    def __init__(self, runner: ChangefeedRunner, placement: EtcdPlacement) -> None:
        self.runner = runner
        self.placement = placement
        self._running: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def start(self, info: ChangefeedInfo, checkpoint_ts: int) -> None:
        """Raises SparkcdcError (retryable) when another capture still holds the changefeed."""
        key = (info.namespace, info.id)
        with self._lock:
            if key in self._running:
                return
            holder = self.placement.claim(*key)
            if holder is not None:
                raise SparkcdcError(f"changefeed {info.namespace}/{info.id} still runs on capture {holder}",
                                    code=ERR_RUNNING_ELSEWHERE, retryable=True)  # fmt: skip
            self._running.add(key)
        log.info("changefeed=%s/%s runs on this capture from checkpoint %d", info.namespace, info.id, checkpoint_ts)
        try:
            self.runner.start(info, checkpoint_ts)
        except BaseException:
            with self._lock:
                self._running.discard(key)
            self.placement.release(*key)
            raise

    def stop(self, namespace: str, changefeed_id: str) -> None:
        with self._lock:
            if (namespace, changefeed_id) not in self._running:
                return
            self._running.discard((namespace, changefeed_id))
        self.runner.stop(namespace, changefeed_id)
        try:
            self.placement.release(namespace, changefeed_id)
        except SparkcdcError as e:  # it goes with this capture's lease
            log.warning("changefeed=%s/%s: releasing it: %s", namespace, changefeed_id, e)

    def status(self, namespace: str, changefeed_id: str) -> RunnerStatus | None:
        if (namespace, changefeed_id) not in self._running:
            return None
        return self.runner.status(namespace, changefeed_id)

    def stop_all(self) -> None:
        """Stop every changefeed here: this capture may lose its session, and with it the placement keys."""
        with self._lock:
            keys = sorted(self._running)
        for namespace, changefeed_id in keys:
            log.info("changefeed=%s/%s: stopped on this capture", namespace, changefeed_id)
            self.stop(namespace, changefeed_id)

    def running(self) -> set[tuple[str, str]]:
        with self._lock:
            return set(self._running)
