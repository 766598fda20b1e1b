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
        tables: dict[tuple[str, str], list[Routed]] = {}
        for p in payloads:
            tables.setdefault((p.schema, p.table), []).append(p)
        if not tables:
            return ()
        writer = StorageWriter(self.config, commit_index=False, sink_start_ts=self.ctx.sink_start_ts)
        result = FlushResult()
        for _table, chunks in sorted(tables.items()):
            chunks.sort(key=lambda c: (c.commit_ts, c.seq))
            for c in chunks:
                result += writer.write_encoded(
                    c.info, c.data, rows=c.nrows, min_commit_ts=c.commit_ts, max_commit_ts=c.commit_ts,
                    physical_table_id=c.physical_table_id,
                )  # fmt: skip
        result += writer.flush()
        return result.data_files
