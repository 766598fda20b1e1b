"""The server's Prometheus metrics (``GET /metrics``), named as TiCDC's where TiCDC has a metric for the same thing.

TiCDC's, with its labels ``namespace`` and ``changefeed``:

- ``ticdc_owner_checkpoint_ts`` / ``ticdc_owner_resolved_ts``: the physical part of the TSO (Unix ms), and
  ``ticdc_owner_checkpoint_ts_lag`` / ``ticdc_owner_resolved_ts_lag``: seconds behind this server's clock. Only
  the owner reports them, for changefeeds in a running state, as TiCDC's owner does.
- ``ticdc_owner_status``: the state as TiCDC's ``FeedState.ToInt`` (normal 0, pending 1, failed 2, stopped 3,
  finished 4, warning 6), for every changefeed.
- ``ticdc_sink_dml_event_count`` (row changes; untyped, as prometheus_client would rename a counter) and
  ``ticdc_sink_write_bytes_total`` (their encoded bytes): what the sink was given by the changefeeds this server
  runs, since each first committed here.

Ours, where TiCDC's architecture has no counterpart: ``sparkcdc_sink_flush_duration_seconds`` (a micro-batch's
sink write and publish), ``sparkcdc_changefeed_batch_duration_seconds`` (a micro-batch from planning to commit),
``sparkcdc_changefeed_errors_total`` / ``sparkcdc_changefeed_warnings_total``, and for the capture this server runs
``sparkcdc_relay_resolved_ts_lag`` (seconds the relay log trails the upstream) and ``sparkcdc_relay_log_bytes``.

The histograms see each batch the manager's poll (twice a second) finds committed; counters and gauges are read
from the runner's and the store's state at scrape time, so they are exact.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from sparkcdc.changefeed.info import RUNNING, ChangefeedInfo, ChangefeedStatus, FeedState
from sparkcdc.changefeed.runner import CaptureStats, RunnerStatus, SinkTotals
from sparkcdc.model import tso

CONTENT_TYPE = CONTENT_TYPE_LATEST
LABELS = ("namespace", "changefeed")
# TiCDC's FeedState.ToInt (cdc/model/changefeed.go)
STATE_CODES = {FeedState.NORMAL: 0, FeedState.PENDING: 1, FeedState.FAILED: 2, FeedState.STOPPED: 3,
               FeedState.FINISHED: 4, FeedState.REMOVED: 5, FeedState.WARNING: 6}  # fmt: skip
_SECONDS = tuple(0.01 * 2**i for i in range(18))  # 10 ms .. 22 min, TiCDC's sink duration buckets

Key = tuple[str, str]


class ServerMetrics:
    """One server's registry. ``observe`` is fed every runner status the manager polls; ``bind`` gives what a
    scrape reads (the stored changefeeds, whether this server is the owner, its capture)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.registry = CollectorRegistry(auto_describe=True)
        self.flush = Histogram("sparkcdc_sink_flush_duration_seconds", "Time a micro-batch's sink write and publish "
                               "took (slowest writer task + commit)", LABELS, buckets=_SECONDS, registry=self.registry)
        self.batch = Histogram("sparkcdc_changefeed_batch_duration_seconds", "Time from planning a micro-batch to its "
                               "commit", LABELS, buckets=_SECONDS, registry=self.registry)  # fmt: skip
        self.errors = Counter("sparkcdc_changefeed_errors", "Errors that failed a changefeed", LABELS,
                              registry=self.registry)  # fmt: skip
        self.warnings = Counter("sparkcdc_changefeed_warnings", "Retryable problems a changefeed reported (each new "
                                "one once)", LABELS, registry=self.registry)  # fmt: skip
        self._lock = threading.Lock()
        self._totals: dict[Key, SinkTotals] = {}
        self._batch_seen: dict[Key, int] = {}
        self._warning_seen: dict[Key, str] = {}
        self._changefeeds: Callable[[], list[tuple[ChangefeedInfo, ChangefeedStatus]]] = list
        self._is_owner: Callable[[], bool] = lambda: False
        self._capture: Callable[[], CaptureStats | None] = lambda: None
        self.registry.register(_Collector(self))

    def bind(self, changefeeds: Callable[[], list[tuple[ChangefeedInfo, ChangefeedStatus]]],
             is_owner: Callable[[], bool], capture: Callable[[], CaptureStats | None]) -> None:  # fmt: skip
        self._changefeeds, self._is_owner, self._capture = changefeeds, is_owner, capture

    def observe(self, namespace: str, changefeed: str, status: RunnerStatus) -> None:
        key = (namespace, changefeed)
        with self._lock:
            if status.error is not None:
                self.errors.labels(*key).inc()
            warning = status.warning.message if status.warning is not None else ""
            if warning and self._warning_seen.get(key) != warning:
                self.warnings.labels(*key).inc()
            self._warning_seen[key] = warning
            if status.totals is not None:
                self._totals[key] = status.totals
            last = status.last_batch
            if last is not None and self._batch_seen.get(key) != status.last_batch_id:
                self._batch_seen[key] = status.last_batch_id
                self.flush.labels(*key).observe(last.flush_seconds)
                self.batch.labels(*key).observe(last.batch_seconds)

    def forget(self, namespace: str, changefeed: str) -> None:
        """A removed changefeed's series go away."""
        key = (namespace, changefeed)
        with self._lock:
            for family in (self.flush, self.batch, self.errors, self.warnings):
                try:
                    family.remove(*key)
                except KeyError:
                    pass
            for seen in (self._totals, self._batch_seen, self._warning_seen):
                seen.pop(key, None)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def totals(self) -> dict[Key, SinkTotals]:
        with self._lock:
            return dict(self._totals)


