"""Executor side, source stage, with ``[consistent] level = "eventual"``: each relay chunk's rows and DDLs written to
the redo log before its task ends.

Why here: the query's writer tasks (which apply rows downstream) start only once every task of the source stage
has finished, since the route shuffle between them is a stage boundary. So when the last chunk's log is durable the
whole micro-batch is, and no row of the batch has been applied yet; the batch's DDLs run later still, in the
driver's commit. A batch's logs are named by its chunks (``redo.names``), so the log tells a complete batch from one
a crash cut short without the driver; the driver's meta follows at the commit (``redo.meta``). A storage failure
fails the task, so the batch fails before anything of it is applied and the changefeed shows a warning while it is
retried. If the route shuffle ever goes (a source task that also writes), this needs a barrier of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sparkcdc.changefeed.consistent import ConsistentConfig
from sparkcdc.errors import CorruptDataError, SparkcdcError, with_code
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.stage_row import Ddl, Dml
from sparkcdc.pipeline.transform import load_info
from sparkcdc.redo.names import LogName, file_key
from sparkcdc.redo.writer import ChunkLog, storage_of


def tee(spec: FeedSpec, config: ConsistentConfig, batch: tuple[int, int, int, int],
        rows: Iterable[Ddl | Dml]) -> Iterator[Ddl | Dml]:  # fmt: skip
    """``rows`` (one chunk of batch ``(begin, end, index, count)``, in commit order) passed on, their log written
    once the last has passed. Raises StorageError (with its code across Spark) when the log cannot be written."""
    begin, end, index, count = batch
    chunk = ChunkLog(storage_of(config), config, LogName(file_key(spec.changefeed), begin, end, index, count))
    tables: dict[tuple[str, str, int], Any] = {}
    try:
        for row in rows:
            if isinstance(row, Dml):
                key = (row.schema, row.table, row.version)
                if row.info is not None and key not in tables:
                    tables[key] = load_info(row.info)
                found = tables.get(key)
                if found is None:  # the transform sends a table's definition with its first payload of the chunk
                    raise CorruptDataError(f"changefeed {spec.changefeed}: no table definition for {row.schema}."
                                           f"{row.table} version {row.version} in a relay chunk")  # fmt: skip
                chunk.add_rows(row.commit_ts, row.seq, found, row.physical_table_id, row.nrows, row.payload)
            else:
                ddl = load_info(row.event)
                chunk.add_ddl(ddl.commit_ts, row.seq, ddl.schema, ddl.table, ddl.query, int(ddl.action))
            yield row
        chunk.close()
    except SparkcdcError as e:
        raise with_code(e) from e


def empty_batch(spec: FeedSpec, config: ConsistentConfig, begin: int, end: int) -> None:
    """The log of a batch without transactions (its resolved ts moved): one empty file, so the batches in the log
    still follow each other."""
    try:
        ChunkLog(storage_of(config), config, LogName(file_key(spec.changefeed), begin, end, 0, 0)).close()
    except SparkcdcError as e:
        raise with_code(e) from e
