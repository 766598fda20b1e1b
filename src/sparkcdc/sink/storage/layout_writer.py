"""The storage-sink writer: single-table transactions in, TiCDC-layout data files out (no Spark here).

Durability order (ours differs from TiCDC on purpose). TiCDC writes ``meta/CDC.index`` *before* the data file
it names, so the index may name a missing or empty file and a restart reuses that number (§5). We write the
data file **first** and the index after it, so an index never names a file that is not durable. A crash
between the two leaves a data file newer than the index; the restart rule alone would then pick that number
again and overwrite it. So on (re)opening a directory the writer applies TiCDC's rule to the index *and then
probes forward*, skipping every number whose file exists non-empty. Together: a non-empty data file is never
overwritten, a number is reused only when its file is missing or empty, and TiCDC's own index files (index
first) are read correctly.

A data file is never visible half-written: on local storage a file past ``SPILL_BYTES`` grows in a temporary file
(``CDC.tmp.<uuid>`` in its version directory, which readers skip) that is fsync'd and renamed to its data file name
when complete; smaller files, and every file on an object store, are written whole in one atomic write or PUT.

Split use (Spark): executors run ``StorageWriter(..., commit_index=False)``, which writes schema and data files
and returns :class:`DataFileDescriptor` s; the driver then calls :func:`commit_index_files` and, after every
data file of the batch is durable, :func:`write_checkpoint`. One table must be written by one writer at a time
(dispatch with :func:`dispatch_worker`).
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sparkcdc.codec.base import TxnEncoder, txn_encoder
from sparkcdc.errors import ConfigError
from sparkcdc.model import RowChange, RowOp, TableInfo
from sparkcdc.model.events import split_key_updates
from sparkcdc.storage.external import ExternalStorage
from sparkcdc.storage.layout import TableDir, date_string, index_file_content, parse_index_file
from sparkcdc.storage.schema_file import TableDefinition
from sparkcdc.storage.schema_store import check_or_write_schema
from sparkcdc.storage.sink_config import StorageSinkConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DataFileDescriptor:
    """A durable data file (primitives only: it travels from executors to the driver)."""

    path: str
    size: int
    index_path: str
    schema: str
    table: str
    table_version: int
    physical_table_id: int | None
    date: str
    file_index: int
    rows: int
    min_commit_ts: int
    max_commit_ts: int

    @property
    def index_content(self) -> bytes:
        return index_file_content(self.path)


@dataclass(frozen=True, slots=True)
class FlushResult:
    """Exactly the files a flush made durable, in write order per kind."""

    data_files: tuple[DataFileDescriptor, ...] = ()
    schema_files: tuple[str, ...] = ()
    index_files: tuple[str, ...] = ()

    def __add__(self, other: FlushResult) -> FlushResult:
        if not other.data_files and not other.schema_files and not other.index_files:
            return self
        if not self.data_files and not self.schema_files and not self.index_files:
            return other
        return FlushResult(
            self.data_files + other.data_files,
            self.schema_files + other.schema_files,
            self.index_files + other.index_files,
        )

    @property
    def paths(self) -> tuple[str, ...]:
        return self.schema_files + tuple(d.path for d in self.data_files) + self.index_files

    @property
    def max_commit_ts(self) -> int:
        return max((d.max_commit_ts for d in self.data_files), default=0)


# A table's data file is built in memory up to this much, then (local storage) appended to a temporary file beside
# it as it grows: a writer holds a few MiB per table instead of up to ``file-size`` plus a joined copy of that.
SPILL_BYTES = 4 << 20


@dataclass
class _Pending:
    table: TableInfo
    chunks: list[bytes] = field(default_factory=list)  # not yet in ``staged``
    size: int = 0  # of the whole file so far (header not counted)
    rows: int = 0
    min_ts: int = 0
    max_ts: int = 0
    buffered: int = 0  # bytes in ``chunks``
    staged: str | None = None  # the temporary file holding the file's first bytes (``ExternalStorage.stage``)
    header: int = 0  # bytes of the file header in ``staged``
    dir_version: int = 0
    schema_file: str | None = None  # written for this file's directory before it was staged


@dataclass
class _DirState:
    date: str | None = None
    last_index: int | None = None


_EMPTY = FlushResult()
_Key = tuple[str, str, int, int | None]  # schema, table, table version, physical id (None: no partition level)


class StorageWriter:
    """Batches encoded transactions per versioned table and writes rotated data files.

    ``clock`` gives the flush time for the date directory (default: local time, as TiCDC); ``monotonic``
    drives the flush interval. ``sink_start_ts`` is TiCDC's TableSinkStartTs: the directory version of a
    transaction is ``max(table.version, sink_start_ts)`` unless given explicitly.
    """

    def __init__(
        self,
        config: StorageSinkConfig,
        storage: ExternalStorage | None = None,
        *,
        encoder: TxnEncoder | None = None,
        clock: Callable[[], datetime] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        commit_index: bool = True,
        sink_start_ts: int = 0,
    ) -> None:
        self.config = config
        self.storage = storage if storage is not None else ExternalStorage.from_config(config)
        self._encoder = encoder
        self._clock = clock or (lambda: datetime.now().astimezone())
        self._monotonic = monotonic
        self.commit_index = commit_index
        self.sink_start_ts = sink_start_ts
        self._pending: dict[_Key, _Pending] = {}
        self._dirs: dict[_Key, _DirState] = {}
        self._dir_versions: dict[tuple[str, str, int], int] = {}
        self._last_flush = monotonic()

    @property
    def encoder(self) -> TxnEncoder:
        if self._encoder is None:
            self._encoder = txn_encoder(self.config.protocol, self.config.encoder_options())
        return self._encoder

    @property
    def buffered_bytes(self) -> int:
        return sum(p.size for p in self._pending.values())

    def write_txn(
        self, table: TableInfo, rows: Sequence[RowChange], *, table_version: int | None = None
    ) -> FlushResult:
        """Buffer one single-table transaction; flush that table when it reaches ``file-size`` and everything
        when ``flush-interval`` has passed. Returns the files made durable by this call (often none).

        Key-changing UPDATEs are split into DELETE+INSERT first unless ``output-raw-change-event`` is set.
        Raises StorageError (storage), EncodeError (codec).
        """
        if not rows:
            return self.poll()
        version = table_version if table_version is not None else max(table.version, self.sink_start_ts)
        if not self.config.output_raw_change_event and any(r.op is RowOp.UPDATE for r in rows):
            rows = split_key_updates(rows)
        result = _EMPTY
        for pid, group in _by_physical_table(rows):
            key = self._key(table, version, pid)
            data = self.encoder.encode_txn(group)
            if not data:
                continue
            low = high = group[0].commit_ts
            for r in group:
                ts = r.commit_ts
                if ts < low:
                    low = ts
                elif ts > high:
                    high = ts
            pending = self._pending.get(key)
            if pending is None:
                pending = self._pending[key] = _Pending(table, min_ts=low, max_ts=high)
            self._append(key, pending, data)
            pending.table = table
            pending.rows += len(group)
            pending.min_ts = min(pending.min_ts, low)
            pending.max_ts = max(pending.max_ts, high)
            if pending.size >= self.config.file_size:
                result += self._flush_keys([key])
        polled = self.poll()
        return result if polled is _EMPTY else result + polled

    def write_encoded(
        self,
        table: TableInfo,
        data: bytes,
        *,
        rows: int,
        min_commit_ts: int,
        max_commit_ts: int,
        table_version: int | None = None,
        physical_table_id: int = 0,
    ) -> FlushResult:
        """Buffer one single-table transaction that is already encoded (and split) by the caller: the Spark
        pipeline encodes on the source's executors and only concatenates here. Same rotation as ``write_txn``
        but no interval flush (the caller flushes at the end of its batch). Raises StorageError."""
        if not data:
            return FlushResult()
        version = table_version if table_version is not None else max(table.version, self.sink_start_ts)
        key = self._key(table, version, physical_table_id)
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = _Pending(table, min_ts=min_commit_ts)
        self._append(key, pending, data)
        pending.table = table
        pending.rows += rows
        pending.min_ts = min(pending.min_ts, min_commit_ts)
        pending.max_ts = max(pending.max_ts, max_commit_ts)
        if pending.size >= self.config.file_size:
            return self._flush_keys([key])
        return FlushResult()

    def _append(self, key: _Key, pending: _Pending, data: bytes) -> None:
        """Add ``data`` to the table's file; past ``SPILL_BYTES`` in memory, a local file's bytes go to its temporary
        file (in the table's version directory, whose schema file is checked or written first, as a flush would).
        Raises StorageError."""
        pending.chunks.append(data)
        pending.size += len(data)
        pending.buffered += len(data)
        if pending.buffered < SPILL_BYTES or not self.storage.is_local:
            return
        if pending.staged is None:
            pending.dir_version, pending.schema_file = self._directory_version(pending.table, key[2])
            directory = TableDir(key[0], key[1], pending.dir_version, key[3]).format()
            header = self.encoder.file_header(pending.table)
            pending.header = len(header)
            pending.chunks.insert(0, header)
            pending.staged = self.storage.stage(directory, pending.chunks)
        else:
            self.storage.append(pending.staged, pending.chunks)
        pending.chunks.clear()
        pending.buffered = 0

    def discard(self) -> None:
        """Drop what is buffered, deleting the temporary files of unfinished data files (a failed task: its retry
        writes the rows again). Raises StorageError."""
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if p.staged is not None:
                self.storage.discard(p.staged)

    def poll(self) -> FlushResult:
        """Flush everything if ``flush-interval`` has passed since the last full flush."""
        if self._monotonic() - self._last_flush >= self.config.flush_interval:
            return self.flush()
        return _EMPTY

    def flush(self) -> FlushResult:
        """Write every buffered table now (one data file per versioned table)."""
        self._last_flush = self._monotonic()
        return self._flush_keys(list(self._pending))

    close = flush

    def _key(self, table: TableInfo, version: int, physical_id: int) -> _Key:
        partition = physical_id if self.config.enable_partition_separator and table.is_partitioned else None
        return (table.schema, table.table, version, partition)

    def _flush_keys(self, keys: Iterable[_Key]) -> FlushResult:
        result = FlushResult()
        date = date_string(self.config.date_separator, self._clock())
        for key in keys:
            pending = self._pending.get(key)
            if pending is None or pending.size == 0:
                self._pending.pop(key, None)
                continue
            result += self._flush_one(key, pending, date)
            del self._pending[key]  # only after it is durable: a failed flush keeps the data buffered
        return result

    def _flush_one(self, key: _Key, pending: _Pending, date: str) -> FlushResult:
        schema, table, version, pid = key
        if pending.staged is None:
            dir_version, schema_file = self._directory_version(pending.table, version)
        else:
            dir_version, schema_file = pending.dir_version, pending.schema_file
        table_dir = TableDir(schema, table, dir_version, pid, date)
        state_key: _Key = (schema, table, dir_version, pid)
        state = self._dirs.setdefault(state_key, _DirState())
        if state.date != date or state.last_index is None:
            state.last_index = self._resume_index(table_dir)
            state.date = date
        index = state.last_index + 1
        path = table_dir.data_file(index, self.config.file_index_width, self.config.extension)
        if pending.staged is None:
            body = b"".join([self.encoder.file_header(pending.table), *pending.chunks])
            self.storage.write(path, body)
            size = len(body)
        else:
            if pending.chunks:
                self.storage.append(pending.staged, pending.chunks)
                pending.chunks.clear()
                pending.buffered = 0
            self.storage.publish(pending.staged, path)
            size = pending.header + pending.size
        state.last_index = index
        descriptor = DataFileDescriptor(
            path=path,
            size=size,
            index_path=table_dir.index_file(),
            schema=schema,
            table=table,
            table_version=dir_version,
            physical_table_id=pid,
            date=date,
            file_index=index,
            rows=pending.rows,
            min_commit_ts=pending.min_ts,
            max_commit_ts=pending.max_ts,
        )
        index_files: tuple[str, ...] = ()
        if self.commit_index:
            index_files = commit_index_files(self.storage, [descriptor])
        log.debug("wrote %s (%d bytes, %d rows)", path, size, pending.rows)
        return FlushResult((descriptor,), (schema_file,) if schema_file else (), index_files)

    def _directory_version(self, table: TableInfo, version: int) -> tuple[int, str | None]:
        cache_key = (table.schema, table.table, version)
        if cache_key in self._dir_versions:
            return self._dir_versions[cache_key], None
        definition = TableDefinition.from_table(table, version, output_column_id=self.config.output_column_id)
        dir_version, written = check_or_write_schema(self.storage, definition)
        self._dir_versions[cache_key] = dir_version
        return dir_version, written

    def _resume_index(self, table_dir: TableDir) -> int:
        """The last used file number of a directory: TiCDC's index rule, then a forward probe (module doc)."""
        ext = self.config.extension
        width = self.config.file_index_width
        index_path = table_dir.index_file()
        content = self.storage.read(index_path)
        last = 0
        if content is not None:
            named = parse_index_file(content, ext, source=index_path)
            size = self.storage.size(table_dir.data_file(named, width, ext))
            last = named if size else named - 1
        while self.storage.size(table_dir.data_file(last + 1, width, ext)):
            last += 1
        return last


def _by_physical_table(rows: Sequence[RowChange]) -> list[tuple[int, Sequence[RowChange]]]:
    first = rows[0].physical_table_id
    if all(r.physical_table_id == first for r in rows):
        return [(first, rows)]
    groups: dict[int, list[RowChange]] = {}
    for r in rows:
        groups.setdefault(r.physical_table_id, []).append(r)
    return [(pid, group) for pid, group in groups.items()]


def commit_index_files(storage: ExternalStorage, data_files: Iterable[DataFileDescriptor]) -> tuple[str, ...]:
    """Driver side: point each directory's ``meta/CDC.index`` at its highest durable data file.

    Call it only with descriptors of files that are durable. Returns the index paths written.
    Raises StorageError.
    """
    newest: dict[str, DataFileDescriptor] = {}
    for d in data_files:
        current = newest.get(d.index_path)
        if current is None or d.file_index > current.file_index:
            newest[d.index_path] = d
    for index_path, d in newest.items():
        storage.write(index_path, d.index_content)
    return tuple(newest)


def dispatch_worker(schema: str, table: str, worker_count: int) -> int:
    """TiCDC's DML worker of a table: ``CRC32(schema || table) % worker_count``."""
    if worker_count <= 0:
        raise ConfigError(f"invalid worker-count {worker_count}, it must be greater than 0")
    return zlib.crc32(schema.encode() + table.encode()) % worker_count
