"""Turn an ordered batch of row changes of one table into idempotent multi-row SQL statements (pure).

Tables with a handle key (PK, else a NOT NULL unique key) are *compacted*: each key's last image wins
(an UPDATE that changes the key deletes the old key). The batch then becomes

1. ``DELETE FROM t WHERE k IN (…)`` for keys whose final state is "absent" (batched), then
2. ``REPLACE INTO t (cols) VALUES (…),(…)`` for keys whose final state is an image.

With ``load_from``, a REPLACE of that many rows or more is a :class:`~sparkcdc.mysql.bulk_load.BulkLoad` of the
same VALUES tuples (``LOAD DATA LOCAL INFILE … REPLACE``) for the applier to run in its place, when every value is in
its column's one form: always for rows the MySQL sink rendered, for RowChanges when each value is of its column's
kind.

Deletes go first so that a unique value freed by a deleted row can be taken by a replaced one; REPLACE
(not ``INSERT … ON DUPLICATE KEY UPDATE``) removes any row that conflicts on *another* unique key, which is
what the upstream's final state implies. Running the statements twice gives the same table, so a batch
replayed after a crash is harmless.

Tables without a handle key cannot be compacted: rows are applied in order, ``DELETE … LIMIT 1`` and
``UPDATE … LIMIT 1`` match on every column (NULL-safe ``<=>``). Such batches are not idempotent (TiCDC
does not replicate key-less tables by default either).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from sparkcdc.model import RowChange, RowOp, TableInfo
from sparkcdc.model.steps import AppliedRow, RenderedRow
from sparkcdc.mysql.bulk_load import BulkLoad, load_columns
from sparkcdc.mysql.sql_values import literal, of_kinds, row_tuple, value_kinds
from sparkcdc.mysql.target import quote_ident, quote_table

# Stay well below MariaDB's default max_allowed_packet (16 MiB).
MAX_STATEMENT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """The statements of one batch (a bulk load stands for a REPLACE) and what they do (for progress counters)."""

    statements: tuple[str | BulkLoad, ...]
    upserts: int
    deletes: int
    rows_in: int



def key_positions(table: TableInfo) -> tuple[int, ...]:
    """Handle-key positions, else primary-key flags, else ``()`` (no usable key)."""
    keys = table.handle_key_positions
    if keys:
        return keys
    return tuple(i for i, c in enumerate(table.columns) if c.primary_key)


def writable_positions(table: TableInfo) -> tuple[int, ...]:
    """Columns a statement may set (generated columns are computed by the downstream)."""
    return tuple(i for i, c in enumerate(table.columns) if c.generated is None)


def plan_batch(rows: Sequence[AppliedRow], *, max_bytes: int = MAX_STATEMENT_BYTES, load_from: int = 0) -> BatchPlan:
    """Statements that bring the downstream to the state after ``rows`` (all of one table, in order); with
    ``load_from`` (0: never) a keyed table's REPLACE of at least that many rows is a bulk load where its values
    allow."""
    statements: list[str | BulkLoad] = []
    upserts = deletes = 0
    for group in _groups_by_shape(rows):
        table = group[0].table
        keys = key_positions(table)
        s: Sequence[str | BulkLoad]
        if keys:
            s, u, d = _compacted(group, table, keys, max_bytes, load_from)
        else:
            s, u, d = _sequential(group, table, max_bytes)  # type: ignore[arg-type]  # only keyed tables render
        statements.extend(s)
        upserts += u
        deletes += d
    return BatchPlan(tuple(statements), upserts, deletes, len(rows))


def _groups_by_shape(rows: Sequence[AppliedRow]) -> Iterator[list[AppliedRow]]:
    """Consecutive rows sharing one column layout (canal-json builds a table per message), rendered or not."""
    group: list[AppliedRow] = []
    shape: tuple[object, ...] | None = None
    last: TableInfo | None = None
    for r in rows:
        if r.table is not last:  # decoders share one TableInfo per table version: compare shapes rarely
            last = r.table
            s = (isinstance(r, RenderedRow), last.schema, last.table, *(c.name for c in last.columns))
            if shape is not None and s != shape:
                yield group
                group = []
            shape = s
        group.append(r)
    if group:
        yield group


def _compacted(
    rows: list[AppliedRow], table: TableInfo, keys: tuple[int, ...], max_bytes: int, load_from: int
) -> tuple[list[str | BulkLoad], int, int]:
    final: dict[object, Any] = {}
    rendered = isinstance(rows[0], RenderedRow)
    if rendered:
        old_key: Callable[[Any], object] = attrgetter("key_before")
        new_key: Callable[[Any], object] = attrgetter("key_after")
        image: Callable[[Any], Any] = attrgetter("values")
    else:
        key = _key_function(keys)
        old_key, new_key, image = (lambda r: key(r.before)), (lambda r: key(r.after)), attrgetter("after")
    delete, insert = RowOp.DELETE, RowOp.INSERT
    for r in rows:
        op = r.op
        if op is delete:
            final[old_key(r)] = None
        elif op is insert:
            final[new_key(r)] = image(r)
        else:
            old, new = old_key(r), new_key(r)
            if old != new:
                final[old] = None
            final[new] = image(r)
    name = quote_table(table.schema, table.table)
    statements: list[str | BulkLoad] = []
    gone = [k for k, v in final.items() if v is None]
    images = [v for v in final.values() if v is not None]
    if gone:
        items: list[str]
        if len(keys) == 1:
            head = f"DELETE FROM {name} WHERE {quote_ident(table.columns[keys[0]].name)} IN ("
            items = [str(k) for k in gone] if rendered else [literal(k) for k in gone]
        else:
            cols = ",".join(quote_ident(table.columns[i].name) for i in keys)
            head = f"DELETE FROM {name} WHERE ({cols}) IN ("
            items = [str(k) for k in gone] if rendered else [row_tuple(k) for k in gone]  # type: ignore[arg-type]
        statements.extend(_chunked(head, items, ")", max_bytes))
    if images:
        cols_pos = writable_positions(table)
        if 0 < load_from <= len(images) and (rendered or _loadable(images, table, cols_pos)):
            items = images if rendered else [row_tuple([v[i] for i in cols_pos]) for v in images]
            statements.append(BulkLoad(name, load_columns(table, cols_pos), items))
            return statements, len(images), len(gone)
        cols = ",".join(quote_ident(table.columns[i].name) for i in cols_pos)
        head = f"REPLACE INTO {name} ({cols}) VALUES "
        if rendered:
            items = images
        elif len(cols_pos) == len(table.columns):
            items = [row_tuple(v) for v in images]
        else:
            items = [row_tuple([v[i] for i in cols_pos]) for v in images]
        statements.extend(_chunked(head, items, "", max_bytes))
    return statements, len(images), len(gone)


def _loadable(images: list[Any], table: TableInfo, positions: tuple[int, ...]) -> bool:
    """Whether images of RowChanges render as a load reads them: every written value of its column's kind (what a
    rendered row guarantees, ``sql_values.of_kinds``)."""
    kinds = value_kinds(table)
    wanted = [kinds[i] for i in positions]
    return all(of_kinds([v[i] for i in positions], wanted) for v in images)


def _key_function(keys: tuple[int, ...]) -> Callable[[Any], object]:
    """The compaction key of an image: the value itself for a one-column key, else a tuple."""
    if len(keys) == 1:
        k = keys[0]
        return lambda values: values[k]
    return lambda values: tuple(values[i] for i in keys)


def _chunked(head: str, items: list[str], tail: str, max_bytes: int) -> Iterator[str]:
    """``head + items joined by commas + tail``, split so each statement stays under ``max_bytes``."""
    batch: list[str] = []
    size = len(head)
    for item in items:
        if batch and size + len(item) + 1 > max_bytes:
            yield head + ",".join(batch) + tail
            batch, size = [], len(head)
        batch.append(item)
        size += len(item) + 1
    if batch:
        yield head + ",".join(batch) + tail


def _match_all(table: TableInfo, values: tuple[object, ...]) -> str:
    return " AND ".join(
        f"{quote_ident(c.name)} <=> {literal(values[i])}" for i, c in enumerate(table.columns) if c.generated is None
    )


def _sequential(rows: list[RowChange], table: TableInfo, max_bytes: int) -> tuple[list[str], int, int]:
    name = quote_table(table.schema, table.table)
    cols_pos = writable_positions(table)
    cols = ",".join(quote_ident(table.columns[i].name) for i in cols_pos)
    statements: list[str] = []
    inserts: list[str] = []
    upserts = deletes = 0

    def flush() -> None:
        if inserts:
            statements.extend(_chunked(f"INSERT INTO {name} ({cols}) VALUES ", inserts, "", max_bytes))
            inserts.clear()

    for r in rows:
        if r.op is RowOp.INSERT:
            assert r.after is not None
            inserts.append(row_tuple([r.after[i] for i in cols_pos]))
            upserts += 1
            continue
        flush()
        if r.op is RowOp.DELETE:
            assert r.before is not None
            statements.append(f"DELETE FROM {name} WHERE {_match_all(table, r.before)} LIMIT 1")
            deletes += 1
        else:
            assert r.before is not None and r.after is not None
            sets = ",".join(f"{quote_ident(table.columns[i].name)}={literal(r.after[i])}" for i in cols_pos)
            statements.append(f"UPDATE {name} SET {sets} WHERE {_match_all(table, r.before)} LIMIT 1")
            upserts += 1
    flush()
    return statements, upserts, deletes
