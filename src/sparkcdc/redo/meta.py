"""Driver side: the redo log's meta (``<changefeed>.meta``) and its garbage collection.

The meta is TiCDC's LogMeta (checkpoint ts, resolved ts) as JSON, plus what ``cdc redo apply`` needs to continue the
sink where it stopped: the changefeed (its checkpoints in the downstream's ``tidb_cdc.checkpoint`` are the sink's)
and the sink's session time zone. After each batch's checkpoint (every row and DDL up to it is durable downstream,
and the batch's log files were written before any of it was applied) the committer records ``checkpoint = resolved
= the batch's end`` at most every ``meta-flush-interval``, then deletes log files of batches that end at or before
the recorded checkpoint (at most every 5 s, TiCDC's GC interval): the meta first, so the log never has a hole
between the meta's checkpoint and the files left. A meta that lags only makes an apply start earlier (what is
already applied is skipped against the downstream's checkpoints), and a resolved ts that lags is made up for by
the complete batches after it (``redo.reader``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict, dataclass
from typing import Final

from sparkcdc.changefeed.consistent import ConsistentConfig
from sparkcdc.errors import CorruptDataError
from sparkcdc.redo.names import LogName, file_key, meta_name
from sparkcdc.storage.external import ExternalStorage

log = logging.getLogger(__name__)

FORMAT: Final = 1
GC_INTERVAL_S: Final = 5.0


@dataclass(frozen=True)
class RedoMeta:
    changefeed: str
    checkpoint_ts: int
    resolved_ts: int
    time_zone: str | None = None
    format: int = FORMAT

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes, name: str) -> RedoMeta:
        """Raises CorruptDataError naming ``name``."""
        try:
            doc = json.loads(data)
            meta = cls(str(doc["changefeed"]), int(doc["checkpoint_ts"]), int(doc["resolved_ts"]),
                       None if doc.get("time_zone") is None else str(doc["time_zone"]), int(doc["format"]))  # fmt: skip
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptDataError(f"redo meta {name}: malformed ({e}); it must be JSON written by the changefeed"
                                   ) from None
        if meta.format > FORMAT:
            raise CorruptDataError(f"redo meta {name}: format {meta.format} is newer than this version reads")
        if meta.resolved_ts < meta.checkpoint_ts:
            raise CorruptDataError(f"redo meta {name}: resolved ts {meta.resolved_ts} is below its checkpoint ts "
                                   f"{meta.checkpoint_ts}")  # fmt: skip
        return meta


# (storage URI, changefeed) -> (monotonic time of the last meta write, of the last GC); per driver process
_last: dict[tuple[str, str], tuple[float, float]] = {}
_lock = threading.Lock()


def advance(config: ConsistentConfig, changefeed: str, checkpoint_ts: int, time_zone: str | None) -> None:
    """Record that everything up to ``checkpoint_ts`` is durable downstream (see the module docstring). Raises
    StorageError."""
    storage = ExternalStorage.from_uri(config.storage)
    now = time.monotonic()
    with _lock:
        wrote, collected = _last.get((config.storage, changefeed), (-1e9, -1e9))
    if now - wrote < config.meta_flush_interval_ms / 1000:
        return
    key = file_key(changefeed)
    storage.write(meta_name(key), RedoMeta(changefeed, checkpoint_ts, checkpoint_ts, time_zone).to_json())
    wrote = now
    if now - collected >= GC_INTERVAL_S:
        deleted = collect(storage, key, checkpoint_ts)
        if deleted:
            log.debug("changefeed=%s: deleted %d redo log files of batches up to %d", changefeed, deleted,
                      checkpoint_ts)  # fmt: skip
        collected = now
    with _lock:
        _last[(config.storage, changefeed)] = (wrote, collected)


def collect(storage: ExternalStorage, key: str, checkpoint_ts: int) -> int:
    """Delete the log files of changefeed ``key`` (``names.file_key``) of batches that end at or before
    ``checkpoint_ts``; returns how many."""
    deleted = 0
    for path in storage.list():
        name = LogName.parse(path)  # files at the root only: a path with a '/' is no log name
        if name is not None and name.changefeed == key and name.end <= checkpoint_ts:
            storage.delete(path)
            deleted += 1
    return deleted


def remove_all(config: ConsistentConfig, changefeed: str) -> int:
    """Delete the redo log of a removed changefeed (TiCDC's owner does the same): its meta first, so that an
    interrupted removal never leaves a meta over a partial log for ``cdc redo apply`` to trust, then every log file;
    other changefeeds' files under the same storage are kept. Returns how many files went. Raises StorageError."""
    with _lock:
        _last.pop((config.storage, changefeed), None)  # a changefeed created again under this id starts afresh
    storage = ExternalStorage.from_uri(config.storage)
    key = file_key(changefeed)
    deleted = 0
    if storage.exists(meta_name(key)):
        storage.delete(meta_name(key))
        deleted += 1
    return deleted + collect(storage, key, 2**64)

