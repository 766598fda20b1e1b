"""The changefeed state machine (TiCDC's owner + feed state manager, for one node).

States and transitions (as TiCDC):

* create -> ``normal`` (the runner starts at start-ts)
* ``normal``/``warning``/``pending`` --pause--> ``stopped``; other states ignore pause (logged)
* ``stopped``/``failed``/``finished`` --resume--> ``normal`` (error cleared; optional overwrite of the checkpoint)
* running --runner reports an error--> ``failed`` (error kept until resume)
* running --checkpoint reaches target-ts--> ``finished``
* any --remove--> gone (``removed`` is never stored: the record is deleted, as TiCDC deletes its info)
* update is allowed only when ``stopped`` or ``failed``.
* a ``stopped``/``failed`` changefeed stopped longer than gc-ttl cannot resume at its checkpoint
  (``CDC:ErrStartTsBeforeGC``); resuming with an overwritten checkpoint the runner still retains works.

About once a minute the poller computes the service GC safepoint (``sparkcdc.server.gc``) and hands it to the
runner, which deletes captured data below it.

Every change is written to the MetaStore before it is reported; validation failures change nothing.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sparkcdc import __version__
from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.changefeed.info import (
    DEFAULT_NAMESPACE,
    ERR_API_INVALID_PARAM,
    RUNNING,
    ChangefeedInfo,
    ChangefeedStatus,
    FeedState,
    RunningError,
    new_changefeed_id,
    validate_changefeed_id,
    validate_namespace,
)
from sparkcdc.changefeed.runner import ChangefeedRunner
from sparkcdc.changefeed.snapshot import SnapshotProgress
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.masking import mask_uri, unmask_config
from sparkcdc.model.table import TableInfo
from sparkcdc.redo import meta as redo_meta
from sparkcdc.server.catchup import CatchUpLog
from sparkcdc.server.gc import GcPolicy, gc_ttl_exceeded, safepoint, stopped_since
from sparkcdc.server.lag_history import LagHistory
from sparkcdc.server.metrics import ServerMetrics
from sparkcdc.server.store import ChangefeedNotFound, ChangefeedStore
from sparkcdc.sink.base import check_sink

log = logging.getLogger(__name__)

ERR_START_TS_BEFORE_GC = "CDC:ErrStartTsBeforeGC"
ERR_TARGET_TS_BEFORE_START_TS = "CDC:ErrTargetTsBeforeStartTs"
ERR_UPDATE_REFUSED = "CDC:ErrChangefeedUpdateRefused"
ERR_CHECKPOINT_IN_FUTURE = "CDC:ErrCliCheckpointTsIsInFuture"

_PAUSABLE = RUNNING
_RESUMABLE = frozenset({FeedState.STOPPED, FeedState.FAILED, FeedState.FINISHED})
_UPDATABLE = frozenset({FeedState.STOPPED, FeedState.FAILED})


@dataclass(frozen=True)
class CreateRequest:
    """A validated-by-type create request (from the Open API body)."""

    changefeed_id: str = ""
    namespace: str = DEFAULT_NAMESPACE
    sink_uri: str = ""
    start_ts: int = 0
    target_ts: int = 0
    config: ReplicaConfig | None = None

    def __repr__(self) -> str:
        return f"CreateRequest(id={self.changefeed_id!r}, sink_uri={mask_uri(self.sink_uri)!r})"


class ChangefeedManager:
    """Owns every changefeed of this server. Thread-safe; call :meth:`start` once, :meth:`close` at exit.

    ``clock`` gives Unix seconds (stop times and gc-ttl); tests inject one.
    """

    def __init__(
        self,
        store: ChangefeedStore,
        runner: ChangefeedRunner,
        *,
        addr: str = "",
        upstream_id: int = 0,
        poll_interval: float = 0.5,
        gc: GcPolicy | None = None,
        clock: Callable[[], float] = time.time,
        metrics: ServerMetrics | None = None,
    ) -> None:
        self.store = store
        self.runner = runner
        self.metrics = metrics or ServerMetrics()
        self._catch_up = CatchUpLog(clock)
        self.history = LagHistory(clock)
        self.addr = addr
        self._snapshots: dict[tuple[str, str], SnapshotProgress] = {}
        self.upstream_id = upstream_id
        self.poll_interval = poll_interval
        self.gc_policy = gc or GcPolicy()
        self.clock = clock
        self._next_gc = 0.0  # time.monotonic() of the next safepoint update; the first poll does one
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._started: set[tuple[str, str]] = set()  # changefeeds handed to the runner and not stopped since

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self, *, poll: bool = True) -> None:
        """Restart every changefeed that should run (normal/warning/pending), then poll the runner.

        With ``poll`` the restarts happen on the poller thread, so the Open API answers while slow pipelines
        (a SparkSession takes seconds) come up; without it (tests) they happen before this returns.
        """
        self.runner.activate()
        if not poll:
            self.resume_all()
            return
        self._stop.clear()
        self._poller = threading.Thread(target=self._poll_loop, name="changefeed-poller", daemon=True)
        self._poller.start()

    def suspend(self) -> None:
        """No longer the owner: stop the poller, and let the runner stop what it runs here, leaving every
        changefeed's state as stored: the new owner takes them over (from their checkpoints, or where they run).
        ``start`` manages them here again."""
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=60)
            self._poller = None
        with self._lock:
            self._started.clear()
            self.runner.suspend()

    def resume_all(self) -> None:
        """Start the runner of every stored changefeed in a running state (after a server restart)."""
        for info, _ in self.store.list(None):
            if self._stop.is_set():
                return
            with self._lock:
                try:
                    info, status = self.store.get(info.namespace, info.id)  # may have changed meanwhile
                except ChangefeedNotFound:
                    continue
                if info.state in RUNNING and (info.namespace, info.id) not in self._started:
                    log.info("resuming changefeed=%s checkpoint=%d", info.id, status.checkpoint_ts)
                    self._start_runner(info, status.checkpoint_ts)

    def close(self) -> None:
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=10)
        with self._lock:
            try:
                self.runner.close()
            except Exception:
                log.exception("runner failed to close")

    def _poll_loop(self) -> None:
        try:
            self.resume_all()
        except Exception:
            log.exception("resuming changefeeds failed")
        while not self._stop.wait(self.poll_interval):
            try:
                self.poll_once()
            except Exception:
                log.exception("changefeed status poll failed")
            if time.monotonic() >= self._next_gc:
                self._next_gc = time.monotonic() + self.gc_policy.interval_s
                try:
                    self.gc_once()
                except Exception as e:  # an unreachable upstream: keep everything, retry next interval
                    log.warning("updating the GC safepoint failed: %s", e)

    # -- queries ------------------------------------------------------------------------------------------
    def get(self, namespace: str, changefeed_id: str) -> tuple[ChangefeedInfo, ChangefeedStatus]:
        validate_changefeed_id(changefeed_id)
        return self.store.get(namespace, changefeed_id)

    def snapshot(self, namespace: str, changefeed_id: str) -> SnapshotProgress | None:
        """The initial snapshot's progress as the runner last reported it (None: no snapshot in this run)."""
        return self._snapshots.get((namespace, changefeed_id))

    def list(self, namespace: str | None = DEFAULT_NAMESPACE) -> list[tuple[ChangefeedInfo, ChangefeedStatus]]:
        return self.store.list(namespace)

    def current_tso(self) -> int:
        return self.runner.current_tso()

    # -- commands -----------------------------------------------------------------------------------------
    def create(self, req: CreateRequest) -> tuple[ChangefeedInfo, ChangefeedStatus]:
        """Validate (changing nothing on error), persist, then start. Raises ConfigError / UpstreamError."""
        if not req.sink_uri:
            raise ConfigError(
                "sink uri invalid '': sink_uri is empty, cannot create a changefeed without sink_uri",
                code="CDC:ErrSinkURIInvalid",
            )
        cf_id = req.changefeed_id or new_changefeed_id()
        validate_changefeed_id(cf_id)
        namespace = req.namespace or DEFAULT_NAMESPACE
        validate_namespace(namespace)
        config = req.config or ReplicaConfig()
        with self._lock:
            try:
                self.store.get(namespace, cf_id)
            except ChangefeedNotFound:
                pass
            else:
                raise ConfigError(f"changefeed already exists, {cf_id}", code="CDC:ErrChangeFeedAlreadyExists")
            self.runner.check_startable()
            current = self.runner.current_tso()
            start_ts = req.start_ts or current
            if start_ts > current:
                raise ConfigError(
                    f"invalid start-ts {start_ts}, larger than current tso {current}", code=ERR_API_INVALID_PARAM
                )
            self._check_retained(start_ts)
            if req.target_ts and req.target_ts <= start_ts:
                raise ConfigError(
                    f"fail to create changefeed because target-ts {req.target_ts} is earlier than start-ts {start_ts}",
                    code=ERR_TARGET_TS_BEFORE_START_TS,
                )
            config.validate()
            self._check_against_upstream(config, req.sink_uri, start_ts)
            config = config.with_uri_protocol(req.sink_uri)
            info = ChangefeedInfo(
                id=cf_id,
                namespace=namespace,
                sink_uri=req.sink_uri,
                start_ts=start_ts,
                target_ts=req.target_ts,
                config=config,
                creator_version=__version__,
                upstream_id=self.upstream_id,
            )
            status = ChangefeedStatus(checkpoint_ts=start_ts, resolved_ts=start_ts)
            self.store.create(info, status)
            log.info("created changefeed=%s sink=%s start_ts=%d", cf_id, mask_uri(req.sink_uri), start_ts)
            info = self._start_runner(info, start_ts)
            return info, status

    def pause(self, namespace: str, changefeed_id: str) -> None:
        validate_changefeed_id(changefeed_id)
        with self._lock:
            info, _ = self.store.get(namespace, changefeed_id)
            if info.state not in _PAUSABLE:
                log.warning("cannot pause changefeed=%s in state %s; ignored", changefeed_id, info.state.value)
                return
            self._stop_runner(info)
            self.store.put_info(info.with_changes(state=FeedState.STOPPED, stopped_at=self.clock()))
            log.info("paused changefeed=%s", changefeed_id)

    def resume(self, namespace: str, changefeed_id: str, overwrite_checkpoint_ts: int = 0) -> None:
        validate_changefeed_id(changefeed_id)
        with self._lock:
            info, status = self.store.get(namespace, changefeed_id)
            if overwrite_checkpoint_ts:
                current = self.runner.current_tso()
                if overwrite_checkpoint_ts > current:
                    raise ConfigError(
                        f"the overwrite-checkpoint-ts {overwrite_checkpoint_ts} must be smaller than current TSO",
                        code=ERR_CHECKPOINT_IN_FUTURE,
                    )
                self._check_retained(overwrite_checkpoint_ts)
            if info.state not in _RESUMABLE:
                log.warning("cannot resume changefeed=%s in state %s; ignored", changefeed_id, info.state.value)
                return
            self.runner.check_startable()
            if overwrite_checkpoint_ts:
                status = ChangefeedStatus(overwrite_checkpoint_ts, overwrite_checkpoint_ts)
            else:
                self._check_resumable(info, status)
            info = info.with_changes(state=FeedState.NORMAL, error=None, stopped_at=0.0)
            self.store.put(info, status)
            log.info("resumed changefeed=%s checkpoint=%d", changefeed_id, status.checkpoint_ts)
            self._start_runner(info, status.checkpoint_ts)

    def update(
        self,
        namespace: str,
        changefeed_id: str,
        *,
        target_ts: int = 0,
        sink_uri: str = "",
        config: ReplicaConfig | None = None,
    ) -> tuple[ChangefeedInfo, ChangefeedStatus]:
        """Change target-ts, sink URI and/or config of a stopped or failed changefeed.

        What a GET returned is accepted back unchanged: a sink URI equal to the masked form of the stored one
        keeps the stored one (its secrets), as does a config value equal to the masked form of the stored one; the
        config passes the same checks as at create. Raises ConfigError (nothing changed) when the new settings are
        refused.
        """
        validate_changefeed_id(changefeed_id)
        with self._lock:
            info, status = self.store.get(namespace, changefeed_id)
            if info.state not in _UPDATABLE:
                raise ConfigError(
                    "changefeed update error: can only update changefeed config when it is stopped or failed",
                    code=ERR_UPDATE_REFUSED,
                )
            new = info
            if target_ts:
                if target_ts <= info.start_ts:
                    raise ConfigError(
                        f"changefeed update error: target-ts {target_ts} must be larger than start-ts {info.start_ts}",
                        code=ERR_UPDATE_REFUSED,
                    )
                new = new.with_changes(target_ts=target_ts)
            if sink_uri and sink_uri != info.sink_uri and sink_uri == mask_uri(info.sink_uri):
                # the masked URI a GET returned, sent back: keep the stored secrets rather than store "xxxxx"
                log.info("changefeed=%s: sink URI given in masked form; keeping the stored one", changefeed_id)
            elif sink_uri:
                new = new.with_changes(sink_uri=sink_uri)
            if config is not None:
                # secrets a GET returned masked and that came back so: the stored ones stay
                sent = config.to_toml()
                doc = unmask_config(sent, info.config.to_toml())
                new = new.with_changes(config=ReplicaConfig.from_toml(doc) if doc != sent else config)
            new.config.validate()
            self._check_against_upstream(new.config, new.sink_uri, status.checkpoint_ts)
            new = new.with_changes(config=new.config.with_uri_protocol(new.sink_uri))
            self.store.put_info(new)
            log.info("updated changefeed=%s", changefeed_id)
            return new, status

    def _check_against_upstream(self, config: ReplicaConfig, sink_uri: str, ts: int) -> None:
        """The expression filters, then the sink (last: it may connect to the downstream), against the tables the
        changefeed replicates at ``ts`` (``ReplicaConfig.replicated``, the rule the rows follow), as TiCDC verifies
        them at create and update against its schema snapshot. The relay log's schema history is read once, and only
        if a check needs it; without one (noop runner) the changefeed fails on the first row instead. Raises
        ConfigError."""

        @functools.cache
        def tables() -> list[TableInfo] | None:
            return self.runner.upstream_tables(ts)

        event_filter = config.event_filter()
        if any(r.expressions() for r in event_filter.rules) and (known := tables()) is not None:
            event_filter.verify(config.replicated(known))
        check_sink(sink_uri, config.to_toml(), lambda: config.replicated(tables() or ()))

    def ineligible_tables(self, config: ReplicaConfig, start_ts: int) -> Sequence[TableInfo]:
        """The upstream's tables at ``start_ts`` (0: now) that ``config``'s filter matches but that have no handle key
        (TiCDC's verify_table): ``changefeed create`` names them before it creates. None are known before the
        runner holds the upstream's schema."""
        return config.ineligible(self.runner.upstream_tables(start_ts or self.runner.current_tso()) or ())

    def remove(self, namespace: str, changefeed_id: str) -> bool:
        """Stop and delete; False when it did not exist (TiCDC answers success then, too)."""
        validate_changefeed_id(changefeed_id)
        with self._lock:
            try:
                info, _ = self.store.get(namespace, changefeed_id)
            except ChangefeedNotFound:
                return False
            self._stop_runner(info)
            try:
                self.runner.remove(info)
            except SparkcdcError as e:
                log.warning("changefeed=%s: runner cleanup failed: %s", changefeed_id, e)
            deleted = self.store.delete(namespace, changefeed_id)
            self._remove_redo_log(info)
            self.metrics.forget(namespace, changefeed_id)
            self._catch_up.forget(f"{namespace}/{changefeed_id}")
            self.history.forget(f"{namespace}/{changefeed_id}")
            log.info("removed changefeed=%s", changefeed_id)
            return deleted

    @staticmethod
    def _remove_redo_log(info: ChangefeedInfo) -> None:
        """A removed changefeed's redo log goes with it, as in TiCDC; a storage that refuses leaves the files and
        says so (the changefeed is removed all the same: its redo log would only be read by hand now)."""
        consistent = info.config.consistent()
        if not consistent.enabled:
            return
        try:
            deleted = redo_meta.remove_all(consistent, f"{info.namespace}/{info.id}")
        except SparkcdcError as e:
            log.warning("changefeed=%s: its redo log in %s was not deleted (%s); delete it by hand", info.id,
                        mask_uri(consistent.storage), e.message)  # fmt: skip
            return
        log.info("changefeed=%s: deleted its redo log (%d files) in %s", info.id, deleted,
                 mask_uri(consistent.storage))  # fmt: skip

    # -- GC -----------------------------------------------------------------------------------------------
    def gc_once(self) -> int:
        """Compute the service GC safepoint and hand it to the runner; returns it. Raises UpstreamError when
        the current TSO cannot be read (nothing is deleted then)."""
        with self._lock:
            point = safepoint(self.store.list(None), self.runner.current_tso(), self.clock(), self.gc_policy)
            self.runner.gc(point)
        log.debug("service GC safepoint %d", point)
        return point

    def _check_resumable(self, info: ChangefeedInfo, status: ChangefeedStatus) -> None:
        """Resuming at the stored checkpoint needs its data: refuse a changefeed stopped longer than gc-ttl
        (no longer counted in the safepoint, so its data may be gone) or one behind what the runner retains."""
        if gc_ttl_exceeded(info, status, self.clock(), self.gc_policy):
            stopped_for = self.clock() - stopped_since(info, status)
            raise ConfigError(
                f"fail to resume changefeed {info.id}: it has been {info.state.value} for {stopped_for:.0f}s, "
                f"longer than gc-ttl {self.gc_policy.ttl_s:g}s, so its checkpoint-ts {status.checkpoint_ts} is no "
                "longer protected from GC; resume it with --overwrite-checkpoint-ts at a retained ts, or remove it",
                code=ERR_START_TS_BEFORE_GC,
            )
        if info.state != FeedState.FINISHED:
            self._check_retained(status.checkpoint_ts)

    # -- progress -----------------------------------------------------------------------------------------
    def poll_once(self) -> None:
        """Pull the runner's status of every running changefeed and apply failed/finished transitions."""
        with self._lock:
            for info, status in self.store.list(None):
                if info.state in RUNNING:
                    self._apply(info, status)

    def _apply(self, info: ChangefeedInfo, status: ChangefeedStatus) -> None:
        try:
            st = self.runner.status(info.namespace, info.id)
        except Exception as e:  # a broken runner must not stop the poller
            st = None
            log.warning("changefeed=%s: runner status failed: %s", info.id, e)
        if st is None:
            return
        self.metrics.observe(info.namespace, info.id, st)
        if st.error is not None:
            log.error("changefeed=%s failed: [%s] %s", info.id, st.error.code, st.error.message)
            self._stop_runner(info)
            self.store.put_info(info.with_changes(state=FeedState.FAILED, error=st.error, stopped_at=self.clock()))
            return
        if st.snapshot is not None:
            self._snapshots[(info.namespace, info.id)] = st.snapshot
        checkpoint = max(status.checkpoint_ts, st.checkpoint_ts)
        if info.target_ts:  # a finished changefeed's checkpoint is its target-ts
            checkpoint = max(status.checkpoint_ts, min(checkpoint, info.target_ts))
        resolved = max(status.resolved_ts, st.resolved_ts, checkpoint)
        rows = st.totals.rows if st.totals else 0
        name = f"{info.namespace}/{info.id}"
        self._catch_up.update(name, checkpoint, rows)
        self.history.record(name, checkpoint, rows)
        new_status = ChangefeedStatus(checkpoint, resolved, st.warning)
        new_state = FeedState.WARNING if st.warning is not None else FeedState.NORMAL
        if info.target_ts and checkpoint >= info.target_ts:
            log.info("changefeed=%s reached target-ts %d: finished", info.id, info.target_ts)
            self._stop_runner(info)
            new_state = FeedState.FINISHED
        elif st.finished:
            log.info("changefeed=%s copied its tables (snapshot mode initial-only): finished", info.id)
            self._stop_runner(info)
            new_state = FeedState.FINISHED
        if new_state != info.state:  # one write: a reader never sees the new checkpoint with the old state
            self.store.put(info.with_changes(state=new_state), new_status)
        elif new_status != status:
            self.store.put_status(info.namespace, info.id, new_status)

    def _check_retained(self, ts: int) -> None:
        oldest = self.runner.oldest_retained_tso()
        if oldest and ts < oldest:
            raise ConfigError(
                f"fail to create or maintain changefeed because start-ts {ts} is earlier than the oldest "
                f"binlog the upstream still retains at {oldest}",
                code=ERR_START_TS_BEFORE_GC,
            )

    def _start_runner(self, info: ChangefeedInfo, checkpoint_ts: int) -> ChangefeedInfo:
        try:
            self.runner.start(info, checkpoint_ts)
            self._started.add((info.namespace, info.id))
            return info
        except Exception as e:
            err = RunningError.from_exception(e, self.addr)
            log.error("changefeed=%s failed to start: [%s] %s", info.id, err.code, err.message)
            failed = info.with_changes(state=FeedState.FAILED, error=err, stopped_at=self.clock())
            self.store.put_info(failed)
            return failed

    def _stop_runner(self, info: ChangefeedInfo) -> None:
        self._stop_started(info.namespace, info.id)

    def _stop_started(self, namespace: str, changefeed_id: str) -> None:
        self._started.discard((namespace, changefeed_id))
        try:
            self.runner.stop(namespace, changefeed_id)
        except Exception as e:
            log.warning("changefeed=%s: runner stop failed: %s", changefeed_id, e)


def states_needed(state: str) -> Iterable[FeedState] | None:
    """TiCDC's list filter: "" = not finished/removed, "all" = everything (None), else that one state."""
    if state == "all":
        return None
    if not state:
        return (FeedState.NORMAL, FeedState.STOPPED, FeedState.FAILED, FeedState.WARNING, FeedState.PENDING)
    try:
        return (FeedState(state),)
    except ValueError as e:
        raise ConfigError(f"invalid state {state!r}", code=ERR_API_INVALID_PARAM) from e
