"""``format("sparkcdc_relay")``: the changefeed's streaming source over the puller's relay log.

Offsets are ``{"resolved_ts": n}``, read from the relay log's durable progress (never counters). A batch
``(start, end]`` holds every transaction with ``start < commit_ts <= end``; ``end`` is the smallest of

* the relay log's resolved ts (everything up to it is durable in the relay log),
* the changefeed's target-ts (when set),
* the commit-ts of the next DDL after ``start`` (the DDL barrier: the batch ends *at* the DDL, so the commit
  writes the DDL's schema file after the batch's data, and later rows go to the next batch),
* the commit-ts where the batch's relay bytes pass ``max_batch_bytes`` (bounded writer memory).

Pacing: Spark polls ``latestOffset`` every trigger (short); a caught-up query plans a batch only once per
``batch_interval`` (the sink's flush-interval), but right after a batch the DDL barrier or the byte cap cut short
the next one is planned at once, so a backlog (or an upstream with frequent DDL) is read back to back.

Partitions are transaction-aligned relay chunks (decoded on executors; the query shuffles their rows to the writer
tasks by route) or, when the spec has ``writer_tasks`` (``query.route_aligned``), one partition per writer task that
reads every chunk of the batch and decodes only the tables whose route it writes, so reading and writing run in one
task and there is no shuffle; plus one ``mark`` partition that emits the batch's end offset for the sink's commit.
``partitions()`` returns ``[]`` for an empty range. With a redo log (``[consistent] level = "eventual"``) each
chunk's task writes its log before it ends (``redo_log``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from sparkcdc.capture.relay_log import ChunkRef, RelayLog
from sparkcdc.capture.schema_history import SchemaHistory
from sparkcdc.pipeline import redo_log, snapshot_source, snapshot_state
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.stage_row import Mark, StageRow, spark_schema, to_batches
from sparkcdc.pipeline.transform import ChunkTransform
from sparkcdc.pipeline.worker_gc import freeze_survivors

log = logging.getLogger(__name__)

NAME = "sparkcdc_relay"
_TRACE_BYTES = 1 << 20

_TRANSFORMS: dict[str, tuple[FeedSpec, ChunkTransform]] = {}


@dataclass(frozen=True)
class ChunkPartition(InputPartition):
    """One relay chunk to decode. With ``spec.ship_relay`` (a cluster master: executors do not see the driver's
    disk) it carries the chunk's bytes and the schema history, so the executor opens no local path."""

    ref: ChunkRef
    handover: tuple[tuple[tuple[str, str], Any], ...] = ()  # copied tables still in their hand-over
    data: bytes = b""
    history: SchemaHistory | None = None
    batch: tuple[int, int, int, int] = (0, 0, 0, 0)  # (begin, end, chunk index, chunks): names its redo log


@dataclass(frozen=True)
class RoutePartition(InputPartition):
    """Writer task ``task`` of the spec's ``writer_tasks``: every relay chunk of the batch, in commit order, of which
    it decodes the tables it writes. Task 0 also passes on the batch's DDL (the others skip it)."""

    refs: tuple[ChunkRef, ...]
    task: int


