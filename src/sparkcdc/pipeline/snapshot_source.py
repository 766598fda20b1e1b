"""The snapshot phase of the relay source: micro-batches that copy the tables before the streamed ones.

A run with ``FeedSpec.snapshot`` starts with offsets ``{"resolved_ts": S, "chunks": k}`` (S: the run's start-ts,
k: chunks of the plan read so far; the first streamed batch's end offset drops ``chunks``, so the plan is not
read again at every trigger). Each snapshot batch reads the next ``[snapshot] parallelism`` chunks, one
Spark task each, and its end offset also records the batch's low watermark (the relay log's resolved ts and
binlog position when it was planned; ``sparkcdc.capture.snapshot_reader``). Every copied row is an INSERT, with
the commit-ts ``S - n + i`` for chunk ``i`` of ``n``: below S, so consumers apply the copy before any streamed
change (commit-ts > S), and one per chunk, increasing, because ordered appliers (the MySQL sink, the Kafka
consumer) checkpoint between commit-ts values and take a second batch at an applied commit-ts for a replay. The
batches publish no checkpoint until the last one, whose mark publishes S: only then is the copy complete.
After it the source plans streamed batches from S as usual, leaving out the changes each copied table's copy
already holds (``snapshot_handover``).

Spark's offset log makes this resumable: a batch is replayed with the same chunks and watermark after a crash,
and finished batches are never read again. A run that lost its Spark checkpoint resumes after the chunks that
``snapshot.json`` records as done.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import InputPartition

from sparkcdc.capture.relay_log import RelayLog
from sparkcdc.capture.snapshot_plan import Chunk
from sparkcdc.model.table import TableInfo
from sparkcdc.pipeline import snapshot_state
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.stage_row import Snap, StageRow
from sparkcdc.pipeline.transform import ChunkTransform

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SnapshotPartition(InputPartition):
    chunk: Chunk
    table: TableInfo
    commit_ts: int
    watermark: int
    not_before: tuple[str, int] | None


def initial_offset(spec: FeedSpec) -> dict[str, int]:
    plan = snapshot_state.load_plan(spec.snapshot_plan_path)
    done = 0
    if plan is not None and plan.start_ts == spec.start_ts:
        done = snapshot_state.done_prefix(snapshot_state.read_progress(spec.snapshot_progress_path), plan)
    return {"resolved_ts": spec.start_ts, "chunks": done}


def load_or_make_plan(spec: FeedSpec) -> snapshot_state.SnapshotPlan:
    """The run's plan, made (asking the upstream) and saved the first time."""
    plan = snapshot_state.load_plan(spec.snapshot_plan_path)
    if plan is not None and plan.start_ts == spec.start_ts:
        return plan
    plan = make_plan(spec)
    snapshot_state.reset_handover(spec)
    snapshot_state.save_plan(spec.snapshot_plan_path, plan)
    snapshot_state.write_progress(spec.snapshot_progress_path, snapshot_state.initial_progress(plan))
    return plan


def make_plan(spec: FeedSpec) -> snapshot_state.SnapshotPlan:
    """Chunks of every table the changefeed replicates, as they are defined at start-ts."""
    import pymysql  # type: ignore[import-untyped]

    from sparkcdc.capture.schema_history import SchemaHistory
    from sparkcdc.capture.snapshot_plan import plan_table
    from sparkcdc.errors import UpstreamError
    from sparkcdc.mysql.target import MysqlTarget

    replica = spec.replica_config()
    tables = replica.replicated(SchemaHistory.load(spec.capture_dir).tables_at(spec.start_ts))
    tables.sort(key=lambda t: (t.schema, t.table))
    chunk_size = replica.snapshot.chunk_size
    chunks: list[Chunk] = []
    try:
        conn = pymysql.connect(**MysqlTarget.parse(spec.upstream_uri, upstream=True).client_args(), charset="utf8mb4")
        try:
            with conn.cursor() as cur:
                for t in tables:
                    chunks += plan_table(cur, t, chunk_size, len(chunks))
        finally:
            conn.close()
    except pymysql.MySQLError as e:
        raise UpstreamError(f"changefeed {spec.changefeed}: cannot plan the snapshot: {e}", retryable=True) from e
    return snapshot_state.SnapshotPlan(spec.start_ts, tuple(chunks), {t.qualified_name: t for t in tables})


