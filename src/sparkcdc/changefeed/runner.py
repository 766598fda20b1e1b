"""The seam between the control plane and the data pipeline: the ``ChangefeedRunner`` protocol.

The server owns changefeed *state* (what should run, persisted in SQLite); a runner owns *execution* (the
Spark Structured Streaming query of each changefeed). The server serialises every call to the runner (one
lock for all changefeeds, so keep calls short) and never calls ``start`` twice for a changefeed without a
``stop`` in between.

Contract (the pipeline's runner must honour it):

``start(info, checkpoint_ts)``
    Begin replicating ``info`` asynchronously and return quickly (seconds at most). Replicate every transaction
    with ``checkpoint_ts < commit_ts`` (and ``commit_ts <= info.target_ts`` when ``target_ts`` is non-zero).
    Called on create (``checkpoint_ts = start_ts``), resume, and server restart (the stored checkpoint).
    Raise (preferably a ``SparkcdcError``) when the changefeed cannot start: the server marks it ``failed``
    with that error (code and first line of the message kept).
``stop(namespace, changefeed_id)``
    Stop the query and wait until it has stopped (nothing is written afterwards). Idempotent; unknown ids
    are a no-op. Called on pause, remove, failure and finish (server shutdown calls ``close`` instead).
``status(namespace, changefeed_id) -> RunnerStatus | None``
    Latest progress, cheap and non-blocking (polled about twice a second), with the sink's counters.
    ``checkpoint_ts`` is the value last written to the sink's ``metadata`` (everything with commit-ts <= it is
    durable); it never goes backwards. ``resolved_ts``: everything <= it has been read from upstream. Set
    ``error`` when the query died with a non-retryable error (the server then marks the changefeed ``failed``,
    keeps the error and calls ``stop``); set ``warning`` for a retryable problem the runner is retrying. ``None``
    when not running.
    When ``target_ts`` is set, report ``checkpoint_ts >= target_ts`` once everything up to it is durable:
    the server then marks the changefeed ``finished`` and calls ``stop``.
``remove(info)``
    Called after ``stop`` when a changefeed is removed: delete runner-private state (Spark checkpoint
    directories under ``RunnerContext.data_dir``). Never touches the sink's data.
``current_tso() -> int``
    The upstream's current TSO: the default start-ts, and the bound for "start-ts in the future".
``oldest_retained_tso() -> int``
    The smallest start-ts the upstream can still serve (the oldest retained binlog's first event as a TSO);
    a create with an older start-ts is refused with ``CDC:ErrStartTsBeforeGC``. 0 means "no limit".
``gc(safepoint_ts)``
    The server's service GC safepoint (``sparkcdc.server.gc``, about once a minute): no changefeed will
    need data with commit-ts below it. Delete what the runner can of it, but nothing a running query may
    still (re)read (its own committed progress bounds that, and the server's stored checkpoint can lag).
    Afterwards ``oldest_retained_tso()`` is at least the bound applied, so older start-ts are refused. Quick;
    never raises for a failed deletion (logged; the next call retries).
``activate()`` / ``suspend()``
    This server became / stopped being the cluster's owner (``cdc server --pd``; a lone server is activated
    once). ``activate`` comes before any ``start``; ``suspend`` stops every changefeed the runner runs on this
    server and releases what only the owner may run (allocating the commit-ts of a shared upstream,
    ``SharedCaptureState``).
``capture_stats() -> CaptureStats | None``
    The upstream capture this server runs (relay log resolved ts and size), None when it runs none. Cheap.
``upstream_tables(ts) -> list[TableInfo] | None``
    The upstream's tables as of ``ts`` (their columns), as far as this server's capture has read them; None when
    it cannot tell (no capture). Create and update check the expression filters against them, as TiCDC verifies
    them against the schema at start-ts.
``ready() -> bool``
    Whether a changefeed started now starts without waiting for the runner's engine (the Spark runner builds
    and warms its session in the background when the server starts). Cheap.
``close()``
    Server shutdown: stop everything, release sessions.

Runners are picked by name (``cdc server --runner``) from ``sparkcdc.server.runners.RUNNERS``; each factory takes
a ``RunnerContext``. This module is the contract only: the server and the pipeline both import it, and neither
imports the other's implementation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from sparkcdc.capture.position import BinlogPosition
from sparkcdc.changefeed.info import ChangefeedInfo, RunningError
from sparkcdc.changefeed.snapshot import SnapshotProgress
from sparkcdc.model.table import TableInfo


class SharedCaptureState(Protocol):
    """The capture's binlog-position <-> commit-ts state, kept where every server of a cluster reads it (etcd),
    so that a server taking over the changefeeds captures the same upstream transactions with the same
    commit-ts as the server before it (``sparkcdc.capture.puller``'s TSO rule is a pure function of the binlog
    from an anchor, plus the heartbeat reservations after it).

    ``anchor``: a transaction boundary (file, pos, GTID state, its commit-ts as ``last_tso``) at or below every
    changefeed's checkpoint, None before the first capture. ``reserve`` must be durable before it returns (the
    reservation then shows in resolved ts). ``publish``: where the owner's relay log is durable, so that the
    other servers' follower captures (``sparkcdc.capture.puller.CaptureLeader``) may commit up to there; it
    never moves back. The three writes are fenced: they fail on a server no longer the owner.
    """

    def anchor(self) -> BinlogPosition | None: ...
    def set_anchor(self, position: BinlogPosition) -> None: ...
    def reservations(self) -> dict[tuple[str, int], int]: ...
    def reserve(self, file: str, pos: int, tso: int) -> None: ...
    def published(self) -> BinlogPosition | None: ...
    def publish(self, position: BinlogPosition) -> None: ...


@dataclass(frozen=True)
class RunnerContext:
    """Server-wide settings a runner needs. ``upstream_uri`` holds a password: never log it unmasked."""

    data_dir: Path
    upstream_uri: str | None = None
    spark_master: str = "local[*]"
    log_level: str = "info"
    server_addr: str = ""
    tz: str | None = None  # IANA zone for TIMESTAMP values (cdc server --tz); None = the system zone
    relay_segment_bytes: int = 256 << 20  # where the capture's relay log rotates (small in tests)
    # file descriptors the runner's engine processes keep open while they live (the data-dir lock, so that a new
    # server waits until a killed server's Spark JVM, which outlives it for a moment, has exited)
    hold_fds: tuple[int, ...] = ()
    # a cluster's shared capture state (cdc server --pd): the capture allocates commit-ts only while this server
    # is the owner (``ChangefeedRunner.activate``/``suspend``) and follows the owner's otherwise
    shared_capture: SharedCaptureState | None = None

    def changefeed_dir(self, namespace: str, changefeed_id: str) -> Path:
        """Where a runner keeps private state of one changefeed (Spark checkpoints, …)."""
        return self.data_dir / "changefeeds" / namespace / changefeed_id

    def __repr__(self) -> str:
        return f"RunnerContext(data_dir={str(self.data_dir)!r}, spark_master={self.spark_master!r})"


@dataclass(frozen=True)
class BatchStats:
    """One committed micro-batch: row changes and payload bytes handed to the sink, the sink's time to write and
    publish them (slowest writer task + commit), and the batch's time from planning to commit."""

    rows: int
    size: int
    flush_seconds: float
    batch_seconds: float
    last_ts: int = 0  # the largest commit-ts among the rows (0: none)


