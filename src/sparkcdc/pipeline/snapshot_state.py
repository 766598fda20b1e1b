"""The snapshot's files in the changefeed's state dir: the chunk plan, the progress and the keys each chunk read.

``snapshot_plan.pickle`` is written once, before the first micro-batch that names its chunks (Spark's offset log
names chunks by their index in it, so a restart must find the same plan). After each snapshot batch is durable
in the sink, the driver-side commit writes ``snapshot_keys/<chunk>.keys`` for each chunk read (the binlog
position of its read and the keys it read), then rewrites ``snapshot.json``: which chunks are done, rows per
table and each table's low watermark (``sparkcdc.capture.snapshot_reader``). The streamed batches after the
snapshot use both to leave out what the copy already holds (``snapshot_handover``), until every table is past
its last read: ``snapshot_handover.done`` then says so and the keys are removed. All are private files of our own
processes.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sparkcdc.capture.relay_log import RelayLog
from sparkcdc.capture.snapshot_plan import Chunk
from sparkcdc.changefeed.snapshot import SnapshotProgress, TableProgress
from sparkcdc.errors import StorageError
from sparkcdc.local_file import write_atomic
from sparkcdc.model.table import TableInfo


@dataclass(frozen=True)
class ChunkRead:
    """One chunk read and made durable by a batch: its rows, the batch's low watermark, the binlog position of
    the read's snapshot (``file`` "" when the server did not say) and the keys it read (``pack_keys``)."""

    index: int
    rows: int
    watermark: int
    file: str = ""
    pos: int = 0
    keys: bytes = b""


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
        return SnapshotProgress.from_record(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_progress(path: Path, progress: SnapshotProgress) -> None:
    write_atomic(path, json.dumps(progress.to_record()).encode(), what="the snapshot progress")


def record_reads(spec: Any, reads: Iterable[ChunkRead]) -> None:
    """Record chunks a batch made durable: their keys first, then the progress that names them done."""
    reads = list(reads)
    plan = load_plan(spec.snapshot_plan_path)
    if plan is None:
        raise StorageError(f"{spec.snapshot_plan_path}: the snapshot plan is gone; re-create the changefeed")
    for r in reads:
        path = keys_path(spec, r.index)
        if r.file:
            header = json.dumps({"file": r.file, "pos": r.pos}).encode() + b"\n"
            write_atomic(path, header + r.keys, what="the keys of a snapshot chunk")
        else:
            path.unlink(missing_ok=True)  # a replayed read that does not know its position
    progress = read_progress(spec.snapshot_progress_path)
    write_progress(spec.snapshot_progress_path, record_chunks(plan, progress, reads))


def record_chunks(plan: SnapshotPlan, progress: SnapshotProgress | None, done: Iterable[ChunkRead]) -> SnapshotProgress:
    """``progress`` after the chunks ``done`` are durable. A chunk read again (a replayed batch) counts once."""
    current = progress if progress is not None and progress.start_ts == plan.start_ts else initial_progress(plan)
    tables = dict(current.tables)
    finished = set(current.chunks_done)
    for r in done:
        name = plan.chunks[r.index].table_name
        t = tables[name]
        again = r.index in finished
        finished.add(r.index)
        mark = r.watermark if t.watermark == 0 else min(t.watermark, r.watermark)
        tables[name] = replace(
            t,
            chunks_done=t.chunks_done + (0 if again else 1),
            rows_done=t.rows_done + (0 if again else r.rows),
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


_KEYS_DIR = "snapshot_keys"
_HANDOVER_DONE = "snapshot_handover.done"


def keys_path(spec: Any, index: int) -> Path:
    return Path(spec.state_dir) / _KEYS_DIR / f"{index}.keys"


def read_chunk_point(path: Path) -> tuple[str, int] | None:
    """The binlog position a chunk's keys file records, None when there is no file."""
    try:
        with open(path, "rb") as f:
            header = json.loads(f.readline())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise StorageError(f"{path}: the keys of a snapshot chunk are unreadable ({e}); remove and re-create the "
                           "changefeed to copy the tables again") from e  # fmt: skip
    return str(header["file"]), int(header["pos"])


def read_chunk_keys(path: str | Path) -> Any:
    """The sorted key hashes of a chunk's keys file (numpy uint64). Raises StorageError."""
    from sparkcdc.pipeline.snapshot_handover import unpack_keys

    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise StorageError(f"{path}: cannot read the keys of a snapshot chunk: {e.strerror or e}") from e
    nl = data.find(b"\n")
    if nl < 0 or (len(data) - nl - 1) % 8:
        raise StorageError(f"{path}: the keys of a snapshot chunk are truncated; remove and re-create the "
                           "changefeed to copy the tables again")  # fmt: skip
    return unpack_keys(data[nl + 1 :])


def streamed_handover(spec: Any, after_ts: int, relay: RelayLog) -> dict[tuple[str, str], Any]:
    """What the streamed batch after ``after_ts`` of ``spec``'s run leaves out, per copied table still in its
    hand-over (``snapshot_handover.TableHandover``); ``relay``: the relay log, which maps each chunk's binlog
    position to a commit-ts. Empty once every table is past it (then marked done, and the keys removed).

    Raises UpstreamError (CDC:ErrSnapshotTableChanged) when a copied table was dropped, renamed or replaced before
    its last read (``snapshot_handover.changed_during_copy``)."""
    from sparkcdc.capture.schema_history import SchemaHistory
    from sparkcdc.pipeline.snapshot_handover import TableHandover, changed_during_copy, key_collations

    done_path = Path(spec.state_dir) / _HANDOVER_DONE
    progress = read_progress(spec.snapshot_progress_path)
    if progress is None or not progress.complete or _handed_over(done_path) == progress.start_ts:
        return {}
    plan = load_plan(spec.snapshot_plan_path)
    if plan is None or progress.start_ts != plan.start_ts:
        return {}
    out: dict[tuple[str, str], Any] = {}
    resolved = True
    history: SchemaHistory | None = None
    by_table: dict[str, list[Chunk]] = {}
    for c in plan.chunks:
        by_table.setdefault(c.table_name, []).append(c)
    for name, info in plan.tables.items():
        low = progress.tables[name].watermark if name in progress.tables else 0
        table_chunks = by_table.get(name, [])
        reads: list[tuple[str, int]] = []
        for c in table_chunks:
            path = keys_path(spec, c.index)
            point = read_chunk_point(path)
            if point is None:
                continue
            until = relay.last_commit_at(point, low)
            if until is None:  # the relay log has not passed the read yet: all it has is in the copy
                resolved = False
                until = _FOREVER
            reads.append((str(path), until))
        if len(table_chunks) == 1 and reads:  # one read holds the whole table: no key needed
            low = high = reads[0][1]
            reads = []
        high = max([low] + [u for _, u in reads])
        if high > after_ts:
            key = table_chunks[0].key if table_chunks else ()
            if history is None:  # the index's schema history holds every DDL of the transactions it holds
                history = relay.schema_history()
            changed = changed_during_copy(history, info, plan.start_ts, high)
            out[(info.schema, info.table)] = TableHandover(key, low, high, tuple(reads), changed,
                                                           key_collations(info, key))  # fmt: skip
    if not out and resolved:
        write_atomic(done_path, str(plan.start_ts).encode(), what="the snapshot hand-over mark")
        shutil.rmtree(Path(spec.state_dir) / _KEYS_DIR, ignore_errors=True)
    return out


def reset_handover(spec: Any) -> None:
    """Forget an earlier snapshot's hand-over (its keys and end mark): a new plan starts its own."""
    shutil.rmtree(Path(spec.state_dir) / _KEYS_DIR, ignore_errors=True)
    (Path(spec.state_dir) / _HANDOVER_DONE).unlink(missing_ok=True)


def _handed_over(path: Path) -> int | None:
    """The start-ts of the snapshot whose hand-over is over, None when none is."""
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


_FOREVER = 2**63 - 1
