"""Executor side, source stage: one table's rows of one transaction -> one payload routed by table.

Every row of a table goes to one writer task, in commit order, so the task applies a table's transactions one after
the other on one connection (TiCDC's conflict detection gives transactions that touch the same keys to the same
worker; a table is the coarsest such key, and different tables still go in parallel). The payload's form is
``sink.row_payload``'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sparkcdc.codec.native import Kernels
from sparkcdc.model import RowChange, RowsEvent, TableInfo
from sparkcdc.model.column_type import FLOAT_TYPES
from sparkcdc.model.steps import AppliedRow, RenderedRow
from sparkcdc.mysql.sql_values import literal, of_kinds, row_tuple, value_kinds
from sparkcdc.mysql.statements import key_positions, writable_positions
from sparkcdc.sink.base import Payload
from sparkcdc.sink.mysql.config import MysqlSinkConfig
from sparkcdc.sink.mysql.conflict import SLOTS, KeySlots
from sparkcdc.sink.row_payload import Rendered, pack, pack_rendered, table_route


def renderable(table: TableInfo) -> bool:
    """Whether rows of ``table`` may travel rendered: it has a key (rows of key-less tables are applied one by one,
    matched on every column) and no FLOAT/DOUBLE key column (0.0 and -0.0 are one key but two literals)."""
    keys = key_positions(table)
    return bool(keys) and not any(table.columns[i].type in FLOAT_TYPES for i in keys)


def render_rows(rows: Sequence[RowChange]) -> list[RenderedRow]:
    """The Python reference of the native ``mysql`` kernel: each row's key literals, REPLACE values and slots."""
    table = rows[0].table
    keys, values, slots = key_positions(table), writable_positions(table), KeySlots(table, SLOTS)

    def key(image: Any) -> str:
        return literal(image[keys[0]]) if len(keys) == 1 else row_tuple([image[i] for i in keys])

    return [RenderedRow(r.commit_ts, r.table, r.op, slots.of(r), None if r.before is None else key(r.before),
                        None if r.after is None else key(r.after),
                        None if r.after is None else row_tuple([r.after[i] for i in values]))
            for r in rows]  # fmt: skip


def as_rendered(rows: Sequence[AppliedRow]) -> list[AppliedRow]:
    """A table's rows in one form: when some came rendered (native kernel) and some as RowChanges (its Python
    fallback), the RowChanges are rendered too, so compaction and conflict slots see one kind. A row whose values
    are not all of their columns' kinds (``sql_values.of_kinds``) stays a RowChange: the kernel would not have
    rendered it, and a bulk load reads each column's values in its kind's one form."""
    if all(isinstance(r, RenderedRow) for r in rows) or all(isinstance(r, RowChange) for r in rows):
        return list(rows)
    kinds: dict[int, list[int]] = {}

    def rendered(r: RowChange) -> bool:
        table_kinds = kinds.get(id(r.table))
        if table_kinds is None:
            table_kinds = kinds[id(r.table)] = value_kinds(r.table)
        return renderable(r.table) and all(image is None or of_kinds(image, table_kinds)
                                           for image in (r.before, r.after))  # fmt: skip

    return [render_rows([r])[0] if isinstance(r, RowChange) and rendered(r) else r for r in rows]


def _native_spec(event: RowsEvent) -> dict[str, Any] | None:
    table = event.table
    if not renderable(table):
        return None
    ks = KeySlots(table, SLOTS)
    return {
        "kinds": value_kinds(table),
        "keys": list(key_positions(table)),
        "values": list(writable_positions(table)),
        "indexes": [list(idx) for idx in ks.indexes],
        "serial": ks.serial,
        "slots": SLOTS,
    }


class MysqlEncoder:
    def __init__(self, config: MysqlSinkConfig) -> None:
        self.config = config
        self._kernels = Kernels("mysql", _native_spec, split_updates=False)

    def table_route(self, schema: str, table: str) -> int:
        """The route of every payload of the table (``TableRouted``): without a redo log the query needs no shuffle,
        each writer task decodes its own tables. Its writer's guarantees hold as they did behind the shuffle: a
        task gets the same tables, each table's payloads in commit order (checked by the writer), the batch's DDL
        reaches the committer from task 0 and runs after every task's rows are committed, and the checkpoint moves
        after that."""
        return table_route(schema, table)

    def encode(self, rows: Sequence[RowChange]) -> Iterator[Payload]:
        table = rows[0].table
        yield Payload(table_route(table.schema, table.table), rows[0].physical_table_id, len(rows), pack(rows))

    def encode_events(self, events: Sequence[RowsEvent]) -> Iterator[Payload]:
        """``encode`` of the events' rows, rendered by the native kernel when it takes them."""
        rendered: list[Rendered] | None = self._kernels.encode(events, 0)
        if rendered is None:
            yield from self.encode([row for e in events for row in e.rows()])
            return
        table = events[0].table
        yield Payload(table_route(table.schema, table.table), events[0].physical_table_id, len(rendered),
                      pack_rendered(rendered))  # fmt: skip
