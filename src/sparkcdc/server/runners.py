"""The runners ``cdc server --runner`` can pick: ``spark`` (the pipeline) and ``noop`` (state only).

The composition root of execution: the server depends on the pipeline here, lazily, so ``--runner noop`` and
the control-plane tests never import Spark.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

from sparkcdc.capture.upstream import ClockUpstream, Upstream, open_upstream
from sparkcdc.changefeed.info import ChangefeedInfo
from sparkcdc.changefeed.runner import CaptureStats, ChangefeedRunner, RunnerContext, RunnerStatus
from sparkcdc.errors import ConfigError
from sparkcdc.model.table import TableInfo


class NoopRunner:
    """Replicates nothing; the checkpoint follows the upstream's clock (capped at target-ts).

    For control-plane tests and for trying the CLI without Spark: states, persistence, finish at target-ts.
    """

    def __init__(self, upstream: Upstream | None = None) -> None:
        self.upstream = upstream or ClockUpstream()
        self._clock = ClockUpstream()  # progress follows the local clock: no upstream query per poll
        self._running: dict[tuple[str, str], tuple[ChangefeedInfo, int]] = {}
        self._lock = threading.Lock()

    def check_startable(self) -> None:
        """Always: it needs no upstream (its clock stands in for one)."""

    def start(self, info: ChangefeedInfo, checkpoint_ts: int) -> None:
        with self._lock:
            self._running[(info.namespace, info.id)] = (info, checkpoint_ts)

    def stop(self, namespace: str, changefeed_id: str) -> None:
        with self._lock:
            self._running.pop((namespace, changefeed_id), None)

    def status(self, namespace: str, changefeed_id: str) -> RunnerStatus | None:
        with self._lock:
            entry = self._running.get((namespace, changefeed_id))
        if entry is None:
            return None
        info, start = entry
        now = self._clock.current_tso()
        ts = max(start, now if not info.target_ts else min(now, info.target_ts))
        return RunnerStatus(checkpoint_ts=ts, resolved_ts=ts)

    def remove(self, info: ChangefeedInfo) -> None:
        return None

    def current_tso(self) -> int:
        return self.upstream.current_tso()

    def oldest_retained_tso(self) -> int:
        return self.upstream.oldest_retained_tso()

    def gc(self, safepoint_ts: int) -> None:
        return None  # it keeps no upstream data

    def activate(self) -> None:
        """Nothing runs only on the owner here."""

    def suspend(self) -> None:
        with self._lock:
            self._running.clear()

    def capture_stats(self) -> CaptureStats | None:
        return None  # it captures nothing

    def upstream_tables(self, ts: int) -> list[TableInfo] | None:
        return None  # it reads no schema

    def ready(self) -> bool:
        return True  # it has no engine to start

    def close(self) -> None:
        with self._lock:
            self._running.clear()


def _noop(ctx: RunnerContext) -> ChangefeedRunner:
    return NoopRunner(open_upstream(ctx.upstream_uri))


def _spark(ctx: RunnerContext) -> ChangefeedRunner:
    try:
        module = importlib.import_module("sparkcdc.pipeline.runner")
    except ImportError as e:
        raise ConfigError(
            f"the Spark pipeline is not available ({e}); start the server with --runner noop to manage "
            "changefeeds without replicating"
        ) from e
    factory: Callable[[RunnerContext], ChangefeedRunner] = module.create_runner
    return factory(ctx)


# name -> factory; the pipeline provides sparkcdc.pipeline.runner.create_runner(ctx) -> ChangefeedRunner
RUNNERS: dict[str, Callable[[RunnerContext], ChangefeedRunner]] = {"spark": _spark, "noop": _noop}


def create_runner(name: str, ctx: RunnerContext) -> ChangefeedRunner:
    """Build the named runner. Raises ConfigError for an unknown name or a runner that cannot start."""
    factory = RUNNERS.get(name)
    if factory is None:
        raise ConfigError(f"unknown runner {name!r}; use one of: {', '.join(sorted(RUNNERS))}")
    return factory(ctx)
