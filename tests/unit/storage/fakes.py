"""A tiny TxnEncoder and table/transaction builders for storage-writer tests."""

from __future__ import annotations

from collections.abc import Sequence

from sparkcdc.model import ColumnInfo, PartitionInfo, RowChange, RowOp, TableInfo


class FakeEncoder:
    """One line per row: ``op,commit_ts,id,payload\\r\\n``; optional header per file."""

    file_extension = ".csv"

    def __init__(self, header: bytes = b"", payload: int = 0) -> None:
        self.header = header
        self.payload = "x" * payload

    def file_header(self, table: TableInfo) -> bytes:
        return self.header

    def encode_txn(self, rows: Sequence[RowChange]) -> bytes:
        return b"".join(f"{r.op.value[0]},{r.commit_ts},{r.values[0]},{self.payload}\r\n".encode() for r in rows)


def make_table(schema: str = "test", table: str = "table1", version: int = 5, partitions: int = 0) -> TableInfo:
    cols = (ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True), ColumnInfo("v", "varchar"))
    parts = tuple(PartitionInfo(100 + i, f"p{i}") for i in range(partitions))
    return TableInfo(schema, table, 42, cols, version=version, partitions=parts)


def txn(table: TableInfo, ts: int, ids: Sequence[int], physical_table_id: int = 0) -> list[RowChange]:
    return [RowChange(ts, table, RowOp.INSERT, None, (i, f"v{i}"), physical_table_id) for i in ids]


def rows_in(data: bytes) -> list[tuple[int, int]]:
    """``(commit_ts, id)`` of every FakeEncoder line in a data file."""
    out = []
    for line in data.decode().split("\r\n"):
        if line and not line.startswith("#"):
            _, ts, ident, _ = line.split(",")
            out.append((int(ts), int(ident)))
    return out
