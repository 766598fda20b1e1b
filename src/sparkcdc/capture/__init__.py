"""Capture: binlog puller, relay log, schema tracker and the chunk decoder.

Data flow: ``Puller`` (sequential, cheap: frames raw events per transaction, positions, GTIDs, TSOs, DDL)
-> relay log under ``<data_dir>/relay`` (segments + SQLite index, fsync'd before the resolved ts moves)
-> ``RelayLog.chunks`` (driver: transaction-aligned byte ranges) -> ``decode_chunk`` (executors: no
connection; TABLE_MAP events travel inside every transaction) -> ``RowChange`` / ``DDLEvent``.

Public API (stable; the Spark source builds on it):

- ``Puller(config: PullerConfig, start: StartPoint | None = None)``; ``.run(stop: threading.Event | None = None,
  until: BinlogPosition | None = None, timeout: float | None = None) -> None``; ``.catch_up(timeout=120.0)
  -> Progress``; ``.position() -> BinlogPosition``; ``.close()``. A data dir with a relay log resumes from
  its last durable position; ``start`` applies to a fresh one: ``StartPoint.now()``, ``.at(BinlogPosition)``,
  ``.from_gtid("0-1-9")``, ``.from_tso(ts)``. Raises ``UpstreamError`` (code ``CDC:ErrBinlogPurged``,
  not retryable, when the binlog is gone).
- ``RelayLog(data_dir)``, the only reader of the relay index: ``.resolved_ts() -> int``; ``.chunks(start_ts_exclusive,
  end_ts_inclusive, target_bytes=8 MiB) -> list[ChunkRef]``; ``.transactions(start_excl=0, end_incl=max) ->
  list[TxnRecord]``; ``.progress() -> Progress | None``; ``.position_after(ts) -> TxnRecord | None``;
  ``.next_ddl(after, upto) -> int | None`` (the DDL barrier); ``.byte_capped_end(after, upto, max_bytes) -> int |
  None``; ``.last_commit_at((file, pos), low) -> int | None``; ``.schema_history() -> SchemaHistory``;
  ``.gc(min_checkpoint_ts) -> list[str]``; ``.close()``. ``relay_writer.rewind(data_dir, ts)`` forgets everything
  after ``ts``.
- ``supervisor.CaptureThread(upstream_uri, capture_dir, ...)``: the server's puller thread, restarted after
  retryable failures, leading or following a cluster's shared capture; ``relay_progress``, ``relay_covers``,
  ``relay_anchor`` answer the runner's questions about the relay log on disk.
- ``ChunkRef(path, offset, length, first_ts, last_ts, txn_count)``: frozen, primitives only.
- ``read_chunk(ref) -> bytes``; ``decode_chunk(ref_or_bytes, schema_source, *, tz=None, force_replicate=False)
  -> Iterator[RowChange | DDLEvent]`` (``schema_source``: a ``SchemaHistory`` or the data dir path).
- ``SchemaHistory.load(data_dir)``: picklable; ``.table_info_at(schema, table, ts) -> TableInfo | None``,
  ``.ddl_events_at(commit_ts) -> list[DDLEvent]``, ``.tables_at(ts) -> list[TableInfo]``.
"""

from sparkcdc.capture.decode import decode_chunk
from sparkcdc.capture.position import BinlogPosition, StartPoint
from sparkcdc.capture.puller import Puller, PullerConfig
from sparkcdc.capture.relay_log import ChunkRef, RelayLog, read_chunk
from sparkcdc.capture.schema_history import SchemaHistory

__all__ = [
    "BinlogPosition",
    "ChunkRef",
    "Puller",
    "PullerConfig",
    "RelayLog",
    "SchemaHistory",
    "StartPoint",
    "decode_chunk",
    "read_chunk",
]
