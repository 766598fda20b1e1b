"""``format("sparkcdc_storage")``: the changefeed's streaming sink, writing TiCDC's storage layout.

Executors (``write``): each task owns whole tables (the query repartitions rows by TiCDC's DML worker bucket),
sorts each table's transactions by (commit_ts, seq) and writes data files with the storage writer
(``commit_index=False``: schema files of new version directories and data files only). The task's commit
message names exactly the data files it made durable, the DDL events and the batch mark it saw.

Driver (``commit``, run by Spark in a separate Python worker after *every* task succeeded): index files of the
batch's data files, then the DDL schema files (the DDL is the batch's last transaction: the DDL barrier), then
``metadata`` with the batch's end offset as checkpoint-ts and, last, ``progress.json`` for the runner. The
checkpoint never moves backwards (a replayed batch after a restart republishes nothing older).

``abort`` deletes nothing: the tasks' files are not in any index, and deleting them would let a later file reuse
their numbers (our invariant: a non-empty data file is never overwritten). A replayed batch writes its rows
again under new numbers, which consumers treat as TiCDC's at-least-once duplicates.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, WriterCommitMessage

from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.transform import ROW_SCHEMA, load_info
from sparkcdc.pipeline.worker_gc import freeze_survivors

log = logging.getLogger(__name__)

NAME = "sparkcdc_storage"


@dataclass(frozen=True)
class BatchMessage(WriterCommitMessage):
    """What one writer task made durable (primitives and frozen values only)."""

    data_files: tuple[Any, ...] = ()  # DataFileDescriptor
    ddls: tuple[tuple[int, int, bytes], ...] = ()  # (commit_ts, seq, pickled DDLEvent)
    mark: tuple[int, int] | None = None  # (start, end) offsets of the batch


def write_partition(spec: FeedSpec, rows: Iterator[Any]) -> BatchMessage:
    """Executor side of the sink for one partition's rows (Spark Rows or tuples in ``ROW_SCHEMA`` order)."""
    from sparkcdc.storage.writer import FlushResult, StorageWriter

    freeze_survivors()
    tables: dict[tuple[str, str], list[tuple[int, int, int, int, int, bytes]]] = {}
    infos: dict[tuple[str, str, int], Any] = {}
    ddls: list[tuple[int, int, bytes]] = []
    mark: tuple[int, int] | None = None
    for r in rows:
        kind, _bucket, schema, table, version, pid, commit_ts, seq, nrows, payload, info = r
        if kind == "dml":
            tables.setdefault((schema, table), []).append((commit_ts, seq, version, pid, nrows, bytes(payload)))
            if info is not None and (schema, table, version) not in infos:
                infos[(schema, table, version)] = load_info(bytes(info))
        elif kind == "ddl":
            ddls.append((commit_ts, seq, bytes(payload)))
        elif kind == "mark":
            mark = (int(version), int(commit_ts))
    result = FlushResult()
    if tables:
        writer = StorageWriter(spec.sink_config(), commit_index=False, sink_start_ts=spec.sink_start_ts)
        for (schema, table), txns in sorted(tables.items()):
            txns.sort(key=lambda t: (t[0], t[1]))
            for commit_ts, _seq, version, pid, nrows, data in txns:
                info = infos.get((schema, table, version))
                if info is None:
                    from sparkcdc.errors import CorruptDataError

                    raise CorruptDataError(
                        f"changefeed {spec.changefeed}: no table definition for {schema}.{table} version {version}"
                    )
                result += writer.write_encoded(
                    info, data, rows=nrows, min_commit_ts=commit_ts, max_commit_ts=commit_ts, physical_table_id=pid
                )
        result += writer.flush()
    return BatchMessage(result.data_files, tuple(ddls), mark)


def commit_batch(spec: FeedSpec, messages: list[Any], batch_id: int) -> int | None:
    """Driver side: index files, DDL schema files, ``metadata``, ``progress.json``. Returns the new checkpoint
    (None when this batch did not advance it). Raises StorageError; nothing is published then."""
    from sparkcdc.pipeline.progress import CommittedProgress, read_progress, write_progress
    from sparkcdc.storage.external import ExternalStorage
    from sparkcdc.storage.schema_store import write_ddl_schema
    from sparkcdc.storage.writer import commit_index_files, write_checkpoint

    msgs = [m for m in messages if isinstance(m, BatchMessage)]
    config = spec.sink_config()
    storage = ExternalStorage.from_config(config)
    files = [d for m in msgs for d in m.data_files]
    if files:
        commit_index_files(storage, files)
    for _ts, _seq, blob in sorted(d for m in msgs for d in m.ddls):
        write_ddl_schema(storage, load_info(blob), output_column_id=config.output_column_id)
    marks = [m.mark for m in msgs if m.mark is not None]
    if not marks:
        return None
    start, end = min(m[0] for m in marks), max(m[1] for m in marks)
    previous = read_progress(spec.progress_path)
    if previous is not None and previous.checkpoint_ts >= end:
        return None
    write_checkpoint(storage, end)
    write_progress(spec.progress_path, CommittedProgress(end, batch_id, start))
    log.debug("changefeed=%s batch %d committed: checkpoint %d, %d files", spec.changefeed, batch_id, end, len(files))
    return end


class StorageStreamWriter(DataSourceStreamWriter):
    def __init__(self, spec: FeedSpec) -> None:
        self.spec = spec

    def write(self, iterator: Iterator[Any]) -> BatchMessage:
        return write_partition(self.spec, iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:
        commit_batch(self.spec, messages, batchId)

    def abort(self, messages: list[Any], batchId: int) -> None:
        files = sum(len(m.data_files) for m in messages if isinstance(m, BatchMessage))
        log.warning("changefeed=%s batch %d aborted; %d unindexed data files stay (never reused)",
                    self.spec.changefeed, batchId, files)  # fmt: skip


class StorageSink(DataSource):
    """Options: ``spec`` = path of the changefeed's spec file."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return ROW_SCHEMA

    def streamWriter(self, schema: Any, overwrite: bool) -> StorageStreamWriter:
        from sparkcdc.errors import ConfigError

        path = self.options.get("spec")
        if not path:
            raise ConfigError(f'format("{NAME}") needs option("spec", <path of the changefeed spec>)')
        return StorageStreamWriter(FeedSpec.load(path))
