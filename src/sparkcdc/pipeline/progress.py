"""The changefeed's committed checkpoint, shared between the commit worker and the runner through one file.

The driver-side ``commit`` runs in a separate Python worker process (shared/ENVIRONMENT.md), so the checkpoint it
writes to the sink's ``metadata`` is also recorded in ``<changefeed dir>/progress.json`` (temporary file, fsync,
rename) where the server's runner polls it. The file only ever moves forward.

``batch_start_ts`` is where that batch began: until Spark records the batch as done it may replay it after a
crash, so the relay log GC must keep everything after it (0 in files written before it was recorded).
``totals`` and ``last`` are the sink's counters since the changefeed first committed here and the last batch's
figures (``/metrics``); a batch replayed after a crash does not advance the checkpoint and is not counted again.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sparkcdc.changefeed.runner import BatchStats, SinkTotals
from sparkcdc.local_file import write_atomic


@dataclass(frozen=True, slots=True)
class CommittedProgress:
    checkpoint_ts: int
    batch_id: int
    batch_start_ts: int = 0
    totals: SinkTotals = field(default_factory=SinkTotals)
    last: BatchStats | None = None


def read_progress(path: str | os.PathLike[str]) -> CommittedProgress | None:
    """The last committed progress, None when no batch has committed yet (or the file is unreadable)."""
    try:
        doc = json.loads(Path(path).read_text())
        last = doc.get("last")
        return CommittedProgress(int(doc["checkpoint_ts"]), int(doc["batch_id"]), int(doc.get("batch_start_ts", 0)),
                                 SinkTotals(**doc.get("totals", {})), BatchStats(**last) if last else None)  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_progress(path: str | os.PathLike[str], progress: CommittedProgress) -> None:
    """Atomically replace the progress file. Raises StorageError."""
    doc = {"checkpoint_ts": progress.checkpoint_ts, "batch_id": progress.batch_id,
           "batch_start_ts": progress.batch_start_ts, "totals": asdict(progress.totals),
           "last": asdict(progress.last) if progress.last else None}  # fmt: skip
    write_atomic(path, json.dumps(doc).encode(), what="the checkpoint")
