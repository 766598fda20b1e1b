"""Executor side, source stage: one table's rows of one transaction -> file chunks routed by DML worker bucket.

TiCDC's storage sink gives each table to one DML worker (``CRC32(schema || table) % worker-count``); routing a
table's chunks by that bucket keeps every file of a table in one writer task, in commit order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sparkcdc.codec.base import txn_encoder
from sparkcdc.model import RowChange, RowsEvent
from sparkcdc.model.events import split_key_updates
from sparkcdc.sink.base import Payload
from sparkcdc.sink.storage.layout_writer import dispatch_worker
from sparkcdc.storage.sink_config import StorageSinkConfig


class StorageEncoder:
    """Encodes with the protocol's transaction encoder (csv, canal-json); one instance per task."""

    def __init__(self, config: StorageSinkConfig) -> None:
        self.config = config
        self._encoder = txn_encoder(config.protocol, config.encoder_options())
        self._buckets: dict[tuple[str, str], int] = {}
        # TiCDC's transaction-atomicity "none" (the storage sink's default): a transaction's rows may go in several
        # payloads, and so across data files
        self.split_transactions = config.transaction_atomicity == "none"

    def table_route(self, schema: str, table: str) -> int:
        """The route of every payload of the table (``TableRouted``: the query then needs no shuffle)."""
        route = self._buckets.get((schema, table))
        if route is None:
            route = self._buckets[(schema, table)] = dispatch_worker(schema, table, self.config.worker_count)
        return route

    def encode_events(self, events: Sequence[RowsEvent]) -> Iterator[Payload]:
        """``encode`` of the events' rows, through the protocol's native kernel when it takes them."""
        native = getattr(self._encoder, "encode_events", None)
        encoded = native(events, not self.config.output_raw_change_event) if native is not None else None
        if encoded is None:
            yield from self.encode([row for e in events for row in e.rows()])
            return
        data, nrows = encoded
        if data:
            table = events[0].table
            yield Payload(self.table_route(table.schema, table.table), events[0].physical_table_id, nrows, data)

    def encode(self, rows: Sequence[RowChange]) -> Iterator[Payload]:
        if not self.config.output_raw_change_event:
            rows = split_key_updates(rows)
        table = rows[0].table
        route = self.table_route(table.schema, table.table)
        groups: dict[int, list[RowChange]] = {}
        for r in rows:
            groups.setdefault(r.physical_table_id, []).append(r)
        for pid, group in groups.items():
            data = self._encoder.encode_txn(group)
            if data:
                yield Payload(route, pid, len(group), data)
