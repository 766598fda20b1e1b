"""An Iceberg MERGE as one copy-on-write overwrite: the data files holding a touched key are read, filtered and
written again with the batch's new images, all in one snapshot.

pyiceberg 0.12 has no MERGE, and its ``delete(In(key, {...}))`` binds the key set as an expression over and over
(planning, projecting, filtering: six times per delete), at ~10 µs a literal: most of a batch's time went there
(``benchmarks/lake_sink.py``, profiled). Here keys are matched by Arrow compute (``is_in``, or a semi-join for a
composite key) on each data file, which is what the delete does after the predicate anyway, and the remains of the
rewritten files and the new rows go out together: one snapshot per batch instead of three, and fewer files.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

FLUSH_BYTES = 256 << 20  # remains of rewritten files held before they are written out (pyiceberg splits at 512 MiB)


def overwrite_keys(t: Any, keys: Sequence[str], touched: pa.Table, rows: pa.Table, props: dict[str, str]) -> None:
    """Commit to table ``t`` one snapshot (summary ``props``) in which no row has a key of ``touched`` (columns
    ``keys``) and ``rows`` are added. Raises pyiceberg's CommitFailedException when another writer committed
    since ``t`` was loaded (nothing is changed then)."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files

    schema = t.schema()
    target = schema.as_arrow()
    tasks = list(t.scan().plan_files()) if t.current_snapshot() is not None else []
    with t.transaction() as tx, tx.update_snapshot(snapshot_properties=props).overwrite() as snapshot:
        meta = tx.table_metadata
        pending: list[pa.Table] = []
        numbers = itertools.count()  # file names are <n>-<commit uuid>: one count for every flush

        def flush() -> None:
            out = pa.concat_tables(pending)
            pending.clear()
            if out.num_rows:
                for f in _dataframe_to_data_files(meta, out, t.io, write_uuid=snapshot.commit_uuid, counter=numbers):
                    snapshot.append_data_file(f)

        key_schema = schema.select(*keys)
        for task in tasks:
            if not pc.any(_hits(ArrowScan(meta, t.io, key_schema, AlwaysTrue()).to_table(tasks=[task]), keys,
                                touched)).as_py():  # fmt: skip
                continue  # the key columns alone tell: an insert-only batch reads no whole file
            data = ArrowScan(meta, t.io, schema, AlwaysTrue()).to_table(tasks=[task])
            hit = _hits(data, keys, touched)
            snapshot.delete_data_file(task.file)
            pending.append(data.filter(pc.invert(hit)).cast(target))
            if sum(p.nbytes for p in pending) > FLUSH_BYTES:  # bounded memory on a table larger than it
                flush()
        pending.append(rows.select(target.names).cast(target))
        flush()


def _hits(data: pa.Table, keys: Sequence[str], touched: pa.Table) -> pa.ChunkedArray:
    """A boolean per row of ``data``: its key is one of ``touched``'s."""
    if data.num_rows == 0:
        return pa.chunked_array([pa.array([], pa.bool_())])
    if len(keys) == 1:
        return pc.is_in(data[keys[0]], value_set=touched[keys[0]].cast(data.schema.field(keys[0]).type))
    import numpy as np

    index = data.select(list(keys)).append_column("__row", pa.array(np.arange(data.num_rows)))
    wanted = touched.select(list(keys)).cast(index.select(list(keys)).schema)
    matched = index.join(wanted, keys=list(keys), join_type="left semi")["__row"]
    return pc.is_in(index["__row"], value_set=matched.combine_chunks())
