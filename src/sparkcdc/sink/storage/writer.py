"""Executor side, sink stage: a task's chunks (whole tables, one DML worker bucket) -> durable data files.

Each table's chunks are written in ``(commit_ts, seq)`` order by the layout writer with ``commit_index=False``:
schema files of new version directories and data files only. The task's result names exactly the data files it
made durable; the committer indexes them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from sparkcdc.sink.base import Routed, SinkContext
from sparkcdc.sink.storage.layout_writer import DataFileDescriptor, FlushResult, StorageWriter
from sparkcdc.storage.sink_config import StorageSinkConfig

log = logging.getLogger(__name__)


class StorageTaskWriter:
    def __init__(self, config: StorageSinkConfig, ctx: SinkContext) -> None:
        self.config = config
        self.ctx = ctx

    def write(self, payloads: Iterable[Routed]) -> tuple[DataFileDescriptor, ...]:
        """Write the payloads as they come (in commit order: ``SinkWriter``): a table's data file grows in memory
        up to ``SPILL_BYTES``, then (local storage) in its temporary file, so a task holds a few MiB per table however
        much its batch carries (an object store's file, sent in one PUT, up to ``file-size``). A failed task deletes
        its temporary files."""
        writer: StorageWriter | None = None  # opened with the first payload: a task may have none
        result = FlushResult()
        try:
            for c in payloads:
                if writer is None:
                    writer = StorageWriter(self.config, commit_index=False, sink_start_ts=self.ctx.sink_start_ts)
                result += writer.write_encoded(
                    c.info, c.data, rows=c.nrows, min_commit_ts=c.commit_ts, max_commit_ts=c.commit_ts,
                    physical_table_id=c.physical_table_id,
                )  # fmt: skip
            if writer is None:
                return ()
            result += writer.flush()
        except BaseException:
            if writer is not None:
                _discard(writer)
            raise
        return result.data_files


def _discard(writer: StorageWriter) -> None:
    """Delete the failed task's unfinished temporary files; a failure to do so must not hide why the task failed
    (readers skip such files anyway)."""
    try:
        writer.discard()
    except Exception as e:
        log.warning("cannot delete a failed task's temporary data files: %s", e)