@dataclass(frozen=True)
class SinkTotals:
    """What a changefeed's sink was given since its run on this server began (counters for ``/metrics``), and the
    commit-ts of the newest row change among it (TiCDC's ``last_synced_ts``)."""

    rows: int = 0
    size: int = 0
    batches: int = 0
    last_synced_ts: int = 0

    def add(self, batch: BatchStats) -> SinkTotals:
        return SinkTotals(self.rows + batch.rows, self.size + batch.size, self.batches + 1,
                          max(self.last_synced_ts, batch.last_ts))  # fmt: skip


@dataclass(frozen=True)
class CaptureStats:
    """The capture this server runs: how far its relay log is resolved and how many bytes it holds."""

    resolved_ts: int
    relay_bytes: int


@dataclass(frozen=True)
class RunnerStatus:
    """``snapshot``: the initial snapshot's progress while the run has one; ``finished``: the run has done all
    it will do before any target-ts (``[snapshot] mode = "initial-only"`` after the copy)."""

    checkpoint_ts: int
    resolved_ts: int
    error: RunningError | None = None
    warning: RunningError | None = None
    snapshot: SnapshotProgress | None = None
    finished: bool = False
    # the sink's counters, and the last committed batch (``last_batch_id`` tells a new one from the one seen before)
    totals: SinkTotals | None = None
    last_batch: BatchStats | None = None
    last_batch_id: int = -1

    def to_record(self) -> dict[str, Any]:
        """JSON-ready, for a status read from another capture of the cluster."""
        return {"checkpoint_ts": self.checkpoint_ts, "resolved_ts": self.resolved_ts,
                "error": self.error.to_record() if self.error else None,
                "warning": self.warning.to_record() if self.warning else None,
                "snapshot": self.snapshot.to_record() if self.snapshot else None, "finished": self.finished,
                "totals": asdict(self.totals) if self.totals else None,
                "last_batch": asdict(self.last_batch) if self.last_batch else None,
                "last_batch_id": self.last_batch_id}  # fmt: skip

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> RunnerStatus:
        return cls(int(rec["checkpoint_ts"]), int(rec["resolved_ts"]), RunningError.from_record(rec.get("error")),
                   RunningError.from_record(rec.get("warning")),
                   snapshot=SnapshotProgress.from_record(rec["snapshot"]) if rec.get("snapshot") else None,
                   finished=bool(rec.get("finished")),
                   totals=SinkTotals(**rec["totals"]) if rec.get("totals") else None,
                   last_batch=BatchStats(**rec["last_batch"]) if rec.get("last_batch") else None,
                   last_batch_id=int(rec.get("last_batch_id", -1)))  # fmt: skip


@runtime_checkable
class ChangefeedRunner(Protocol):
    def check_startable(self) -> None:
        """Raises ConfigError when no changefeed can run here (the server lacks what the runner needs), so
        ``changefeed create`` refuses it instead of a changefeed created only to fail."""
        ...

    def start(self, info: ChangefeedInfo, checkpoint_ts: int) -> None: ...

    def stop(self, namespace: str, changefeed_id: str) -> None: ...

    def status(self, namespace: str, changefeed_id: str) -> RunnerStatus | None: ...

    def remove(self, info: ChangefeedInfo) -> None: ...

    def current_tso(self) -> int: ...

    def oldest_retained_tso(self) -> int: ...

    def gc(self, safepoint_ts: int) -> None: ...

    def activate(self) -> None: ...

    def suspend(self) -> None: ...

    def capture_stats(self) -> CaptureStats | None: ...

    def upstream_tables(self, ts: int) -> list[TableInfo] | None: ...

    def ready(self) -> bool: ...

    def close(self) -> None: ...
