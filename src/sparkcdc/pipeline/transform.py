"""Executor-side work of the source: decoded events -> filtered single-table transactions, encoded by the sink.

No Spark here: ``ChunkTransform.rows`` turns the events of relay chunks (commit order) into the stage rows
(``stage_row``: a ``Dml`` per sink payload, a ``Ddl`` per DDL) that the query shuffles to the sink's writers (or,
route-aligned, writes in the same task); what a payload holds and where it is routed is the sink's encoder's choice
(``sparkcdc.sink.base``).
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import count
from typing import Any

from sparkcdc.changefeed.bdr import BDR_SERVER_ID
from sparkcdc.changefeed.config import replicated_ddl
from sparkcdc.codec import native
from sparkcdc.errors import ConfigError, SparkcdcError, with_code
from sparkcdc.filter.event_filter import EventFilter
from sparkcdc.model.events import DDLEvent, RowChange, RowsEvent
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.stage_row import Ddl, Dml

log = logging.getLogger(__name__)

# A table's rows of one transaction are encoded in parts of about this much binlog row data when the sink allows it
# (a canal-json payload is ~10x that): what a big transaction costs in memory along the query is a few Arrow batches
# of parts (the source's are bounded by bytes, ``stage_row.BATCH_BYTES``; the sink's input by 16 rows, ``query``):
# 256 KiB parts made 40 MB batches of 16, and the Python workers and the JVM held several (peak RSS +0.4 GiB for a
# 1M-row transaction).
PART_BYTES = 64 << 10
_ROW_BYTES = 64  # what a decoded row counts for towards PART_BYTES


class ChunkTransform:
    """Filter (table rules, event filters), group by transaction and table, encode with the sink's encoder.
    Built per task from a spec.

    ``native``: the sink's encoder has native kernels and the switch (``codec.native.enabled``) is on; the source
    then passes undecoded ``RowsEvent``s, which go to the encoder's ``encode_events`` whole unless a table needs
    its rows one by one here (event filters, a snapshot hand-over).
    """

    def __init__(self, spec: FeedSpec) -> None:
        self.spec = spec
        replica = spec.replica_config()
        self.table_filter = replica.table_filter()
        self.event_filter: EventFilter = replica.event_filter()
        self.force_replicate = bool(replica.force_replicate)
        self.skip_server_id = BDR_SERVER_ID if replica.bdr_mode else None
        self.encoder = spec.sink().encoder(spec.sink_config(), spec.sink_context())
        self.native = native.enabled() and hasattr(self.encoder, "encode_events")
        self.part_bytes = PART_BYTES if getattr(self.encoder, "split_transactions", False) else 0
        self._match: dict[tuple[str, str], bool] = {}
        self._sent_info: set[tuple[str, str, int, int]] = set()

    def _table_wanted(self, schema: str, table: str) -> bool:
        key = (schema, table)
        hit = self._match.get(key)
        if hit is None:
            hit = self.table_filter.match_table(schema, table)
            self._match[key] = hit
        return hit

    def task_tables(self, task: int, tasks: int) -> Callable[[str, str], bool]:
        """Whether writer task ``task`` of ``tasks`` decodes a table: the changefeed replicates it and the sink's
        encoder routes it to that task (``route % tasks``: the task the query's shuffle would send it to).
        Raises ConfigError when the encoder does not route by table alone."""
        route = getattr(self.encoder, "table_route", None)
        if route is None:
            raise ConfigError(f"changefeed {self.spec.changefeed}: the sink's encoder does not route by table")
        verdicts: dict[tuple[str, str], bool] = {}

        def wanted(schema: str, table: str) -> bool:
            hit = verdicts.get((schema, table))
            if hit is None:
                hit = verdicts[(schema, table)] = (self._table_wanted(schema, table)
                                                   and route(schema, table) % tasks == task)  # fmt: skip
            return hit

        return wanted

    def _skip(self, ev: RowChange) -> bool:
        """The event filters' verdict; their errors (an expression naming a column a DDL dropped, one failing on
        a value) carry their code across Spark."""
        try:
            return self.event_filter.should_skip_dml(ev)
        except SparkcdcError as e:
            raise with_code(e) from e

    def _ddl_wanted(self, ddl: DDLEvent) -> bool:
        """The filter rules' and event filters' verdict on a DDL; what is left is then replicated or not by its
        table's eligibility (:func:`~sparkcdc.changefeed.config.replicated_ddl`), for every sink alike."""
        if ddl.is_database_level:
            if not self.table_filter.match_schema(ddl.schema):
                return False
        elif not self.table_filter.match_table(ddl.schema, ddl.table):
            pre = ddl.pre_table_info
            if pre is None or not self.table_filter.match_table(pre.schema, pre.table):
                return False
        return not self.event_filter.should_skip_ddl(ddl.schema, ddl.table or None, int(ddl.action), ddl.query)

    def _replicated(self, ddl: DDLEvent) -> DDLEvent | None:
        """The DDL as every sink sees it, or None when the changefeed does not replicate its table; its error (a
        replicated table losing its only key) carries its code across Spark."""
        try:
            return replicated_ddl(ddl, self.force_replicate)
        except SparkcdcError as e:
            raise with_code(e) from e

    def rows(
        self,
        events: Iterable[RowChange | RowsEvent | DDLEvent],
        handover: Mapping[tuple[str, str], Any] | None = None,
        *,
        ddls: bool = True,
    ) -> Iterator[Ddl | Dml]:
        """Stage rows for the events of whole transactions, in commit order, without the row changes that the
        snapshot's copy of a table in ``handover`` holds (``snapshot_handover.TableHandover``), and without DDL
        rows unless ``ddls`` (one task of a batch passes its DDL on). When the sink's encoder may split a
        transaction (``split_transactions``: TiCDC's ``transaction-atomicity = "none"``), a table's rows of one
        transaction are encoded in parts of about ``PART_BYTES`` of binlog rows as they arrive: a big transaction
        streams through in bounded payloads instead of being held whole."""
        seq = count(1)
        txn_ts = -1
        # rows (or whole rows events) of the open transaction per versioned table, in arrival order, and their size
        open_txn: dict[tuple[str, str, int], list[Any]] = {}
        sizes: dict[tuple[str, str, int], int] = {}
        for ev in events:
            if ev.commit_ts != txn_ts:
                yield from self._flush_txn(open_txn, seq)
                open_txn, sizes = {}, {}
                txn_ts = ev.commit_ts
            if isinstance(ev, DDLEvent):
                yield from self._flush_txn(open_txn, seq)
                open_txn, sizes = {}, {}
                if ddls and self._ddl_wanted(ev) and (ddl := self._replicated(ev)) is not None:
                    yield Ddl(ddl.commit_ts, next(seq), pickle.dumps(ddl))
                continue
            t = ev.table
            if not self._table_wanted(t.schema, t.table):
                continue
            key = (t.schema, t.table, t.version)
            if isinstance(ev, RowsEvent):
                if not self.event_filter.rules and not (handover and (t.schema, t.table) in handover):
                    kept: list[Any] = [ev]
                    size = ev.end - ev.start
                else:
                    kept = [k for row in ev.rows() if (k := self._keep(row, handover)) is not None]  # row by row
                    size = _ROW_BYTES * len(kept)
            else:
                row = self._keep(ev, handover)
                kept, size = ([] if row is None else [row]), _ROW_BYTES
            if not kept:
                continue
            open_txn.setdefault(key, []).extend(kept)
            sizes[key] = sizes.get(key, 0) + size
            if self.part_bytes and sizes[key] >= self.part_bytes:
                yield from self._encode(key, open_txn.pop(key), seq)
                del sizes[key]
        yield from self._flush_txn(open_txn, seq)

    def _keep(self, row: RowChange, handover: Mapping[tuple[str, str], Any] | None) -> RowChange | None:
        """``row`` as the changefeed replicates it: None when the snapshot's copy holds it or an event filter drops
        it."""
        if handover:
            h = handover.get((row.table.schema, row.table.table))
            if h is not None and (row := h.keep(row)) is None:
                return None
        if self.event_filter.rules and self._skip(row):
            return None
        return row

    def _flush_txn(self, open_txn: dict[tuple[str, str, int], list[Any]], seq: Iterator[int]) -> Iterator[Dml]:
        for key, rows in open_txn.items():
            yield from self._encode(key, rows, seq)

    def _encode(self, key: tuple[str, str, int], rows: list[Any], seq: Iterator[int]) -> Iterator[Dml]:
        """The dml rows of one versioned table's rows (or rows events) of one transaction (or a part of it)."""
        schema, table, version = key
        try:
            if all(isinstance(r, RowsEvent) for r in rows):
                payloads = list(self.encoder.encode_events(rows))  # type: ignore[attr-defined]
            else:
                changes = [c for r in rows for c in (r.rows() if isinstance(r, RowsEvent) else (r,))]
                payloads = list(self.encoder.encode(changes))
        except SparkcdcError as e:
            raise with_code(e) from e
        for p in payloads:
            info: bytes | None = None
            if (schema, table, version, p.route) not in self._sent_info:
                self._sent_info.add((schema, table, version, p.route))
                info = pickle.dumps(rows[0].table)
            yield Dml(p.route, schema, table, version, p.physical_table_id, rows[0].commit_ts, next(seq), p.nrows,
                      p.data, info)  # fmt: skip


def load_info(blob: Any) -> Any:
    """Unpickle a TableInfo or DDLEvent sent by ``ChunkTransform`` (our own bytes, between our processes)."""
    return pickle.loads(blob)
