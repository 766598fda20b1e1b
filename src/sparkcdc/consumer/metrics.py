"""A consumer's Prometheus metrics (``--metrics-addr host:port``), read from its engine's counters at scrape time.

``sparkcdc_consumer_rows_applied_total`` (with ``_upserts_total`` and ``_deletes_total``),
``sparkcdc_consumer_replayed_skipped_total``, ``sparkcdc_consumer_ddls_executed_total``,
``sparkcdc_consumer_applied_ts`` (physical part of the last applied commit-ts, Unix ms) and
``sparkcdc_consumer_applied_ts_lag`` (seconds behind this host's clock), labelled ``changefeed`` (the consumer's
``--changefeed`` name). TiCDC's consumers export none, so the names are ours.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from sparkcdc.errors import ConfigError
from sparkcdc.model import tso
from sparkcdc.model.steps import EngineStats

_COUNTERS = (
    ("rows_applied", "Row changes applied downstream"),
    ("upserts", "Rows written (insert or update)"),
    ("deletes", "Rows deleted"),
    ("replayed_skipped", "Rows skipped as replays below the applied checkpoint"),
    ("ddls_executed", "DDL statements executed downstream"),
)


class _Collector:
    def __init__(self, stats: Callable[[], EngineStats], changefeed: str, clock: Callable[[], float]) -> None:
        self.stats = stats
        self.changefeed = changefeed
        self.clock = clock

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Metric]:
        s = self.stats()
        with s.lock:
            values = {name: getattr(s, name) for name, _ in _COUNTERS}
            applied_ts = s.applied_ts
        for name, doc in _COUNTERS:
            family = CounterMetricFamily(f"sparkcdc_consumer_{name}", doc, labels=["changefeed"])
            family.add_metric([self.changefeed], values[name])
            yield family
        ts = GaugeMetricFamily("sparkcdc_consumer_applied_ts", "Last applied commit-ts (physical, Unix ms)",
                               labels=["changefeed"])  # fmt: skip
        lag = GaugeMetricFamily("sparkcdc_consumer_applied_ts_lag", "Seconds the applied commit-ts trails this "
                                "host's clock", labels=["changefeed"])  # fmt: skip
        if applied_ts:
            ts.add_metric([self.changefeed], tso.physical(applied_ts))
            lag.add_metric([self.changefeed], tso.lag_seconds(applied_ts, self.clock()))
        yield ts
        yield lag


def parse_addr(addr: str) -> tuple[str, int]:
    """``host:port`` (``:port`` listens on every interface). Raises ConfigError."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--metrics-addr {addr!r} must be host:port, for example 127.0.0.1:9101")
    return host or "0.0.0.0", int(port)


def serve_metrics(addr: str, stats: Callable[[], EngineStats], changefeed: str,
                  clock: Callable[[], float] = time.time) -> Callable[[], None]:  # fmt: skip
    """Serve ``/metrics`` on ``addr`` in a thread; returns the function that stops it. Raises ConfigError when the
    address is malformed or cannot be bound."""
    host, port = parse_addr(addr)
    registry = CollectorRegistry(auto_describe=True)
    registry.register(_Collector(stats, changefeed, clock))
    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as e:
        raise ConfigError(f"--metrics-addr {addr}: cannot listen: {e.strerror or e}") from None
    return server.shutdown
