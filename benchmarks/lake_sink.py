"""Lake sink benchmark: rows/s of the lake target's MERGE per micro-batch into Delta (delta-rs) and Iceberg
(pyiceberg, SQL catalog on SQLite), each as a ratio to a plain append of the same rows with the same library in the
same run, and the number of data files per table at the end (before and after the documented maintenance).

    .venv/bin/python benchmarks/lake_sink.py [--rows 200000] [--batch 10000] [--formats delta,iceberg]

Each micro-batch is ``--batch`` row changes of one table: by default 70% inserts of new keys, 20% updates of earlier
keys (scattered over the table, so MERGE rewrites files), 10% deletes; ``--inserts 1`` gives an append-only table
(an event log), whose batches touch no existing key. The append baseline writes the batch's net
upserts (the same rows) with ``write_deltalake(mode="append")`` / ``Table.append``. Everything is local (temp dir).
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from sparkcdc.lake.changes import net_change
from sparkcdc.lake.location import LakeLocation
from sparkcdc.lake.target import open_tables
from sparkcdc.lake.types import to_arrow
from sparkcdc.model import RowChange, RowOp, TableInfo
from sparkcdc.model.table import ColumnInfo

TABLE = TableInfo("bench", "t", 1, (
    ColumnInfo("id", "bigint", nullable=False, primary_key=True, handle_key=True),
    ColumnInfo("v", "varchar", length=64), ColumnInfo("n", "bigint"), ColumnInfo("d", "decimal", length=12, decimal=2),
))  # fmt: skip


def batches(rows: int, size: int, seed: int = 7, inserts: float = 0.7) -> list[list[RowChange]]:
    """``inserts``: the share of row changes that insert a new key (the rest: 2/3 updates, 1/3 deletes)."""
    rnd = random.Random(seed)
    update = inserts + (1 - inserts) * 2 / 3
    live: dict[int, tuple[Any, ...]] = {}
    keys: list[int] = []
    next_id, ts, out = 0, 1, []
    while sum(len(b) for b in out) < rows:
        batch: list[RowChange] = []
        for _ in range(size):
            ts += 1
            r = rnd.random()
            if r < inserts or len(live) < 100:
                image = (next_id, f"value {next_id}", next_id * 3, Decimal(next_id % 100000) / 100)
                live[next_id] = image
                keys.append(next_id)
                next_id += 1
                batch.append(RowChange(ts, TABLE, RowOp.INSERT, None, image))
            else:
                k = keys[rnd.randrange(len(keys))]
                if k not in live:
                    continue
                old = live[k]
                if r < update:
                    new = (k, old[1] + "!", old[2] + 1, old[3])
                    live[k] = new
                    batch.append(RowChange(ts, TABLE, RowOp.UPDATE, old, new))
                else:
                    del live[k]
                    batch.append(RowChange(ts, TABLE, RowOp.DELETE, old, None))
        out.append(batch)
    return out


def files(fmt: str, root: str) -> int:
    if fmt == "delta":
        from deltalake import DeltaTable

        return len(DeltaTable(f"{root}/bench/t").file_uris())
    from sparkcdc.lake.iceberg import catalog

    t = catalog(LakeLocation("iceberg", root)).load_table(("bench", "t"))
    return sum(1 for _ in t.scan().plan_files())


def maintain(fmt: str, root: str) -> None:
    """The documented maintenance (``cdc lake maintain``), keeping no history."""
    from sparkcdc.lake.maintenance import maintain as run_maintenance

    run_maintenance(LakeLocation(fmt, root), "bench", "t", datetime.timedelta(0))


def appender(fmt: str, root: str) -> Callable[[list[tuple[Any, ...]]], None]:
    """The baseline: a plain append of rows with the same library."""
    if fmt == "delta":
        from deltalake import write_deltalake

        return lambda rows: write_deltalake(f"{root}/t", to_arrow(TABLE, rows), mode="append")
    from sparkcdc.lake.iceberg import catalog

    cat = catalog(LakeLocation("iceberg", root))
    cat.create_namespace_if_not_exists("bench")
    t = cat.create_table(("bench", "t"), to_arrow(TABLE, []).schema)
    return lambda rows: t.append(to_arrow(TABLE, rows))


def warm_up(fmt: str, tmp: Path) -> None:
    """One small merge and append first: the libraries import more on their first call (delta-rs's merge: pandas,
    over a second), which would be counted against the merge alone."""
    run(fmt, batches(300, 100), tmp / "warm-up", measure=False)


def run(fmt: str, work: list[list[RowChange]], tmp: Path, measure: bool = True) -> dict[str, Any]:
    """Each batch merged, then its net upserts appended to the baseline table: interleaved, so a change of load on
    a shared machine weighs on both sides alike."""
    root = str(tmp / f"{fmt}-merge")
    tables = open_tables(LakeLocation(fmt, root), "bench")
    tables.ensure(TABLE)
    append = appender(fmt, str(tmp / f"{fmt}-append"))
    applied, merged, appended, merge_s, append_s = 0, 0, 0, 0.0, 0.0
    for batch in work:
        began = time.perf_counter()
        change = net_change(batch, TABLE.handle_key_positions, applied)
        tables.merge(TABLE, change, applied)
        merge_s += time.perf_counter() - began
        applied, merged = change.last_ts, merged + len(batch)
        rows = list(change.upserts.values())
        began = time.perf_counter()
        append(rows)
        append_s += time.perf_counter() - began
        appended += len(rows)
    if not measure:
        return {}
    before = files(fmt, root)
    maintain(fmt, root)
    return {"format": fmt, "row_changes": merged, "batches": len(work), "merge_rows_per_s": round(merged / merge_s),
            "append_rows_per_s": round(appended / append_s), "ratio": round((merged / merge_s) / (appended / append_s),
            3), "files": before, "files_after_maintenance": files(fmt, root)}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000, help="row changes in all")
    ap.add_argument("--batch", type=int, default=10_000, help="row changes per micro-batch")
    ap.add_argument("--formats", default="delta,iceberg", help="comma-separated: delta, iceberg")
    ap.add_argument("--inserts", type=float, default=0.7,
                    help="share of row changes inserting a new key (1.0: an append-only table)")  # fmt: skip
    args = ap.parse_args()
    work = batches(args.rows, args.batch, inserts=args.inserts)
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            warm_up(fmt, Path(tmp))
            print(json.dumps({"inserts": args.inserts, **run(fmt, work, Path(tmp))}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
