"""The stage row: what the changefeed query's source hands to its sink, one typed shape per kind, and how Spark
carries it.

Kinds (each a NamedTuple with its own field names and types):

``Dml``   one sink payload: a versioned table's rows of one transaction (or a part of a big one), encoded by the
          sink's encoder, on the writer ``route`` the encoder chose (a writer task owns every payload of its
          routes); ``(commit_ts, seq)`` orders a table's payloads; ``info`` is the pickled TableInfo, sent with the
          first payload of each versioned table and route of a chunk only
``Ddl``   a DDL event (pickled), ordered among the batch's payloads by ``(commit_ts, seq)``
``Mark``  the one row per batch that carries its offsets to the commit and when it was planned (Unix ms: the
          micro-batch duration ends at its commit)
``Snap``  a snapshot chunk read (the fields of ``snapshot_state.ChunkRead``)

Spark carries a stage row as a tagged union (``spark_schema``): ``route`` (the shuffle key, 0 but for ``Dml``) and
one struct column per kind, of which exactly the row's own is set. In Python the query's ends exchange Arrow
record batches of these columns (``to_batches`` on the source, ``from_batches`` in the sink's writer); no code
outside this module knows the columns' order. pyarrow is imported by the functions that need it (the source's
planner and the sink's commit runner load this module too).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]


class Dml(NamedTuple):
    route: int
    schema: str
    table: str
    version: int
    physical_table_id: int
    commit_ts: int
    seq: int
    nrows: int
    payload: bytes
    info: bytes | None


class Ddl(NamedTuple):
    commit_ts: int
    seq: int
    event: bytes  # the pickled DDLEvent


class Mark(NamedTuple):
    start_ts: int
    end_ts: int
    planned_ms: int


class Snap(NamedTuple):
    chunk: int  # the chunk's index in the snapshot plan
    rows: int
    watermark: int
    file: str  # binlog file and position of the read's snapshot ("" and 0 when the server did not say)
    pos: int
    keys: bytes  # the keys it read (``snapshot_handover.pack_keys``)


StageRow = Dml | Ddl | Mark | Snap

# Arrow type of every field name (a name has one type in every kind; Spark's int is int32, its long int64); the
# struct columns in ``_KINDS`` order
_TYPES = {
    "route": "int32", "schema": "string", "table": "string", "version": "int64", "physical_table_id": "int64",
    "commit_ts": "int64", "seq": "int32", "nrows": "int32", "payload": "binary", "info": "binary", "event": "binary",
    "start_ts": "int64", "end_ts": "int64", "planned_ms": "int64", "chunk": "int64", "rows": "int64",
    "watermark": "int64", "file": "string", "pos": "int64", "keys": "binary",
}  # fmt: skip
_KINDS: tuple[tuple[str, type[Any]], ...] = (("dml", Dml), ("ddl", Ddl), ("mark", Mark), ("snap", Snap))


def _struct_fields(kind: type[Any]) -> tuple[str, ...]:
    """The fields a kind's struct column holds (``Dml``'s route is the top-level column)."""
    return tuple(f for f in kind._fields if f != "route")


# A source batch closes at this many rows or once its payloads reach this many bytes, whichever comes first: the
# bound on what a source task holds besides the row being built. A payload is a transaction's rows of a table or a
# part of a big one (``transform.PART_BYTES`` of binlog rows, ~0.6 MiB of canal-json), so a big transaction goes to
# Spark a part per batch, never whole; small transactions go a few hundred at a time, since each batch has a fixed
# cost. (Spark's own bound, ``spark.sql.execution.arrow.maxRecordsPerBatch`` in ``query``, applies only to rows
# Spark converts itself: the sink's input batches.)
BATCH_ROWS = 256
BATCH_BYTES = 1 << 20


@cache
def arrow_schema() -> pa.Schema:
    """The stage row's columns as Arrow types (every field nullable): the one definition the Spark schema is made
    from, so a source's record batches match what Spark checks them against."""
    import pyarrow as pa

    return pa.schema(
        [pa.field("route", getattr(pa, _TYPES["route"])())]
        + [pa.field(name, _struct_type(kind)) for name, kind in _KINDS]
    )  # fmt: skip


def spark_schema() -> Any:
    """The stage row's Spark schema (a StructType): the relay source's and the sink's."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema())


def _struct_type(kind: type[Any]) -> pa.StructType:
    import pyarrow as pa

    return pa.struct([pa.field(f, getattr(pa, _TYPES[f])()) for f in _struct_fields(kind)])


def _size(row: StageRow) -> int:
    if isinstance(row, Dml):
        return len(row.payload) + len(row.info or b"")
    if isinstance(row, Ddl):
        return len(row.event)
    return len(row.keys) if isinstance(row, Snap) else 0


def to_batches(rows: Iterable[StageRow]) -> Iterator[pa.RecordBatch]:
    """``rows`` in Arrow record batches of ``arrow_schema()``, in order: a batch closes at ``BATCH_ROWS`` rows or
    once its payloads reach ``BATCH_BYTES``, and is passed on before the next row is asked for."""
    batch: list[StageRow] = []
    size = 0
    for row in rows:
        batch.append(row)
        size += _size(row)
        if len(batch) >= BATCH_ROWS or size >= BATCH_BYTES:
            yield _record_batch(batch)
            batch, size = [], 0
    if batch:
        yield _record_batch(batch)


def _fields(row: StageRow) -> tuple[Any, ...]:
    """A row's values in its struct column (``Dml``'s route is the top-level column)."""
    return tuple(row)[1:] if isinstance(row, Dml) else tuple(row)


def _record_batch(rows: list[StageRow]) -> pa.RecordBatch:
    import pyarrow as pa

    schema = arrow_schema()
    columns = [pa.array([r.route if isinstance(r, Dml) else 0 for r in rows], schema.field("route").type)]
    for name, kind in _KINDS:
        struct = schema.field(name).type
        mine = [type(r) is kind for r in rows]
        if not any(mine):
            columns.append(pa.nulls(len(rows), struct))
        elif all(mine):  # the common case (a batch of payloads): a column per field
            values = zip(*(_fields(r) for r in rows), strict=True)
            children = [pa.array(v, f.type) for v, f in zip(values, struct, strict=True)]
            columns.append(pa.StructArray.from_arrays(children, fields=list(struct)))
        else:
            columns.append(pa.array([_fields(r) if m else None for r, m in zip(rows, mine, strict=True)], struct))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def from_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[StageRow]:
    """The stage rows of record batches with the stage row's columns (what Spark hands the sink's writer)."""
    for batch in batches:
        route = batch.column("route").to_pylist()
        dml = batch.column("dml")
        if dml.null_count == 0:  # a batch of payloads: read column by column
            yield from map(Dml._make, zip(route, *(f.to_pylist() for f in dml.flatten()), strict=True))
            continue
        kinds = [(batch.column(name).to_pylist(), kind) for name, kind in _KINDS]
        for i, r in enumerate(route):
            for values, kind in kinds:
                if (v := values[i]) is not None:
                    yield Dml(r, **v) if kind is Dml else kind(**v)
                    break