class _Collector:
    """The scrape-time families: read from the store, the runner and the sink counters."""

    def __init__(self, metrics: ServerMetrics) -> None:
        self.m = metrics

    def describe(self) -> list[Any]:
        return []  # collected afresh at every scrape

    def collect(self) -> Iterator[Metric]:
        m = self.m
        now = m.clock()
        status = GaugeMetricFamily("ticdc_owner_status", "The status of changefeeds", labels=LABELS)
        gauges = {name: GaugeMetricFamily(name, doc, labels=LABELS) for name, doc in (
            ("ticdc_owner_checkpoint_ts", "checkpoint ts of changefeeds"),
            ("ticdc_owner_checkpoint_ts_lag", "checkpoint ts lag of changefeeds in seconds"),
            ("ticdc_owner_resolved_ts", "resolved ts of changefeeds"),
            ("ticdc_owner_resolved_ts_lag", "resolved ts lag of changefeeds in seconds"),
        )}  # fmt: skip
        if m._is_owner():
            for info, st in m._changefeeds():
                labels = [info.namespace, info.id]
                status.add_metric(labels, STATE_CODES.get(info.state, -1))
                if info.state not in RUNNING:
                    continue
                for what, ts in (("checkpoint", st.checkpoint_ts), ("resolved", st.resolved_ts)):
                    gauges[f"ticdc_owner_{what}_ts"].add_metric(labels, tso.physical(ts))
                    gauges[f"ticdc_owner_{what}_ts_lag"].add_metric(labels, tso.lag_seconds(ts, now))
        yield status
        yield from gauges.values()
        # TiCDC's counter name lacks ``_total``, which prometheus_client would add to a counter: exposed untyped
        rows = Metric("ticdc_sink_dml_event_count", "Total count of DML events.", "unknown")
        size = CounterMetricFamily("ticdc_sink_write_bytes", "Total number of bytes written by sink", labels=LABELS)
        for (namespace, cf), totals in sorted(m.totals().items()):
            rows.add_sample("ticdc_sink_dml_event_count", {"namespace": namespace, "changefeed": cf}, totals.rows)
            size.add_metric([namespace, cf], totals.size)
        yield rows
        yield size
        capture = m._capture()
        lag = GaugeMetricFamily("sparkcdc_relay_resolved_ts_lag", "Seconds the capture's relay log is resolved behind "
                                "this server's clock (the upstream's binlog not yet captured)")  # fmt: skip
        relay = GaugeMetricFamily("sparkcdc_relay_log_bytes", "Bytes of the capture's relay log on disk")
        if capture is not None:
            lag.add_metric([], tso.lag_seconds(capture.resolved_ts, now))
            relay.add_metric([], capture.relay_bytes)
        yield lag
        yield relay
