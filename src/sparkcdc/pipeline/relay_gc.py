"""Relay log GC for the Spark runner: the persisted bound, the replay floor of a query, and the deletion.

The bound is kept in ``<data-dir>/capture/gc_ts``, written (fsync, rename) *before* any segment is deleted, so
after a crash the runner never reports data older than the bound as retained.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from sparkcdc.errors import SparkcdcError, StorageError
from sparkcdc.local_file import write_atomic
from sparkcdc.pipeline.progress import CommittedProgress

log = logging.getLogger(__name__)


def replay_floor(progress: CommittedProgress | None, run_start: int) -> int:
    """The lowest start of a batch the query may still plan: its last committed batch's start (replayed when
    Spark did not record it done), or the run's start before the first commit (or in old progress files)."""
    if progress is not None and progress.batch_start_ts:
        return progress.batch_start_ts
    return run_start


def read_gc_ts(capture_dir: Path) -> int:
    """The relay log's GC bound (0 before the first GC). Raises StorageError when the file is corrupt."""
    path = capture_dir / "gc_ts"
    try:
        text = path.read_text()
    except FileNotFoundError:
        return 0
    except OSError as e:
        raise StorageError(f"{path}: cannot read the relay log GC bound: {e.strerror or e}") from e
    try:
        return int(text)
    except ValueError as e:
        raise StorageError(f"{path}: the relay log GC bound is not a number; restore or delete it") from e


def write_gc_ts(capture_dir: Path, ts: int) -> None:
    """Durably replace the GC bound. Raises StorageError."""
    write_atomic(capture_dir / "gc_ts", str(ts).encode(), what="the relay log GC bound")


def collect_relay(capture_dir: Path, bound: int, safepoint_ts: int) -> None:
    """Record ``bound`` and delete the relay segments whose transactions are all below it (RelayLog.gc); log
    the bytes freed. Raises StorageError when the bound cannot be recorded (nothing is deleted then); a failed
    deletion is only logged (the next safepoint retries it)."""
    from sparkcdc.capture import RelayLog

    write_gc_ts(capture_dir, bound)
    sizes = {str(p.resolve()): p.stat().st_size for p in (capture_dir / "relay").glob("*.seg")}
    relay = RelayLog(capture_dir)
    try:
        deleted = relay.gc(bound)
    except (SparkcdcError, sqlite3.Error, OSError) as e:
        log.warning("relay log gc below %d failed (retried at the next safepoint): %s", bound, e)
        return
    finally:
        relay.close()
    freed = sum(sizes.get(p, 0) for p in deleted)
    # INFO only when disk space came back: the bound moves at every safepoint update
    log.log(logging.INFO if deleted else logging.DEBUG, "relay log gc: bound %d (safepoint %d), %d segments "
            "deleted, %d bytes freed", bound, safepoint_ts, len(deleted), freed)  # fmt: skip
