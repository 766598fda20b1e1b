"""Executor side: one relay chunk's records of one micro-batch written to the redo storage (``redo.names``).

The records are buffered and written in parts of about ``max-log-size`` MiB, each one atomic whole-file write
(``storage.external``: a renamed temporary file on ``file://``, one PUT on object stores), the chunk's last part
marked as such; :meth:`ChunkLog.close` returns once every part is durable. Names are deterministic, so a retried or
replayed task overwrites its own parts with the same records. StorageError (``retryable`` while the storage may come
back) fails the task: nothing of the batch is applied then (``pipeline.redo_log``).
"""

from __future__ import annotations

import logging

from sparkcdc.changefeed.consistent import ConsistentConfig
from sparkcdc.model.table import TableInfo
from sparkcdc.redo.log_file import LogEncoder
from sparkcdc.redo.names import LogName
from sparkcdc.storage import probe
from sparkcdc.storage.external import ExternalStorage

log = logging.getLogger(__name__)

_MIB = 1 << 20


def storage_of(config: ConsistentConfig) -> ExternalStorage:
    """The redo log's storage (``[consistent] storage``; the client is built lazily, fsspec caches it)."""
    return ExternalStorage.from_uri(config.storage)


def check_writable(config: ConsistentConfig) -> None:
    """At changefeed create and update, as TiCDC's ``ValidateStorage``: a probe file written to and deleted from
    the redo log's storage within 10 s. Raises ConfigError (``CDC:ErrStorageInitialize``) saying why."""
    storage = storage_of(config)
    probe.check_writable(storage, f"the redo log's storage {storage.uri.masked()} ([consistent] storage)")


class ChunkLog:
    """The log of chunk ``first.index`` of batch ``(first.begin, first.end]``; add records in commit order."""

    def __init__(self, storage: ExternalStorage, config: ConsistentConfig, first: LogName) -> None:
        self.storage = storage
        self.config = config
        self.limit = max(1, config.max_log_size_mb) * _MIB
        self._name = first
        self._encoder = LogEncoder(lz4=config.lz4)

    def add_rows(self, commit_ts: int, seq: int, table: TableInfo, physical_table_id: int, nrows: int,
                 payload: bytes) -> None:  # fmt: skip
        self._encoder.add_rows(commit_ts, seq, table, physical_table_id, nrows, payload)
        self._rotate()

    def add_ddl(self, commit_ts: int, seq: int, schema: str, table: str, query: str, action: int) -> None:
        self._encoder.add_ddl(commit_ts, seq, schema, table, query, action)
        self._rotate()

    def _rotate(self) -> None:
        if self._encoder.size >= self.limit:
            self._write(last=False)
            self._name = self._name.next_part(last=False)
            self._encoder = LogEncoder(lz4=self.config.lz4)

    def _write(self, *, last: bool) -> None:
        name = LogName(self._name.changefeed, self._name.begin, self._name.end, self._name.index, self._name.count,
                       self._name.part, last)  # fmt: skip
        data = self._encoder.finish()
        self.storage.write(name.format(), data)
        log.debug("redo log %s: %d records, %d bytes", name.format(), self._encoder.records, len(data))

    def close(self) -> None:
        """Write the last part (also when the chunk had nothing for the sink: the batch counts its chunks)."""
        self._write(last=True)
