"""The MySQL applier alone: a batch's final rows by ``LOAD DATA LOCAL INFILE … REPLACE`` against REPLACE statements.

    .venv/bin/python benchmarks/mysql_bulk_load.py [--rows 100000] [--batch-rows 64,512,2048] [--rounds 4]

For each ``--batch-rows`` size, ``--rows`` rows the MySQL sink rendered (``render_rows``: a BIGINT key, INT, VARCHAR,
DOUBLE, DATETIME) are applied by ``MysqlApplier`` in batches of that size, each with its checkpoint row in one
transaction, into a fresh table of a private MariaDB: once with the bulk load (its threshold ``bulk_load.MIN_ROWS``
set to 1 so every batch loads) and once with ``bulk-load=false``, alternating which goes first per round. Prints
rows/s of each (median of ``--rounds``), the client process's CPU per row, and the ratio bulk / statements: where it
crosses 1 is where ``bulk_load.MIN_ROWS`` belongs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.steps import Checkpoint
from sparkcdc.model.table import with_handle_keys
from sparkcdc.mysql import bulk_load
from sparkcdc.mysql.applier import MysqlApplier
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.sink.mysql.encoder import render_rows

PK = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
COLUMNS = with_handle_keys((ColumnInfo("id", "bigint", nullable=False), ColumnInfo("a", "int"),
                            ColumnInfo("b", "varchar"), ColumnInfo("c", "double"), ColumnInfo("d", "datetime")),
                           PK)  # fmt: skip
DDL = "(id BIGINT PRIMARY KEY, a INT, b VARCHAR(64), c DOUBLE, d DATETIME)"


def apply_all(target: MysqlTarget, db: str, rows: int, batch: int) -> tuple[float, float]:
    """Seconds and client CPU seconds to apply ``rows`` rows into ``db``.t in batches of ``batch``."""
    info = TableInfo(db, "t", 1, COLUMNS, PK, 1)
    values = [(i, i * 7, f"row {i} 'text'", i / 3, "2024-01-02 03:04:05") for i in range(rows)]
    rendered = render_rows([RowChange(10, info, RowOp.INSERT, None, v) for v in values])
    applier = MysqlApplier(target, changefeed="bench", checkpoint_schema="tidb_cdc")
    try:
        started, cpu = time.perf_counter(), time.process_time()
        for k, i in enumerate(range(0, rows, batch)):
            applier.apply(rendered[i : i + batch], Checkpoint(db, "t", -2, commit_ts=10 + k))
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        applier.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--rows", type=int, default=100_000, help="rows applied per run")
    ap.add_argument("--batch-rows", default="64,512,2048", help="comma-separated batch sizes")
    ap.add_argument("--rounds", type=int, default=4, help="runs of each mode per batch size (median)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.batch_rows.split(",")]
    bulk_load.MIN_ROWS = 1  # type: ignore[misc]  # every batch loads: the threshold is what this measures
    with tempfile.TemporaryDirectory(prefix="sparkcdc-bench-") as tmp:
        server = MariaDB(Path(tmp) / "downstream", server_id=2).start()
        try:
            assert server.port is not None
            bulk = MysqlTarget("127.0.0.1", server.port, "root")
            modes = {"bulk": bulk, "statements": replace(bulk, params=(("bulk-load", "false"),))}
            conn = bulk.connect(database="", autocommit=True)
            for size in sizes:
                wall: dict[str, list[float]] = {m: [] for m in modes}
                cpu: dict[str, list[float]] = {m: [] for m in modes}
                for r in range(args.rounds):
                    for mode in list(modes)[:: 1 if r % 2 == 0 else -1]:
                        db = f"b{size}_{mode}_{r}"
                        with conn.cursor() as cur:
                            cur.execute(f"CREATE DATABASE {db}")
                            cur.execute(f"CREATE TABLE {db}.t {DDL}")
                        seconds, used = apply_all(modes[mode], db, args.rows, size)
                        wall[mode].append(seconds)
                        cpu[mode].append(used)
                rate = {m: args.rows / statistics.median(v) for m, v in wall.items()}
                us = {m: statistics.median(v) / args.rows * 1e6 for m, v in cpu.items()}
                print(f"batch {size} rows: bulk load {rate['bulk']:,.0f} rows/s ({us['bulk']:.1f} µs CPU/row), "
                      f"statements {rate['statements']:,.0f} rows/s ({us['statements']:.1f} µs CPU/row); "
                      f"bulk / statements {rate['bulk'] / rate['statements']:.2f}x", flush=True)  # fmt: skip
            conn.close()
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
