"""The snapshot's two files in the changefeed's state dir: the chunk plan and the progress.

``snapshot_plan.pickle`` is written once, before the first micro-batch that names its chunks (Spark's offset log
names chunks by their index in it, so a restart must find the same plan). ``snapshot.json`` is rewritten by the
driver-side commit after each snapshot batch is durable in the sink: which chunks are done, rows per table,
and each table's low watermark (``sparkcdc.capture.snapshot_reader``), which the streamed batches after the
snapshot use to leave out what the copy already holds. Both are private files of our own processes.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from sparkcdc.capture.snapshot_plan import Chunk
from sparkcdc.changefeed.snapshot import SnapshotProgress, TableProgress
from sparkcdc.errors import StorageError
from sparkcdc.local_file import write_atomic
from sparkcdc.model.table import TableInfo


@dataclass(frozen=True)
class SnapshotPlan:
    """Every chunk of the snapshot at ``start_ts``, in read order, and the tables they belong to."""

    start_ts: int
    chunks: tuple[Chunk, ...]
    tables: dict[str, TableInfo]

    def chunk_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {name: 0 for name in self.tables}
        for c in self.chunks:
            counts[c.table_name] += 1
        return counts


def save_plan(path: Path, plan: SnapshotPlan) -> None:
    write_atomic(path, pickle.dumps(plan), what="the snapshot plan", mode=0o600)


def load_plan(path: Path) -> SnapshotPlan | None:
    """The plan, None when there is none. Raises StorageError when it is unreadable."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise StorageError(f"{path}: cannot read the snapshot plan: {e.strerror or e}") from e
    try:
        plan = pickle.loads(data)
    except Exception as e:
        raise StorageError(f"{path}: the snapshot plan is damaged ({e}); delete it to plan the snapshot again") from e
    if not isinstance(plan, SnapshotPlan):
        raise StorageError(f"{path}: not a snapshot plan; delete it to plan the snapshot again")
    return plan


def initial_progress(plan: SnapshotPlan) -> SnapshotProgress:
    estimated: dict[str, int] = {}
    for c in plan.chunks:
        estimated[c.table_name] = estimated.get(c.table_name, 0) + c.estimated_rows
    tables = {n: TableProgress(k, rows_estimated=estimated.get(n, 0)) for n, k in plan.chunk_counts().items()}
    return SnapshotProgress(plan.start_ts, tables, frozenset(), not plan.chunks)


def read_progress(path: Path) -> SnapshotProgress | None:
    """The recorded progress, None when there is none or it cannot be read (the plan is then read again)."""
    try:
        doc = json.loads(path.read_text())
        tables = {name: TableProgress(**t) for name, t in doc["tables"].items()}
        return SnapshotProgress(int(doc["start_ts"]), tables, frozenset(doc["chunks_done"]), bool(doc["complete"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_progress(path: Path, progress: SnapshotProgress) -> None:
    doc = {
        "start_ts": progress.start_ts,
        "complete": progress.complete,
        "chunks_done": sorted(progress.chunks_done),
        "tables": {n: asdict(t) for n, t in progress.tables.items()},
    }
    write_atomic(path, json.dumps(doc).encode(), what="the snapshot progress")


def record_chunks(
    plan: SnapshotPlan, progress: SnapshotProgress | None, done: Iterable[tuple[int, int, int]]
) -> SnapshotProgress:
    """``progress`` after the chunks ``done`` (index, rows read, watermark) are durable. A chunk read again
    (a replayed batch) counts once."""
    current = progress if progress is not None and progress.start_ts == plan.start_ts else initial_progress(plan)
    tables = dict(current.tables)
    finished = set(current.chunks_done)
    for index, rows, watermark in done:
        name = plan.chunks[index].table_name
        t = tables[name]
        again = index in finished
        finished.add(index)
        mark = watermark if t.watermark == 0 else min(t.watermark, watermark)
        tables[name] = replace(
            t,
            chunks_done=t.chunks_done + (0 if again else 1),
            rows_done=t.rows_done + (0 if again else rows),
            watermark=mark,
        )
    return SnapshotProgress(plan.start_ts, tables, frozenset(finished), len(finished) == len(plan.chunks))


def done_prefix(progress: SnapshotProgress | None, plan: SnapshotPlan) -> int:
    """How many chunks from the first are done: where a run that lost Spark's checkpoint resumes."""
    if progress is None or progress.start_ts != plan.start_ts:
        return 0
    n = 0
    while n < len(plan.chunks) and n in progress.chunks_done:
        n += 1
    return n


def skip_until(
    plan: SnapshotPlan | None, progress: SnapshotProgress | None, after_ts: int
) -> tuple[tuple[str, str, int], ...]:
    """(schema, table, watermark) of tables whose streamed changes up to the watermark are already in the copy,
    for the streamed batch after ``after_ts`` (empty once every watermark is behind it)."""
    if plan is None or progress is None or progress.start_ts != plan.start_ts:
        return ()
    out = []
    for name, info in plan.tables.items():
        t = progress.tables.get(name)
        if t is not None and t.watermark > after_ts:
            out.append((info.schema, info.table, t.watermark))
    return tuple(sorted(out))


def streamed_skip(spec: Any, after_ts: int) -> tuple[tuple[str, str, int], ...]:
    """``skip_until`` for the streamed batch after ``after_ts`` of ``spec``'s run (the plan is only read while
    some watermark is ahead of the batch)."""
    progress = read_progress(spec.snapshot_progress_path)
    if progress is None or all(t.watermark <= after_ts for t in progress.tables.values()):
        return ()
    return skip_until(load_plan(spec.snapshot_plan_path), progress, after_ts)
