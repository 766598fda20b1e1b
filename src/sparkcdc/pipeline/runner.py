"""The Spark runner of ``cdc server`` (``--runner spark``, the default): implements ``ChangefeedRunner``.

One capture thread per server (``sparkcdc.capture.supervisor``) pulls the upstream binlog into
``<data-dir>/capture/relay`` (resolved ts advances with heartbeats). Each running changefeed is one Structured
Streaming query in the server's SparkSession (``--spark-master``), with its private state in
``<data-dir>/changefeeds/<namespace>/<id>/``:

``spec.json``       the query's spec (0600), ``run.json`` the checkpoint this Spark checkpoint started from,
``spark/``          Spark's checkpointLocation (a restart resumes at the last committed batch exactly),
``progress.json``   the checkpoint the last batch's commit published (what ``status`` reports),
``snapshot_plan.pickle``, ``snapshot.json``  the initial snapshot's chunks and progress (``[snapshot]``).

Restart rule: a requested ``checkpoint_ts`` inside ``[run start, committed checkpoint]`` (the server's stored
checkpoint may lag after a crash) resumes the Spark checkpoint; anything else (resume with an overwritten
checkpoint) starts a fresh Spark checkpoint at exactly that ts. So does a Spark checkpoint whose next batch
may need relay data the GC already released.

Relay log GC (``gc``): segments below the server's safepoint are deleted, but never below what a running query
may still (re)plan: the start of its last committed batch (Spark replays that batch when it crashed before
recording it done), or its run's start before any commit. The applied bound is kept in
``<data-dir>/capture/gc_ts`` (written before any deletion) and ``oldest_retained_tso`` never goes below it.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkcdc.capture.position import BinlogPosition
from sparkcdc.capture.schema_history import SchemaHistory
from sparkcdc.capture.supervisor import CaptureThread, relay_anchor, relay_covers, relay_exists
from sparkcdc.capture.upstream import open_upstream
from sparkcdc.changefeed.info import ChangefeedInfo, RunningError
from sparkcdc.changefeed.runner import (
    CaptureStats,
    ChangefeedRunner,
    RunnerContext,
    RunnerStatus,
    SharedCaptureState,
)
from sparkcdc.changefeed.snapshot import SnapshotProgress
from sparkcdc.errors import ConfigError, SparkcdcError, from_traceback
from sparkcdc.local_file import private_dir
from sparkcdc.model.table import TableInfo
from sparkcdc.pipeline.progress import read_progress
from sparkcdc.pipeline.query import drain, stop_between_batches
from sparkcdc.pipeline.relay_gc import collect_relay, read_gc_ts, replay_floor
from sparkcdc.pipeline.spec import FeedSpec

log = logging.getLogger(__name__)

_UNKNOWN = "CDC:ErrProcessorUnknown"
MAX_RESTARTS = 5
FOLLOWER_GC_INTERVAL_S = 60.0
SNAPSHOT_LOG_SECONDS = 10.0


@dataclass
class _Feed:
    info: ChangefeedInfo
    spec: FeedSpec
    query: Any  # StreamingQuery; None while starting or when already at target-ts
    start_checkpoint: int
    starter: threading.Thread | None = None
    start_error: RunningError | None = None
    stopped: bool = False
    error_logged: bool = False
    restarts: int = 0
    last_warning: RunningError | None = None
    restart_checkpoint: int = 0  # the checkpoint when the query was last restarted after an error
    snapshot_logged_at: float = 0.0  # monotonic time of the last snapshot progress line


class SparkRunner:
    """``ChangefeedRunner`` running each changefeed as a Structured Streaming query.

    ``spark`` injects an existing session (tests); otherwise one is built for ``ctx.spark_master`` in the
    background at construction. ``trigger_seconds`` overrides the sink's flush-interval trigger (tests).
    """

    def __init__(
        self,
        ctx: RunnerContext,
        *,
        spark: Any = None,
        trigger_seconds: float | None = None,
        capture: bool = True,
    ) -> None:
        self.ctx = ctx
        self.upstream = open_upstream(ctx.upstream_uri)
        self.capture_dir = Path(ctx.data_dir) / "capture"
        self.trigger_seconds = trigger_seconds
        self._feeds: dict[tuple[str, str], _Feed] = {}
        self._lock = threading.Lock()
        self._spark = spark
        self._owns_spark = spark is None
        self._spark_error: BaseException | None = None
        self._spark_ready = threading.Event()
        self.capture: CaptureThread | None = None
        self.gc_ts = read_gc_ts(self.capture_dir)
        self._closed = threading.Event()
        if spark is None:
            threading.Thread(target=self._build_session, daemon=True, name="spark-session").start()
        else:
            self._spark_ready.set()
        self._capture = capture and bool(ctx.upstream_uri)
        if self._capture and ctx.shared_capture is None:
            self._start_capture(follow=False)
        elif self._capture:
            self._start_capture(follow=True)
            threading.Thread(target=self._follower_gc_loop, daemon=True, name="relay-gc").start()

    def _start_capture(self, follow: bool) -> None:
        """Start capturing; a leader waits until its relay log exists, a follower does not (it may wait long
        for the cluster's first owner)."""
        assert self.ctx.upstream_uri is not None
        shared = self.ctx.shared_capture
        if shared is not None and not relay_covers(self.capture_dir, self._anchor_or_none(shared)):
            log.info("the relay log here does not cover the cluster's capture anchor; capturing afresh from it")
            shutil.rmtree(self.capture_dir, ignore_errors=True)
            self.gc_ts = 0
        self.capture = CaptureThread(self.ctx.upstream_uri, self.capture_dir, self.ctx.relay_segment_bytes,
                                     shared, follow=follow)  # fmt: skip
        if follow:
            self.capture.start_pulling()
        else:
            self.capture.start()

    @staticmethod
    def _anchor_or_none(shared: SharedCaptureState) -> BinlogPosition | None:
        """The anchor, or None when etcd does not answer now: the relay log here is then kept (it fits unless
        this server was away for longer than the GC interval), and the puller's thread retries etcd itself."""
        try:
            return shared.anchor()
        except SparkcdcError as e:
            log.warning("cannot read the cluster's capture anchor (%s); keeping the relay log here", e)
            return None

    # -- cluster ownership ---------------------------------------------------------------------------
    def activate(self) -> None:
        """In a cluster, lead the capture: this server's relay log followed the previous owner's, commit-ts
        for commit-ts, so it goes on from its end with the cluster's reservations. The first capture of a
        cluster starts now and makes its start the anchor."""
        if self.ctx.shared_capture is None or not self._capture:
            return
        if self.capture is not None and not self.capture.follow:
            return
        self._stop_capture()
        self._start_capture(follow=False)
        log.info("capture leads the cluster (relay log from commit-ts %d)", self.bootstrap_ts())

    def suspend(self) -> None:
        """Stop the changefeeds here and follow the new owner's capture."""
        with self._lock:
            keys = sorted(self._feeds)
        for namespace, changefeed_id in keys:
            log.info("changefeed=%s/%s: stopped here (ownership moved)", namespace, changefeed_id)
            self.stop(namespace, changefeed_id)
        if self.ctx.shared_capture is None or not self._capture:
            return
        self._stop_capture()
        self._start_capture(follow=True)

    def _stop_capture(self) -> None:
        if self.capture is not None:
            self.capture.close()
            self.capture = None

    def bootstrap_ts(self) -> int:
        """The oldest commit-ts a changefeed can start after here (0 while the relay log does not exist yet)."""
        return self.capture.bootstrap_ts() if self.capture is not None else 0

    def _follower_gc_loop(self) -> None:
        """A follower releases its relay log below the cluster's anchor, which the owner moves with the GC
        safepoint (nothing below it is needed by any server)."""
        shared = self.ctx.shared_capture
        assert shared is not None
        while not self._closed.wait(FOLLOWER_GC_INTERVAL_S):
            capture = self.capture
            if capture is None or not capture.follow:
                continue
            try:
                anchor = shared.anchor()
                if anchor is not None:
                    self.gc(anchor.last_tso)
            except SparkcdcError as e:
                log.warning("follower relay log GC: %s", e)

    def upstream_tables(self, ts: int) -> list[TableInfo] | None:
        """The tables the relay log's schema history holds at ``ts`` (None before the capture has bootstrapped)."""
        if self.capture is None or not relay_exists(self.capture_dir):
            return None
        return SchemaHistory.load(self.capture_dir).tables_at(ts)

    def capture_stats(self) -> CaptureStats | None:
        capture = self.capture
        if capture is None:
            return None
        return CaptureStats(capture.resolved_ts(), capture.relay_bytes())

    # -- session -------------------------------------------------------------------------------------
    def _build_session(self) -> None:
        """Build the session, then warm it up (``sparkcdc.pipeline.warmup``) unless a changefeed is already
        waiting for it: that one's query warms it as well, and sooner. ``ready`` is set after both."""
        from sparkcdc.pipeline.query import build_session
        from sparkcdc.pipeline.warmup import warm_up

        began = time.monotonic()
        try:
            self._spark = build_session(self.ctx.spark_master, "sparkcdc-server", hold_fds=self.ctx.hold_fds,
                                        home_dir=Path(self.ctx.data_dir) / "spark-home",
                                        extra=self._scratch_settings())  # fmt: skip
            with self._lock:
                waiting = bool(self._feeds)
            work = Path(self.ctx.data_dir) / "warmup"
            if waiting:
                shutil.rmtree(work, ignore_errors=True)  # left by a server killed while warming up
            else:
                try:
                    warm_up(self._spark, work, cancel=self._closed)
                except Exception as e:  # only the first changefeed's start is slower
                    log.warning("warming the Spark session up failed: %s", _first_line(e))
            log.info("Spark session (%s) ready after %.1fs", self.ctx.spark_master, time.monotonic() - began)
        except BaseException as e:  # reported by the next start()
            self._spark_error = e
            log.error("cannot start Spark (%s): %s", self.ctx.spark_master, _first_line(e))
        finally:
            self._spark_ready.set()

    def _scratch_settings(self) -> dict[str, str]:
        """In local mode, Spark's scratch space (shuffle and spill files, the Python workers' batches: the
        changefeeds' rows) goes to ``<data-dir>/spark-local``, private (0700) like the rest of the data dir, instead of
        world-readable directories in /tmp. Emptied at each start: only a dead server's JVM wrote what is there (a
        live one would hold the data dir's lock), and a killed JVM never cleans up. A cluster's executors keep the
        workers' own ``spark.local.dir``: this path is the driver machine's."""
        if not self.ctx.spark_master.startswith("local"):
            return {}
        scratch = Path(self.ctx.data_dir) / "spark-local"
        shutil.rmtree(scratch, ignore_errors=True)
        return {"spark.local.dir": str(private_dir(scratch))}

    def ready(self) -> bool:
        return self._spark_ready.is_set() and self._spark is not None

    def _session(self) -> Any:
        if not self._spark_ready.wait(180):
            raise SparkcdcError("the SparkSession did not start within 180s", retryable=True)
        if self._spark is None:
            raise SparkcdcError(f"cannot start Spark ({self.ctx.spark_master}): {self._spark_error}")
        return self._spark

    # -- ChangefeedRunner ----------------------------------------------------------------------------
    def check_startable(self) -> None:
        if self.capture is None:
            raise ConfigError("cdc server was started without --upstream: the Spark runner has no binlog to capture "
                              "from; restart it with --upstream mysql://user:password@host:port (or "
                              "$SPARKCDC_UPSTREAM), or with --runner noop to manage changefeeds without replicating",
                              code="CDC:ErrInvalidServerOption")  # fmt: skip

    def start(self, info: ChangefeedInfo, checkpoint_ts: int) -> None:
        self.check_startable()
        if checkpoint_ts < self.gc_ts and not (info.target_ts and checkpoint_ts >= info.target_ts):
            # the server refuses this on create/resume; never start a run that would silently skip data
            raise SparkcdcError(
                f"changefeed {info.namespace}/{info.id}: checkpoint-ts {checkpoint_ts} is below the relay log GC "
                f"bound {self.gc_ts}; resume it with --overwrite-checkpoint-ts at or above that bound",
                code="CDC:ErrStartTsBeforeGC",
            )
        bootstrap_ts = self.bootstrap_ts()
        if checkpoint_ts < bootstrap_ts and not (info.target_ts and checkpoint_ts >= info.target_ts):
            # another server ran it before (ownership moved): this relay log never saw what came in between
            raise SparkcdcError(
                f"changefeed {info.namespace}/{info.id}: checkpoint-ts {checkpoint_ts} is before this server's "
                f"relay log starts ({bootstrap_ts}); the server that ran it captured the changes in between. "
                "Start that server again, or resume with --overwrite-checkpoint-ts at or above that ts (the "
                "changes in between are then not replicated)",
                code="CDC:ErrStartTsBeforeGC",
            )
        key = (info.namespace, info.id)
        state = self.ctx.changefeed_dir(info.namespace, info.id)
        private_dir(state)  # its spec.json holds the sink URI and its secrets
        start_ts = self._prepare_state(state, checkpoint_ts)
        mode = info.config.snapshot.mode
        snapshot = mode != "never" and start_ts == info.start_ts
        spec = FeedSpec(
            changefeed=f"{info.namespace}/{info.id}",
            capture_dir=str(self.capture_dir),
            state_dir=str(state),
            sink_uri=info.sink_uri,
            config=info.config.to_toml(),
            start_ts=start_ts,
            target_ts=start_ts if mode == "initial-only" else info.target_ts,
            sink_start_ts=checkpoint_ts,
            upstream_uri=(self.ctx.upstream_uri or "") if snapshot else "",
            snapshot=snapshot,
            ship_relay=not self.ctx.spark_master.startswith("local"),
        )
        if snapshot:
            _log_snapshot_start(spec)
        feed = _Feed(info, spec, None, checkpoint_ts)
        with self._lock:
            self._feeds[key] = feed
        if not (info.target_ts and checkpoint_ts >= info.target_ts):
            # Spark may still be starting (seconds): start the query in the background so the API answers now.
            feed.starter = threading.Thread(target=self._start_query, args=(feed,), daemon=True,
                                            name=f"start-{info.id}")  # fmt: skip
            feed.starter.start()
        log.info("changefeed=%s/%s starting at checkpoint %d", info.namespace, info.id, checkpoint_ts)

    def _start_query(self, feed: _Feed) -> None:
        from sparkcdc.pipeline.query import start_query

        try:
            query = start_query(self._session(), feed.spec, trigger_seconds=self.trigger_seconds)
        except SparkcdcError as e:
            feed.start_error = RunningError.from_exception(e, self.ctx.server_addr)
            return
        except Exception as e:  # Py4J/Spark analysis errors: keep our error's line when there is one
            log.debug("changefeed=%s: starting the query failed", feed.spec.changefeed, exc_info=True)
            feed.start_error = query_error(e, self.ctx.server_addr)
            return
        with self._lock:
            stopped = feed.stopped
            feed.query = query
        if stopped:  # stop() came while we were starting
            stop_between_batches(query, feed.spec)

    def _prepare_state(self, state: Path, checkpoint_ts: int) -> int:
        """Keep or reset the Spark checkpoint (module doc); returns the run's first offset."""
        run_file = state / "run.json"
        spark_dir = state / "spark"
        try:
            run_start = int(json.loads(run_file.read_text())["start_ts"])
        except (OSError, ValueError, KeyError, TypeError):
            run_start = None
        progress = read_progress(state / "progress.json")
        committed = progress.checkpoint_ts if progress is not None else run_start
        if (
            spark_dir.exists()
            and run_start is not None
            and committed is not None
            and (run_start <= checkpoint_ts <= committed)
        ):
            if replay_floor(progress, run_start) >= self.gc_ts:
                return run_start
            log.info("%s: the Spark checkpoint's next batch may need relay data below the GC bound %d; "
                     "starting afresh at %d", state, self.gc_ts, checkpoint_ts)  # fmt: skip
        shutil.rmtree(spark_dir, ignore_errors=True)
        (state / "progress.json").unlink(missing_ok=True)
        run_file.write_text(json.dumps({"start_ts": checkpoint_ts}))
        return checkpoint_ts

    def stop(self, namespace: str, changefeed_id: str) -> None:
        with self._lock:
            feed = self._feeds.pop((namespace, changefeed_id), None)
            if feed is not None:
                feed.stopped = True
        if feed is None:
            return
        if feed.starter is not None:
            feed.starter.join(300)
        if feed.query is None:
            return
        try:
            stop_between_batches(feed.query, feed.spec)
        except Exception as e:  # already dead: nothing more is written
            log.warning("changefeed=%s/%s: stopping the query: %s", namespace, changefeed_id, _first_line(e))
        log.info("changefeed=%s/%s stopped", namespace, changefeed_id)

    def status(self, namespace: str, changefeed_id: str) -> RunnerStatus | None:
        with self._lock:
            feed = self._feeds.get((namespace, changefeed_id))
        if feed is None:
            return None
        progress = read_progress(feed.spec.progress_path)
        checkpoint = max(feed.start_checkpoint, progress.checkpoint_ts if progress else 0)
        if feed.info.target_ts:
            checkpoint = min(checkpoint, feed.info.target_ts)
        resolved = max(checkpoint, self.capture.resolved_ts() if self.capture else 0)
        if feed.restarts and checkpoint > feed.restart_checkpoint:
            # the restarted query committed a batch: it recovered, and a later error gets the full retries again
            feed.restarts = 0
            feed.last_warning = None
        error = warning = None
        if self.capture is not None and self.capture.error is not None:
            error = RunningError.from_exception(self.capture.error, self.ctx.server_addr)
        elif self.capture is not None and self.capture.warning is not None:
            warning = RunningError.from_exception(self.capture.warning, self.ctx.server_addr)
        if error is None and feed.start_error is not None:
            error = feed.start_error
        if error is None and feed.query is not None:
            failure = self._query_failure(feed)
            error = None if failure is None else RunningError.from_exception(failure, self.ctx.server_addr)
            if error is not None and failure is not None and not failure.permanent and feed.restarts < MAX_RESTARTS:
                # TiCDC retries what a retry may fix: restart the query (its Spark checkpoint resumes exactly)
                feed.restarts += 1
                feed.restart_checkpoint = checkpoint
                log.warning("changefeed=%s: restarting the query (attempt %d of %d) after: %s",
                            feed.spec.changefeed, feed.restarts, MAX_RESTARTS, error.message)  # fmt: skip
                feed.last_warning = error
                feed.query = None
                feed.error_logged = False
                feed.starter = threading.Thread(target=self._start_query, args=(feed,), daemon=True)
                feed.starter.start()
                error = None
        if warning is None and feed.last_warning is not None:
            warning = feed.last_warning
        snapshot = self._snapshot_status(feed)
        finished = (feed.info.config.snapshot.mode == "initial-only" and snapshot is not None and snapshot.complete
                    and progress is not None and progress.checkpoint_ts >= feed.spec.start_ts)  # fmt: skip
        return RunnerStatus(checkpoint_ts=checkpoint, resolved_ts=resolved, error=error, warning=warning,
                            snapshot=snapshot, finished=finished, totals=progress.totals if progress else None,
                            last_batch=progress.last if progress else None,
                            last_batch_id=progress.batch_id if progress else -1)  # fmt: skip

    def _snapshot_status(self, feed: _Feed) -> SnapshotProgress | None:
        """The run's snapshot progress; logged every ``SNAPSHOT_LOG_SECONDS`` while the copy runs."""
        if not feed.spec.snapshot:
            return None
        from sparkcdc.pipeline import snapshot_state

        snapshot = snapshot_state.read_progress(feed.spec.snapshot_progress_path)
        now = time.monotonic()
        if snapshot is not None and not snapshot.complete and now - feed.snapshot_logged_at >= SNAPSHOT_LOG_SECONDS:
            feed.snapshot_logged_at = now
            log.info("changefeed=%s snapshot: %s", feed.spec.changefeed, describe_snapshot(snapshot))
        return snapshot

    def _query_failure(self, feed: _Feed) -> SparkcdcError | None:
        """Why the feed's query stopped, None while it runs."""
        try:
            if feed.query.isActive:
                return None
            exc = feed.query.exception()
        except Exception as e:  # the session is gone
            return SparkcdcError(_first_line(e), code=_UNKNOWN)
        if exc is None:
            return SparkcdcError("the changefeed's Spark query stopped", code=_UNKNOWN)
        err = query_failure(exc)
        if not feed.error_logged:
            feed.error_logged = True
            log.error("changefeed=%s query failed: %s\n%s", feed.spec.changefeed, err.message,
                      str(getattr(exc, "desc", None) or exc)[-4000:])  # fmt: skip
        return err

    def remove(self, info: ChangefeedInfo) -> None:
        shutil.rmtree(self.ctx.changefeed_dir(info.namespace, info.id), ignore_errors=True)

    def current_tso(self) -> int:
        """The upstream's current TSO, but never below the relay log's start: right after the server starts,
        the previous upstream second (``MySQLUpstream.current_tso``) can still be older than the relay."""
        return max(self.upstream.current_tso(), self.bootstrap_ts())

    def oldest_retained_tso(self) -> int:
        return max(self.upstream.oldest_retained_tso(), self.bootstrap_ts(), self.gc_ts)

    def gc(self, safepoint_ts: int) -> None:
        """Delete relay segments below the safepoint, kept above every running query's replay floor."""
        with self._lock:
            feeds = list(self._feeds.values())
        floors = [replay_floor(read_progress(f.spec.progress_path), f.spec.start_ts) for f in feeds]
        bound = min([safepoint_ts, *floors])
        if bound <= self.gc_ts or self.capture is None:
            return
        shared = self.ctx.shared_capture
        if shared is not None and not self.capture.follow:
            # the anchor moves up first: a new owner never needs what is deleted next
            anchor = relay_anchor(self.capture_dir, bound)
            if anchor is not None:
                shared.set_anchor(anchor)
        collect_relay(self.capture_dir, bound, safepoint_ts)
        self.gc_ts = bound

    def close(self) -> None:
        """Stop every query between micro-batches (all drained first, so their running batches finish
        together), then capture and, when this runner built it, Spark and its JVM."""
        self._closed.set()
        with self._lock:
            feeds = list(self._feeds.items())
        for _, feed in feeds:
            if feed.query is not None:
                try:
                    drain(feed.spec)
                except OSError as e:  # stop() stops it all the same, perhaps inside a batch
                    log.warning("changefeed=%s: cannot drain before stopping: %s", feed.spec.changefeed, e)
        for (ns, cf), _ in feeds:
            self.stop(ns, cf)
        self._stop_capture()
        if self._owns_spark and self._spark_ready.wait(180) and self._spark is not None:
            from sparkcdc.pipeline.gateway import stop_gateway

            try:
                self._spark.stop()
                stop_gateway()
            except Exception:
                log.debug("stopping Spark failed", exc_info=True)
            self._spark = None


def describe_snapshot(p: SnapshotProgress) -> str:
    """One log line of a snapshot's progress."""
    done = sum(t.chunks_done for t in p.tables.values())
    chunks = sum(t.chunks for t in p.tables.values())
    tables = sum(1 for t in p.tables.values() if t.done)
    return (f"{p.rows_done:,} of ~{p.rows_estimated:,} rows, {done} of {chunks} chunks, {tables} of "
            f"{len(p.tables)} tables copied")  # fmt: skip


def _log_snapshot_start(spec: FeedSpec) -> None:
    from sparkcdc.pipeline import snapshot_state

    progress = snapshot_state.read_progress(spec.snapshot_progress_path)
    if progress is None or progress.start_ts != spec.start_ts:
        log.info("changefeed=%s snapshot: copying the tables at start-ts %d before streaming",
                 spec.changefeed, spec.start_ts)  # fmt: skip
    elif progress.complete:
        log.info("changefeed=%s snapshot: already complete (%s)", spec.changefeed, describe_snapshot(progress))
    else:
        log.info("changefeed=%s snapshot: resuming; %d finished chunks are skipped (%s)", spec.changefeed,
                 len(progress.chunks_done), describe_snapshot(progress))  # fmt: skip


def query_failure(exc: Any) -> SparkcdcError:
    """The error a failed query (a StreamingQueryException) ended with: ours, as the Python traceback carries it
    (``errors.from_traceback``: class, code, message, whether a retry can help), else its first line as
    ``CDC:ErrProcessorUnknown`` (a JVM failure: retried)."""
    text = str(getattr(exc, "desc", None) or exc)
    return from_traceback(text) or SparkcdcError(_first_line(exc), code=_UNKNOWN)


def query_error(exc: Any, addr: str = "") -> RunningError:
    """``query_failure`` as the changefeed shows it."""
    return RunningError.from_exception(query_failure(exc), addr)


def _first_line(e: Any) -> str:
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    return lines[0][:500] if lines else type(e).__name__


def create_runner(ctx: RunnerContext) -> ChangefeedRunner:
    """Factory used by ``cdc server --runner spark``."""
    return SparkRunner(ctx)