def next_offset(spec: FeedSpec, relay: RelayLog, begin: dict[str, int]) -> dict[str, Any] | None:
    """The end offset of the next snapshot batch after ``begin``, None when the snapshot is read."""
    plan = load_or_make_plan(spec)
    done = int(begin.get("chunks", 0))
    steps = max(1, len(plan.chunks))  # a plan without chunks still takes one batch: its mark publishes start-ts
    if done >= steps:
        return None
    resolved, file, pos = _watermark(relay)
    end = min(steps, done + spec.replica_config().snapshot.parallelism)
    return {"resolved_ts": spec.start_ts, "chunks": end, "watermark": max(resolved, spec.start_ts),
            "watermark_file": file, "watermark_pos": pos}  # fmt: skip


def _watermark(relay: RelayLog) -> tuple[int, str, int]:
    """The relay log's resolved ts and the binlog position of its last transaction at or before it."""
    resolved = relay.resolved_ts()
    txn = relay.position_after(resolved)
    return (resolved, txn.binlog_file, txn.binlog_pos) if txn else (resolved, "", 0)


def is_snapshot_batch(start: dict[str, Any], end: dict[str, Any]) -> bool:
    return int(end.get("chunks", 0)) > int(start.get("chunks", 0))


def partitions(spec: FeedSpec, start: dict[str, Any], end: dict[str, Any]) -> tuple[list[InputPartition], bool]:
    """A task per chunk of the batch, and whether the batch reads the plan's last chunk (it then ends the
    snapshot: its mark publishes start-ts)."""
    plan = snapshot_state.load_plan(spec.snapshot_plan_path)
    if plan is None or plan.start_ts != spec.start_ts:
        from sparkcdc.errors import StorageError

        raise StorageError(f"{spec.snapshot_plan_path}: the snapshot plan this run's offsets name is gone; "
                           "remove and re-create the changefeed to copy the tables again")  # fmt: skip
    first, stop = int(start.get("chunks", 0)), int(end["chunks"])
    not_before = (str(end["watermark_file"]), int(end["watermark_pos"])) if end.get("watermark_file") else None
    n = len(plan.chunks)
    parts: list[InputPartition] = [
        SnapshotPartition(c, plan.tables[c.table_name], plan.start_ts - n + c.index, int(end["watermark"]), not_before)
        for c in plan.chunks[first:stop]
    ]
    return parts, stop >= len(plan.chunks)


def read(spec: FeedSpec, partition: SnapshotPartition, transform: ChunkTransform) -> Iterator[StageRow]:
    """The chunk's rows through the sink's encoder, then one ``snap`` row: the chunk, rows read, watermark,
    where the read's snapshot sits in the binlog and the keys it read (``snapshot_handover``)."""
    from sparkcdc.capture.decode import resolve_tz
    from sparkcdc.capture.snapshot_reader import read_chunk
    from sparkcdc.mysql.target import MysqlTarget
    from sparkcdc.pipeline.snapshot_handover import key_hasher, pack_keys

    chunk = partition.chunk
    hash_of = key_hasher(partition.table, chunk.key) if chunk.key else None
    keys: list[int] = []
    rows = 0
    at: tuple[str, int] | None = None

    def counted() -> Iterator[Any]:
        nonlocal rows, at
        upstream = MysqlTarget.parse(spec.upstream_uri, upstream=True)  # on an executor: its TLS files must be here
        reader = read_chunk(upstream.client_args(), chunk, partition.table, partition.commit_ts, resolve_tz(spec.tz),
                            partition.not_before)  # fmt: skip
        while True:
            try:
                ev = next(reader)
            except StopIteration as stop:
                at = stop.value
                return
            rows += 1
            if hash_of is not None:
                keys.append(hash_of(ev.values))
            yield ev

    yield from transform.rows(counted())
    file, pos = at or ("", 0)
    yield snap_row(snapshot_state.ChunkRead(chunk.index, rows, partition.watermark, file, pos,
                                            pack_keys(keys) if at and hash_of else b""))  # fmt: skip


def snap_row(done: snapshot_state.ChunkRead) -> Snap:
    return Snap(chunk=done.index, rows=done.rows, watermark=done.watermark, file=done.file, pos=done.pos,
                keys=done.keys)
