"""What the event filters cost per row change on the executors, against the canal-json encoding of the same rows.

    .venv/bin/python benchmarks/event_filter.py            # 200k row changes
    .venv/bin/python benchmarks/event_filter.py -n 50000   # quicker

Input: N row changes (inserts, updates, deletes in turn) of a 6-column table (int PK, varchar, DECIMAL, ENUM,
DATETIME, nullable varchar), generated locally with a fixed seed. Each case runs the check the relay source's
transform runs per row (``ChunkTransform.rows``: ``if flt.rules and flt.should_skip_dml(ev)``) over all rows:

* ``no filters``: no ``[[filter.event-filters]]`` at all (the default);
* ``ignore-event``: one rule dropping the table's deletes;
* ``1 expr``: ``ignore-insert-value-expr = "amount > 500 or region = 'apac'"``;
* ``4 exprs``: every ``ignore-*-value-expr`` set, with LIKE, YEAR(), ENUM, NULL tests and arithmetic.

Floor, measured in the same run: canal-json ``encode_txn`` of the same rows in 100-row transactions (work the
transform does for every row kept). Time is CPU time; cases and floor are interleaved round by round
(``--repeat``) and the best run of each is kept; inputs are built and frozen before timing.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparkcdc.codec import base
from sparkcdc.filter.event_filter import EventFilter, EventFilterRule
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys

REGIONS = ("eu", "us", "apac", "latam")

CASES: dict[str, list[dict[str, Any]]] = {
    "no filters": [],
    "ignore-event": [{"matcher": ["shop.*"], "ignore-event": ["delete"]}],
    "1 expr": [{"matcher": ["shop.orders"], "ignore-insert-value-expr": "amount > 500 or region = 'apac'"}],
    "4 exprs": [{
        "matcher": ["shop.*"],
        "ignore-insert-value-expr": "amount > 500 or region = 'apac'",
        "ignore-update-old-value-expr": "note LIKE 'keep%' and status = 'void'",
        "ignore-update-new-value-expr": "amount * 2 >= 1500 or note IS NULL",
        "ignore-delete-value-expr": "year(created) < 2019 and status IN ('new', 'paid')",
    }],
}  # fmt: skip


def make_table() -> TableInfo:
    cols = (
        ColumnInfo("id", "int", nullable=False),
        ColumnInfo("region", "varchar", length=8),
        ColumnInfo("amount", "decimal", length=10, decimal=2),
        ColumnInfo("status", "enum", elements=("new", "paid", "void")),
        ColumnInfo("created", "datetime"),
        ColumnInfo("note", "varchar", length=20),
    )
    idx = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
    return TableInfo("shop", "orders", 1, with_handle_keys(cols, idx), idx, version=1)


def make_rows(table: TableInfo, n: int, seed: int = 7) -> list[RowChange]:
    rng = random.Random(seed)

    def row(i: int) -> tuple[Any, ...]:
        note = None if rng.random() < 0.1 else f"{rng.choice(('keep', 'drop'))}-{i}"
        created = f"20{rng.randint(15, 25)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 10:00:00"
        amount = Decimal(rng.randint(0, 100_000)).scaleb(-2)
        return (i, rng.choice(REGIONS), amount, rng.randint(1, 3), created, note)

    out = []
    for i in range(n):
        kind = (RowOp.INSERT, RowOp.UPDATE, RowOp.DELETE)[i % 3]
        before = row(i) if kind is not RowOp.INSERT else None
        after = row(i) if kind is not RowOp.DELETE else None
        out.append(RowChange(i, table, kind, before, after))
    return out


def cpu(fn: Callable[[], int]) -> tuple[float, int]:
    gc.collect()
    t = time.process_time()
    count = fn()
    return time.process_time() - t, count


def filter_case(rules: list[dict[str, Any]], rows: Sequence[RowChange]) -> Callable[[], int]:
    flt = EventFilter([EventFilterRule.from_toml(r) for r in rules])

    def run() -> int:
        kept = 0
        for ev in rows:
            if flt.rules and flt.should_skip_dml(ev):
                continue
            kept += 1
        return kept

    run()  # warm-up: plans compiled
    return run


def encode_floor(table: TableInfo, rows: Sequence[RowChange]) -> Callable[[], int]:
    encoder = base.txn_encoder("canal-json")
    batches = [rows[i : i + 100] for i in range(0, len(rows), 100)]

    def run() -> int:
        out = [encoder.encode_txn(b) for b in batches]
        return len(out)

    run()
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("-n", type=int, default=200_000, help="row changes")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    table = make_table()
    rows = make_rows(table, args.n)
    gc.freeze()
    runs = {name: filter_case(rules, rows) for name, rules in CASES.items()}
    runs["canal-json encode (floor)"] = encode_floor(table, rows)
    best: dict[str, float] = {}
    kept: dict[str, int] = {}
    for r in range(args.repeat):
        names = list(runs) if r % 2 == 0 else list(reversed(runs))
        for name in names:
            secs, count = cpu(runs[name])
            best[name] = min(best.get(name, secs), secs)
            kept[name] = count
    floor = best["canal-json encode (floor)"] / args.n
    base_ns = best["no filters"] / args.n * 1e9
    print(f"{args.n:,} row changes, best of {args.repeat} (CPU time per row change)")
    print(f"{'case':28} {'ns/row':>9} {'+ns vs none':>12} {'vs encode':>10} {'rows kept':>10}")
    for name, secs in best.items():
        per = secs / args.n
        extra = per * 1e9 - base_ns
        note = f"{kept[name]:>10,}" if not name.startswith("canal-json") else f"{'':>10}"
        print(f"{name:28} {per * 1e9:>9.0f} {extra:>12.0f} {per / floor:>9.2f}x {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
