"""Executor side, sink stage: a task's chunks (whole tables, one DML worker bucket) -> durable data files.

Each table's chunks are written in ``(commit_ts, seq)`` order by the layout writer with ``commit_index=False``:
schema files of new version directories and data files only. The task's result names exactly the data files it
made durable; the committer indexes them.
"""

from __future__ import annotations

from collections.abc import Iterable

from sparkcdc.sink.base import Routed, SinkContext
from sparkcdc.sink.storage.layout_writer import DataFileDescriptor, FlushResult, StorageWriter
from sparkcdc.storage.sink_config import StorageSinkConfig


class StorageTaskWriter:
    def __init__(self, config: StorageSinkConfig, ctx: SinkContext) -> None:
        self.config = config
        self.ctx = ctx

    def write(self, payloads: Iterable[Routed]) -> tuple[DataFileDescriptor, ...]:
        """Write the payloads as they come (in commit order: ``SinkWriter``), each table's buffered up to
        ``file-size`` only, so a task holds about a file per table however much its batch carries."""
        writer: StorageWriter | None = None  # opened with the first payload: a task may have none
        result = FlushResult()
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
        return result.data_files
