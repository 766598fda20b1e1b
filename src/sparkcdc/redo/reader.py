"""Apply side: what a changefeed's redo log holds, told from the storage alone (``cdc redo meta``, ``cdc redo apply``).

The log starts at the meta's checkpoint ts (without a meta: at the first batch there is; the changefeed GCs only
after writing one), and runs through the *complete* batches that follow each other from there: a batch ``(b, e]``
whose every chunk has all its parts (``redo.names``). Its end is the log's resolved ts, at or after the meta's:
every batch was complete before any of its rows was applied downstream (its files are written before the sink's
writers start), so whatever the downstream holds is inside it, and a batch the crash left incomplete never reached
the downstream. A replayed batch whose chunks were cut differently leaves two complete file sets: one is used.

Before anything is applied every file is read whole and checked (:func:`stage`: checksums, end record); remote
files are downloaded into the apply's ``--tmp-dir`` on the way, so the apply reads each once from the storage.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sparkcdc.errors import ConfigError, CorruptDataError
from sparkcdc.redo.log_file import Record, decode
from sparkcdc.redo.meta import RedoMeta
from sparkcdc.redo.names import LogName, changefeed_of, file_key, parse_meta_name
from sparkcdc.storage.external import ExternalStorage

log = logging.getLogger(__name__)

ERR_NO_META = "CDC:ErrRedoMetaFileNotFound"


@dataclass(frozen=True)
class RedoLog:
    """One changefeed's redo log: apply ``files`` (in order) to bring the downstream from ``checkpoint_ts`` to
    ``resolved_ts``; ``time_zone`` is the sink's session zone; ``meta`` None when there is none yet."""

    changefeed: str
    checkpoint_ts: int
    resolved_ts: int
    time_zone: str | None
    files: tuple[LogName, ...]
    meta: RedoMeta | None

    @classmethod
    def read(cls, storage: ExternalStorage, changefeed: str | None = None) -> RedoLog:
        """The log of ``changefeed`` (``namespace/id``, or an id in the default namespace; None: the storage's only
        one). Raises CorruptDataError (a malformed meta; the meta's resolved ts beyond the complete batches),
        ConfigError (no redo log at all, several changefeeds and none chosen), StorageError."""
        metas: dict[str, str] = {}
        logs: dict[str, list[LogName]] = {}
        for path in storage.list():
            if (key := parse_meta_name(path)) is not None:
                metas[key] = path
            elif (name := LogName.parse(path)) is not None:
                logs.setdefault(name.changefeed, []).append(name)
        found = sorted(set(metas) | set(logs))
        shown = ", ".join(changefeed_of(k) for k in found)
        where = storage.uri.masked()
        if changefeed is None:
            if not found:
                raise ConfigError(f"no redo meta file found in {where}: not a redo log's storage (the changefeed's "
                                  "[consistent] storage), or nothing was written yet", code=ERR_NO_META)  # fmt: skip
            if len(found) > 1:
                raise ConfigError(f"{where} holds the redo logs of changefeeds {shown}: choose one with "
                                  "--changefeed", code=ERR_NO_META)  # fmt: skip
            key = found[0]
        else:
            key = file_key(changefeed if "/" in changefeed else f"default/{changefeed}")
            if key not in found:
                raise ConfigError(f"no redo log of changefeed {changefeed!r} in {where}"
                                  f"{'; it holds ' + shown if found else ''}", code=ERR_NO_META)  # fmt: skip
        meta = None
        if key in metas:
            data = storage.read(metas[key]) or b""
            meta = RedoMeta.from_json(data, metas[key])
        return cls._chain(meta.changefeed if meta is not None else changefeed_of(key), meta, logs.get(key, []))

    @classmethod
    def _chain(cls, changefeed: str, meta: RedoMeta | None, names: list[LogName]) -> RedoLog:
        batches: dict[tuple[int, int], dict[int, list[LogName]]] = {}
        for n in names:
            batches.setdefault((n.begin, n.end), {}).setdefault(n.count, []).append(n)
        complete: dict[int, list[tuple[int, list[LogName]]]] = {}  # begin -> [(end, files)]
        for (begin, end), by_count in batches.items():
            for count, files in by_count.items():
                if _complete(count, files):
                    complete.setdefault(begin, []).append((end, sorted(files)))
        start = meta.checkpoint_ts if meta is not None else min((b for b, _ in batches), default=0)
        cur, files = start, []
        while complete.get(cur):
            end, chosen = max(complete[cur], key=lambda x: x[0])
            files.extend(chosen)
            cur = end
        if meta is not None and meta.resolved_ts > cur:
            missing = sorted(n.format() for (b, _), by in batches.items() if b == cur for f in by.values() for n in f)
            raise CorruptDataError(
                f"redo log of {changefeed}: its meta says everything up to {meta.resolved_ts} is logged, but the "
                f"complete batches end at {cur}: the batch after it is "
                f"{'incomplete (' + ', '.join(missing[:5]) + ')' if missing else 'missing'}; nothing was applied")
        zone = meta.time_zone if meta is not None else None
        return cls(changefeed, start, cur, zone, tuple(files), meta)


def _complete(count: int, files: list[LogName]) -> bool:
    """Whether ``files`` (one batch, cut into ``count`` chunks) hold every part of every chunk."""
    parts: dict[int, dict[int, bool]] = {}
    for f in files:
        parts.setdefault(f.index, {})[f.part] = f.last
    indexes = range(max(count, 1))  # a batch without transactions has one empty log
    for i in indexes:
        have = parts.get(i)
        if not have or sorted(have) != list(range(len(have))) or not have[len(have) - 1]:
            return False
        if any(have[p] for p in range(len(have) - 1)):  # a last part before the end: cut differently twice
            return False
    return set(parts) == set(indexes)


@dataclass(frozen=True)
class Staged:
    """One checked log file: at ``path`` (the storage's own file, or its copy in ``--tmp-dir``)."""

    name: LogName
    path: Path
    records: int

    def read(self) -> Iterator[Record]:
        return decode(self.path.read_bytes(), self.name.format())


def stage(storage: ExternalStorage, log_: RedoLog, tmp_dir: Path) -> list[Staged]:
    """Every file of ``log_`` read whole and checked, remote ones copied into ``tmp_dir`` (emptied first: files of
    an earlier apply would not be fresh). Raises CorruptDataError naming the first bad file, StorageError."""
    local = storage.is_local
    if not local:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        tmp_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for name in log_.files:
        path = Path(storage.full_path(name.format())) if local else tmp_dir / name.format()
        data = storage.read(name.format())
        if data is None:
            raise CorruptDataError(f"redo log {name.format()} disappeared from {storage.uri.masked()} while it was "
                                   "read: is a changefeed still writing (and collecting) this log?")  # fmt: skip
        records = sum(1 for _ in decode(data, name.format()))
        if not local:
            path.write_bytes(data)
        out.append(Staged(name, path, records))
    log.info("redo log of %s: %d files checked, %d records", log_.changefeed, len(out), sum(s.records for s in out))
    return out
