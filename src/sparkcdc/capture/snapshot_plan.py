"""Split the tables of a snapshot into primary-key-range chunks, each one read by one Spark task.

A table with a handle key (the PK, else a NOT NULL unique key: what TiCDC calls eligible) is cut into ranges
``(lower, upper]`` of about ``chunk_size`` rows, walking the key's index: each boundary is the key of the
``chunk_size``-th row after the previous one (``ORDER BY key LIMIT 1 OFFSET n``), so the cost is one scan of the
index and chunks stay even whatever the key's type or gaps. The first range has no lower bound and the last no
upper one, so the ranges cover every key, including keys inserted after planning. Boundaries are compared by
the upstream (``WHERE``), never in Python, so collations cannot disagree. A partitioned table is one table here,
as in the binlog (MySQL's row events carry no partition id). A table without such a key (replicated only with
``force-replicate``) is one chunk: without a key there is no range a second read could agree on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.model.table import TableInfo
from sparkcdc.mysql.target import quote_ident, quote_table

Key = tuple[Any, ...]


@dataclass(frozen=True)
class Chunk:
    """One read: rows of ``schema.table`` whose key is in ``(lower, upper]``; ``None`` bounds are open. ``key``
    names the key columns (``()``: the whole table, one chunk)."""

    index: int
    schema: str
    table: str
    physical_table_id: int
    key: tuple[str, ...]
    lower: Key | None
    upper: Key | None
    estimated_rows: int

    @property
    def table_name(self) -> str:
        return f"{self.schema}.{self.table}"

    def from_clause(self) -> str:
        return quote_table(self.schema, self.table)

    def where(self) -> tuple[str, list[Any]]:
        """``WHERE`` text (``%s`` placeholders, or "") and its parameters."""
        parts: list[str] = []
        params: list[Any] = []
        if self.lower is not None:
            sql, p = key_after(self.key, self.lower)
            parts.append(sql)
            params += p
        if self.upper is not None:
            sql, p = key_after(self.key, self.upper)
            parts.append(f"NOT {sql}")
            params += p
        return (" WHERE " + " AND ".join(parts) if parts else ""), params

    def order_by(self) -> str:
        return " ORDER BY " + ", ".join(quote_ident(k) for k in self.key) if self.key else ""


def key_after(key: Sequence[str], bound: Key) -> tuple[str, list[Any]]:
    """``key > bound`` for a composite key, spelled out (``a > x OR (a = x AND b > y)``) so that the upstream
    uses the index's range scan, where the row-constructor form is not optimised by every MySQL/MariaDB."""
    ors: list[str] = []
    params: list[Any] = []
    for i in range(len(key)):
        terms = [f"{quote_ident(k)} = %s" for k in key[:i]] + [f"{quote_ident(key[i])} > %s"]
        ors.append("(" + " AND ".join(terms) + ")")
        params += list(bound[: i + 1])
    return "(" + " OR ".join(ors) + ")", params


def plan_table(cursor: Any, table: TableInfo, chunk_size: int, first_index: int) -> list[Chunk]:
    """The chunks of ``table`` (numbered from ``first_index``), asking the upstream through ``cursor`` (a
    pymysql cursor with the default value conversions: boundaries go back as query parameters)."""
    key = tuple(table.columns[i].name for i in table.handle_key_positions)
    base = Chunk(0, table.schema, table.table, table.table_id, key, None, None, 0)
    if not key:
        return [_with(base, first_index, None, None, _count(cursor, base))]
    chunks: list[Chunk] = []
    lower: Key | None = None
    while True:
        probe = _with(base, 0, lower, None, 0)
        where, params = probe.where()
        cols = ", ".join(quote_ident(k) for k in key)
        cursor.execute(f"SELECT {cols} FROM {probe.from_clause()}{where}{probe.order_by()} "
                       f"LIMIT 1 OFFSET {chunk_size - 1}", params)  # fmt: skip
        row = cursor.fetchone()
        if row is None:
            chunks.append(_with(base, first_index + len(chunks), lower, None, _count(cursor, probe)))
            return chunks
        upper = tuple(row)
        chunks.append(_with(base, first_index + len(chunks), lower, upper, chunk_size))
        lower = upper


def _with(c: Chunk, index: int, lower: Key | None, upper: Key | None, rows: int) -> Chunk:
    return Chunk(index, c.schema, c.table, c.physical_table_id, c.key, lower, upper, rows)


def _count(cursor: Any, chunk: Chunk) -> int:
    where, params = chunk.where()
    cursor.execute(f"SELECT COUNT(*) FROM {chunk.from_clause()}{where}", params)
    return int(cursor.fetchone()[0])
