"""The Python work at the query's two ends per stage row, in one run: Arrow record batches built and read by
``pipeline/stage_row.py`` against what Spark's Python workers do with a data source that yields tuples and a
writer that takes ``Row`` objects.

    .venv/bin/python benchmarks/stage_row.py              # 200k stage rows
    .venv/bin/python benchmarks/stage_row.py -n 50000 --payload 2000

Input: N ``Dml`` rows (``--payload`` bytes each, the table info on every 50th, as a chunk sends it once per table
and route) with a ``Mark`` at the end, generated locally. Both sides run the same PySpark 4.3 code that the
workers run:

* source: ``plan_data_source_read.records_to_arrow_batches`` over the rows as tuples of the Spark schema
  (batches of ``spark.sql.execution.arrow.maxRecordsPerBatch`` = 16 rows, this project's setting) against
  ``stage_row.to_batches`` (which that same function passes through as they are);
* sink: the ``Row`` objects ``write_into_data_source`` builds for a ``DataSourceStreamWriter`` (then typed stage
  rows made from them) against ``stage_row.from_batches`` for a ``DataSourceStreamArrowWriter``, over the same
  record batches of 16 rows (what the JVM sends the writer).

Prints µs per row of each side (best of ``--rounds`` interleaved rounds, process CPU time) and the ratios. The JVM's
side (Arrow to its rows and back, the shuffle) is not in these figures: ``changefeed.py`` measures the whole path.
"""

from __future__ import annotations

import argparse
import pickle
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.conversion import ArrowTableToRowsConversion
from pyspark.sql.types import Row
from pyspark.sql.worker.plan_data_source_read import records_to_arrow_batches

from sparkcdc.pipeline.stage_row import (
    Ddl,
    Dml,
    Mark,
    Snap,
    StageRow,
    from_batches,
    spark_schema,
    to_batches,
)

SPARK_BATCH_ROWS = 16  # query._SESSION_DEFAULTS["spark.sql.execution.arrow.maxRecordsPerBatch"]
_KINDS = (Dml, Ddl, Mark, Snap)


def make_rows(n: int, payload: int) -> list[StageRow]:
    info = pickle.dumps({"table": "t", "columns": list(range(20))})
    rows: list[StageRow] = [Dml(i % 4, "db", f"t{i % 4}", 100, 7, 1000 + i // 10, i, 10, b"p" * payload,
                                info if i % 50 == 0 else None) for i in range(n)]  # fmt: skip
    rows.append(Mark(100, 2000, 1_700_000_000_000))
    return rows


def as_tuple(row: StageRow) -> tuple[Any, ...]:
    """A stage row as a tuple of the Spark schema (what a source yielding tuples would yield)."""
    fields = tuple(v for k, v in row._asdict().items() if k != "route")
    return (row.route if isinstance(row, Dml) else 0, *(fields if type(row) is k else None for k in _KINDS))


def from_row(row: Any) -> StageRow:
    """A stage row of a Spark ``Row`` (what a ``DataSourceStreamWriter`` would have to do)."""
    route, dml, ddl, mark, snap = row
    if dml is not None:
        return Dml(route, *dml)
    if ddl is not None:
        return Ddl(*ddl)
    return Mark(*mark) if mark is not None else Snap(*snap)


def spark_rows(batches: list[pa.RecordBatch]) -> Iterator[Row]:
    """``write_into_data_source.batch_to_rows``: what PySpark hands a ``DataSourceStreamWriter``."""
    schema = spark_schema()
    converters = [ArrowTableToRowsConversion._create_converter(f.dataType, binary_as_bytes=True)
                  for f in schema.fields]  # fmt: skip
    fields = schema.fieldNames()
    for batch in batches:
        columns = [ArrowTableToRowsConversion._to_pylist(c) for c in batch.columns]
        for i in range(batch.num_rows):
            yield Row(**{fields[c]: converters[c](columns[c][i]) for c in range(batch.num_columns)})


def rebatch(batches: list[pa.RecordBatch], size: int) -> list[pa.RecordBatch]:
    return pa.Table.from_batches(batches).combine_chunks().to_batches(max_chunksize=size)


def cpu(fn: Callable[[], Any]) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("-n", "--rows", type=int, default=200_000)
    ap.add_argument("--payload", type=int, default=400, help="bytes per payload")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    rows = make_rows(args.rows, args.payload)
    schema = spark_schema()
    tuples = [as_tuple(r) for r in rows]
    wire = rebatch(list(to_batches(rows)), SPARK_BATCH_ROWS)
    assert list(from_batches(wire)) == [from_row(r) for r in spark_rows(wire)] == rows  # both sides agree

    sides: dict[str, Callable[[], Any]] = {
        "source: tuples converted by Spark": lambda: sum(
            b.num_rows for b in records_to_arrow_batches(iter(tuples), SPARK_BATCH_ROWS, schema, None)),
        "source: stage_row.to_batches": lambda: sum(b.num_rows for b in to_batches(iter(rows))),
        "sink: Row objects": lambda: sum(1 for _ in map(from_row, spark_rows(wire))),
        "sink: stage_row.from_batches": lambda: sum(1 for _ in from_batches(wire)),
    }  # fmt: skip
    best = {name: float("inf") for name in sides}
    for _ in range(args.rounds):
        for name, fn in sides.items():
            best[name] = min(best[name], cpu(fn))
    per_row = {name: s / len(rows) * 1e6 for name, s in best.items()}
    for name, us in per_row.items():
        print(f"{name}: {us:.2f} µs/row")
    src = per_row["source: tuples converted by Spark"] / per_row["source: stage_row.to_batches"]
    sink = per_row["sink: Row objects"] / per_row["sink: stage_row.from_batches"]
    print(f"{len(rows)} stage rows of {args.payload} B payloads, best of {args.rounds} rounds (process CPU): "
          f"Arrow source {src:.2f}x the tuple source, Arrow sink {sink:.2f}x the Row sink")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
