"""Executor side: a table's rows travel pickled to the one task that owns the table (route = the table), which
folds the batch into the net change per key (a key-less table: its change log) and commits it as one MERGE (an
append) with the table's new commit-ts.

A replayed batch reads the commit-ts the table already holds (:meth:`LakeTables.applied_ts`, committed with the
data) and skips every transaction at or below it, so a kill -9 at any point applies each transaction once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby

from sparkcdc.lake.keyless import fold
from sparkcdc.lake.target import open_tables
from sparkcdc.model import RowChange
from sparkcdc.sink.base import Payload, Routed, SinkContext, by_table
from sparkcdc.sink.lake.config import LakeSinkConfig
from sparkcdc.sink.row_payload import pack, table_route, unpack


class LakeEncoder:
    def table_route(self, schema: str, table: str) -> int:
        """The route of every payload of the table (``TableRouted``): each writer task decodes its own tables, no
        shuffle; a task still gets all of a table's payloads of the batch in commit order, before the DDL."""
        return table_route(schema, table)

    def encode(self, rows: Sequence[RowChange]) -> Iterator[Payload]:
        table = rows[0].table
        yield Payload(table_route(table.schema, table.table), rows[0].physical_table_id, len(rows), pack(rows))


class LakeTaskWriter:
    def __init__(self, config: LakeSinkConfig, ctx: SinkContext) -> None:
        self.config = config
        self.ctx = ctx

    def write(self, payloads: Iterable[Routed]) -> dict[str, int]:
        """Returns the rows merged per table (``schema.table``); replayed transactions count 0."""
        tables = open_tables(self.config.where, self.ctx.changefeed)
        written: dict[str, int] = {}
        for (schema, table), chunks in by_table(payloads).items():  # each table's in commit order (checked)
            applied = tables.applied_ts(schema, table)
            n = 0
            for _version, group in groupby(chunks, key=lambda c: c.info.version):  # a DDL ends a batch: one, mostly
                part = list(group)
                info = part[-1].info
                rows = [r for c in part for r in unpack(c.data, c.info) if isinstance(r, RowChange)]
                change = fold(rows, info, applied)
                n += tables.merge(info, change, applied)
                applied = max(applied, change.last_ts)
            written[f"{schema}.{table}"] = n
        return written
