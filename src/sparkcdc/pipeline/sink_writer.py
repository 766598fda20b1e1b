"""``format("sparkcdc_sink")``: the changefeed's streaming sink, over whichever sink the spec's URI names.

Executors (``write``): the query routed rows by the sink encoder's route (a shuffle, or a source task per writer
that decodes only its own tables), so each task owns whole routes; the task
hands its payloads to the sink's writer, and its commit message carries the writer's result plus the DDL events
and the batch mark it saw.

Driver (``commit``, run by Spark in a separate Python worker after *every* task succeeded): the sink's committer
publishes the results and then the batch's DDLs (the DDL is the batch's last transaction: the DDL barrier), the
snapshot chunks it read are recorded (``snapshot.json``), then,
if the batch moves the checkpoint forward, the sink's checkpoint and, last, ``progress.json`` for the runner. The
checkpoint never moves backwards (a replayed batch after a restart republishes nothing older).

``abort`` deletes nothing: a sink's durable output that no commit published stays unpublished (for storage: data
files in no index, whose numbers are never reused). A replayed batch writes its rows again, which consumers treat
as TiCDC's at-least-once duplicates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage

from sparkcdc.errors import CorruptDataError, SparkcdcError, StorageError, with_code
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.stage_row import Ddl, Dml, Mark, Snap, StageRow, from_batches, spark_schema
from sparkcdc.pipeline.transform import load_info
from sparkcdc.pipeline.worker_gc import freeze_survivors
from sparkcdc.sink.base import Routed

log = logging.getLogger(__name__)

NAME = "sparkcdc_sink"


@dataclass(frozen=True)
class BatchMessage(WriterCommitMessage):
    """What one writer task made durable (primitives and frozen values only)."""

    result: Any = None  # the sink writer's result
    ddls: tuple[tuple[int, int, bytes], ...] = ()  # (commit_ts, seq, pickled DDLEvent)
    mark: tuple[int, int, int] | None = None  # (start, end) offsets of the batch, when it was planned (Unix ms)
    snapshot: tuple[Any, ...] = ()  # snapshot chunks read (snapshot_state.ChunkRead)
    rows: int = 0  # row changes handed to the sink
    size: int = 0  # their payload bytes
    seconds: float = 0.0  # the sink writer's time
    last_ts: int = 0  # the largest commit-ts of those row changes


def write_partition(spec: FeedSpec, rows: Iterator[StageRow]) -> BatchMessage:
    """Executor side of the sink for one partition's stage rows: the sink's writer gets the payloads in commit
    order. When the task's rows come from its own reader (``spec.writer_tasks``) they already are in that order and
    stream through, a few at a time (a big transaction's parts are never all in memory); rows shuffled from several
    source tasks are gathered and sorted first."""
    freeze_survivors()
    batch = _Batch(spec)
    began = time.monotonic()
    try:
        if spec.writer_tasks:
            result = spec.sink().writer(spec.sink_config(), spec.sink_context()).write(batch.payloads(rows))
        else:
            payloads = sorted(batch.payloads(rows, gather=True), key=lambda p: (p.commit_ts, p.seq))
            result = spec.sink().writer(spec.sink_config(), spec.sink_context()).write(payloads) if payloads else None
    except SparkcdcError as e:
        raise with_code(e) from e
    return BatchMessage(result, tuple(batch.ddls), batch.mark, tuple(batch.snapshot), batch.rows, batch.size,
                        time.monotonic() - began, batch.last_ts)  # fmt: skip


class _Batch:
    """What one writer task's rows hold besides payloads (DDLs, the batch mark, snapshot reads) and totals of the
    payloads, gathered while ``payloads`` is consumed."""

    def __init__(self, spec: FeedSpec) -> None:
        self.spec = spec
        self.ddls: list[tuple[int, int, bytes]] = []
        self.mark: tuple[int, int, int] | None = None
        self.snapshot: list[Any] = []
        self.rows = self.size = self.last_ts = 0
        self._infos: dict[tuple[str, str, int], Any] = {}

    def payloads(self, rows: Iterator[StageRow], gather: bool = False) -> Iterator[Routed]:
        """The dml rows as payloads, in arrival order. A versioned table's definition comes with its first row of
        a route; with ``gather`` every row is read first (shuffled rows come in any order), else a payload of a
        table whose definition has not come yet is an error."""
        pending: list[Dml] = []
        for r in rows:
            if isinstance(r, Dml):
                if r.info is not None and (r.schema, r.table, r.version) not in self._infos:
                    self._infos[(r.schema, r.table, r.version)] = load_info(r.info)
                if gather:
                    pending.append(r)
                else:
                    yield self._routed(r)
            elif isinstance(r, Ddl):
                self.ddls.append((r.commit_ts, r.seq, r.event))
            elif isinstance(r, Mark):
                self.mark = (r.start_ts, r.end_ts, r.planned_ms)
            elif isinstance(r, Snap):
                from sparkcdc.pipeline.snapshot_state import ChunkRead

                self.snapshot.append(ChunkRead(index=r.chunk, rows=r.rows, watermark=r.watermark, file=r.file,
                                               pos=r.pos, keys=r.keys))  # fmt: skip
        for found in pending:
            yield self._routed(found)

    def _routed(self, r: Dml) -> Routed:
        info = self._infos.get((r.schema, r.table, r.version))
        if info is None:
            raise CorruptDataError(
                f"changefeed {self.spec.changefeed}: no table definition for {r.schema}.{r.table} version {r.version}"
            )
        self.rows += r.nrows
        self.size += len(r.payload)
        self.last_ts = max(self.last_ts, r.commit_ts)
        return Routed(r.schema, r.table, r.version, r.physical_table_id, r.commit_ts, r.seq, r.nrows, r.payload, info)


_RECOVERED: set[str] = set()  # the changefeeds (state dirs) whose sink recovered in this process


def commit_batch(spec: FeedSpec, messages: list[Any], batch_id: int) -> int | None:
    """Driver side: the sink publishes the batch, then its checkpoint, then ``progress.json``. Returns the new
    checkpoint (None when this batch did not advance it). Raises SparkcdcError; the checkpoint stays then."""
    from sparkcdc.changefeed.runner import BatchStats, SinkTotals
    from sparkcdc.pipeline.progress import CommittedProgress, read_progress, write_progress

    msgs = [m for m in messages if isinstance(m, BatchMessage)]
    began = time.monotonic()
    try:
        committer = spec.sink().committer(spec.sink_config(), spec.sink_context())
        _start_run(spec, committer)
        ddls = [load_info(blob) for _ts, _seq, blob in sorted(d for m in msgs for d in m.ddls)]
        committer.commit([m.result for m in msgs if m.result is not None], ddls)
        _record_snapshot(spec, [c for m in msgs for c in m.snapshot])
        marks = [m.mark for m in msgs if m.mark is not None]
        if not marks:
            return None
        start, end = min(m[0] for m in marks), max(m[1] for m in marks)
        previous = read_progress(spec.progress_path)
        if previous is not None and previous.checkpoint_ts >= end:
            return None
        committer.checkpoint(end)
    except SparkcdcError as e:
        raise with_code(e) from e
    stats = BatchStats(
        rows=sum(m.rows for m in msgs),
        size=sum(m.size for m in msgs),
        flush_seconds=max((m.seconds for m in msgs), default=0.0) + time.monotonic() - began,
        batch_seconds=max(0.0, time.time() - min(m[2] for m in marks) / 1000),
        last_ts=max((m.last_ts for m in msgs), default=0),
    )
    write_progress(spec.progress_path, CommittedProgress(end, batch_id, start, (previous.totals if previous else
                                                                               SinkTotals()).add(stats), stats))
    log.debug("changefeed=%s batch %d committed: checkpoint %d", spec.changefeed, batch_id, end)
    return end


def _record_snapshot(spec: FeedSpec, reads: list[Any]) -> None:
    """Record the snapshot chunks the batch made durable (before the checkpoint that ends the snapshot)."""
    if reads:
        from sparkcdc.pipeline import snapshot_state

        snapshot_state.record_reads(spec, reads)


def _start_run(spec: FeedSpec, committer: Any) -> None:
    """Let the sink recover once per process (``SinkCommitter.recover``), and give it the run's tables once per run
    (a run = one ``sink_start_ts``), before its first batch."""
    if spec.state_dir not in _RECOVERED:
        committer.recover()
        _RECOVERED.add(spec.state_dir)
    marker = Path(spec.state_dir) / "sink_started"
    try:
        if marker.read_text() == str(spec.sink_start_ts):
            return
    except FileNotFoundError:
        pass
    except OSError as e:
        raise StorageError(f"{marker}: {e.strerror or e}") from e

    def tables() -> list[Any]:
        from sparkcdc.capture.schema_history import SchemaHistory

        replicated: list[Any] = spec.replica_config().replicated(
            SchemaHistory.load(spec.capture_dir).tables_at(spec.start_ts))
        return replicated

    committer.start(tables)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(str(spec.sink_start_ts))
    except OSError as e:
        raise StorageError(f"{marker}: {e.strerror or e}") from e


class SinkStreamWriter(DataSourceStreamArrowWriter):
    """Spark hands ``write`` the task's rows as Arrow record batches (of ``spark.sql.execution.arrow.
    maxRecordsPerBatch`` rows, ``query``), read column by column into typed stage rows (``stage_row.from_batches``)
    instead of a ``Row`` object per row."""

    def __init__(self, spec: FeedSpec) -> None:
        self.spec = spec

    def write(self, iterator: Iterator[Any]) -> BatchMessage:
        return write_partition(self.spec, from_batches(iterator))

    def commit(self, messages: list[Any], batchId: int) -> None:
        commit_batch(self.spec, messages, batchId)

    def abort(self, messages: list[Any], batchId: int) -> None:
        log.warning("changefeed=%s batch %d aborted; what its tasks wrote stays unpublished",
                    self.spec.changefeed, batchId)  # fmt: skip


class SinkDataSource(DataSource):
    """Options: ``spec`` = path of the changefeed's spec file."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> Any:
        return spark_schema()

    def streamWriter(self, schema: Any, overwrite: bool) -> SinkStreamWriter:
        from sparkcdc.errors import ConfigError

        path = self.options.get("spec")
        if not path:
            raise ConfigError(f'format("{NAME}") needs option("spec", <path of the changefeed spec>)')
        return SinkStreamWriter(FeedSpec.load(path))
