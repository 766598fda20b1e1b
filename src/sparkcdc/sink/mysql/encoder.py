"""Executor side, source stage: one table's rows of one transaction -> one payload routed by table.

Every row of a table goes to one writer task, in commit order, so the task applies a table's transactions one after
the other on one connection (TiCDC's conflict detection gives transactions that touch the same keys to the same
worker; a table is the coarsest such key, and different tables still go in parallel). The rows travel pickled
without their TableInfo: the writer gets the table from the payload's ``Routed.info``.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Iterator, Sequence

from sparkcdc.model import RowChange, TableInfo
from sparkcdc.sink.base import Payload
from sparkcdc.sink.mysql.config import MysqlSinkConfig


def table_route(schema: str, table: str) -> int:
    """A stable non-negative route per table (writer task = route % writers). A mixing hash: CRC-32 is linear, so
    names differing in their last character (t0, t1, t2, t3) all landed on one of two tasks."""
    return int.from_bytes(hashlib.blake2b(f"{schema}\x00{table}".encode(), digest_size=4).digest(), "little") >> 1


def pack(rows: Sequence[RowChange]) -> bytes:
    packed = [(r.commit_ts, r.op, r.before, r.after, r.physical_table_id, r.start_ts) for r in rows]
    return pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes, table: TableInfo) -> list[RowChange]:
    return [RowChange(ts, table, op, before, after, pid, start) for ts, op, before, after, pid, start
            in pickle.loads(data)]  # fmt: skip


class MysqlEncoder:
    def __init__(self, config: MysqlSinkConfig) -> None:
        self.config = config

    def encode(self, rows: Sequence[RowChange]) -> Iterator[Payload]:
        table = rows[0].table
        yield Payload(table_route(table.schema, table.table), rows[0].physical_table_id, len(rows), pack(rows))