@dataclass(frozen=True)
class MarkPartition(InputPartition):
    start_ts: int
    end_ts: int
    planned_ms: int = field(default_factory=lambda: time.time_ns() // 1_000_000)
    chunks: int = -1  # the batch's chunk partitions (0: the redo log gets an empty batch's log from here)


def _transform(spec: FeedSpec) -> ChunkTransform:
    """The worker's transform of the changefeed; one per state dir, so a restart (a new spec) replaces the last."""
    cached = _TRANSFORMS.get(spec.state_dir)
    if cached is not None and cached[0] == spec:
        cached[1]._sent_info.clear()
        return cached[1]
    t = ChunkTransform(spec)
    _TRANSFORMS[spec.state_dir] = (spec, t)
    return t


class RelayStreamReader(DataSourceStreamReader):
    def __init__(self, spec: FeedSpec) -> None:
        self.spec = spec
        self._relay: RelayLog | None = None
        self._last: dict[str, int] | None = None
        self._next_batch_at = 0.0  # monotonic: when a caught-up query plans its next batch
        self._behind = False  # the last batch stopped short of what the relay log had

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec, "_relay": None, "_last": None, "_next_batch_at": 0.0, "_behind": False}

    # -- driver ------------------------------------------------------------------------------------
    def _index(self) -> RelayLog:
        """The relay log's index, opened once per planner (its connection is reused across triggers)."""
        if self._relay is None:
            self._relay = RelayLog(self.spec.capture_dir)
        return self._relay

    def _trace(self, what: str) -> None:
        """Append a line to ``<state dir>/source.trace`` (the planner runs in a Spark-owned Python process
        whose logging reaches no file): when the source was asked what, for diagnosing stalled queries."""
        path = Path(self.spec.state_dir) / "source.trace"
        try:
            if path.exists() and path.stat().st_size > _TRACE_BYTES:
                path.replace(path.with_name("source.trace.1"))  # keep the last two generations only
            with open(path, "a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} {what}\n")
        except OSError:
            pass

    def initialOffset(self) -> dict[str, int]:
        if self.spec.snapshot:
            return snapshot_source.initial_offset(self.spec)
        return {"resolved_ts": self.spec.start_ts}

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, Any]:
        if start is None:
            start = self._last or self.initialOffset()
        begin = int(start["resolved_ts"])
        if self.spec.drain_path.exists():  # stopping: let the running batch be the last one
            self._trace("latestOffset draining")
            return start
        relay = self._index()
        if "chunks" in start:
            snap = snapshot_source.next_offset(self.spec, relay, start)
            if snap is not None:  # snapshot batches run back to back
                self._behind = True
                self._last = snap
                self._trace(f"latestOffset snapshot chunks {start['chunks']} -> {snap['chunks']}")
                return snap
            start = {"resolved_ts": begin, "chunks": int(start["chunks"])}
        available = relay.resolved_ts()
        if self.spec.target_ts:
            available = min(available, self.spec.target_ts)
        if available <= begin:
            return start
        now = time.monotonic()
        if not self._behind and now < self._next_batch_at:  # caught up: one batch per batch_interval
            return start
        end = available
        ddl = relay.next_ddl(begin, end)
        if ddl is not None:
            end = ddl
        capped = relay.byte_capped_end(begin, end, self.spec.max_batch_bytes)
        if capped is not None:
            end = min(end, capped)
        self._behind = end < available
        self._next_batch_at = now + self.spec.batch_interval
        self._last = {"resolved_ts": end}  # past the snapshot: later offsets need not name its chunks
        self._trace(f"latestOffset {begin} -> {end}{' (behind)' if self._behind else ''}")
        return self._last

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        from sparkcdc.capture import read_chunk
        from sparkcdc.capture.decode import cached_history

        if snapshot_source.is_snapshot_batch(start, end):
            chunks, last = snapshot_source.partitions(self.spec, start, end)
            if last:  # the copy is complete with this batch: publish start-ts
                chunks.append(MarkPartition(self.spec.start_ts, self.spec.start_ts))
            return chunks
        begin, stop = int(start["resolved_ts"]), int(end["resolved_ts"])
        if stop <= begin:
            return []
        relay = self._index()
        refs = relay.chunks(begin, stop, self.spec.chunk_bytes)
        handover = tuple(snapshot_state.streamed_handover(self.spec, begin, relay).items())
        parts: list[InputPartition]
        batch = [(begin, stop, i, len(refs)) for i in range(len(refs))]
        if self.spec.writer_tasks and refs:
            parts = [RoutePartition(tuple(refs), i) for i in range(self.spec.writer_tasks)]
        elif self.spec.ship_relay:
            history = cached_history(self.spec.capture_dir, stop)
            parts = [ChunkPartition(r, handover, read_chunk(r), history, b) for r, b in zip(refs, batch, strict=True)]
        else:
            parts = [ChunkPartition(r, handover, batch=b) for r, b in zip(refs, batch, strict=True)]
        parts.append(MarkPartition(begin, stop, chunks=len(refs)))
        log.debug("changefeed=%s batch (%d, %d]: %d chunks", self.spec.changefeed, begin, stop, len(refs))
        return parts

    def commit(self, end: dict[str, Any]) -> None:
        self._last = {k: int(end[k]) for k in ("resolved_ts", "chunks") if k in end}

    def stop(self) -> None:
        if self._relay is not None:
            self._relay.close()
            self._relay = None

    # -- executors ---------------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's stage rows in Arrow record batches (``stage_row.to_batches``: Spark takes them as they
        are, where it would convert tuples field by field)."""
        freeze_survivors()
        yield from to_batches(self._rows(partition))

    def _rows(self, partition: InputPartition) -> Iterator[StageRow]:
        """The stage rows of one partition, in commit order."""
        if isinstance(partition, MarkPartition):
            if partition.chunks == 0 and (redo := self.spec.redo()) is not None:
                redo_log.empty_batch(self.spec, redo, partition.start_ts, partition.end_ts)
            yield Mark(partition.start_ts, partition.end_ts, partition.planned_ms)
            return
        if isinstance(partition, snapshot_source.SnapshotPartition):
            yield from snapshot_source.read(self.spec, partition, _transform(self.spec))
            return
        from sparkcdc.capture import decode_chunk

        transform = _transform(self.spec)
        if isinstance(partition, RoutePartition):
            wanted = transform.task_tables(partition.task, self.spec.writer_tasks)
            batch = chain.from_iterable(
                decode_chunk(ref, self.spec.capture_dir, tz=self.spec.tz, force_replicate=transform.force_replicate,
                             skip_server_id=transform.skip_server_id, raw_rows=transform.native, tables=wanted)
                for ref in partition.refs
            )  # fmt: skip
            yield from transform.rows(batch, ddls=partition.task == 0)
            return
        assert isinstance(partition, ChunkPartition)
        # a shipped chunk brings its bytes and history; otherwise passing the capture dir lets decode_chunk use
        # its per-process schema-history cache
        events = decode_chunk(partition.data or partition.ref, partition.history or self.spec.capture_dir,
                              tz=self.spec.tz, force_replicate=transform.force_replicate,
                              skip_server_id=transform.skip_server_id, raw_rows=transform.native)  # fmt: skip
        rows = transform.rows(events, dict(partition.handover))
        redo = self.spec.redo()
        yield from rows if redo is None else redo_log.tee(self.spec, redo, partition.batch, rows)


class RelaySource(DataSource):
    """Options: ``spec`` = path of the changefeed's spec file (see ``sparkcdc.pipeline.spec``)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> Any:
        return spark_schema()

    def streamReader(self, schema: Any) -> RelayStreamReader:
        from sparkcdc.errors import ConfigError

        path = self.options.get("spec")
        if not path:
            raise ConfigError(f'format("{NAME}") needs option("spec", <path of the changefeed spec>)')
        return RelayStreamReader(FeedSpec.load(path))
