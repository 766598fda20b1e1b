"""Apply throughput of the consumer's MySQL applier into a private MariaDB, with baseline and ceiling.

    .venv/bin/python benchmarks/consumer.py [--events 200000] [--tables 10] [--baseline-events 20000]

Generates (locally, seeded) a stream of mixed inserts / updates / deletes over N tables, then in one run:

* candidate: ``MysqlApplier.apply`` in batches of ``--batch-rows`` (per-key compaction, multi-row DELETE and
  REPLACE, the checkpoint row in the same transaction), tables applied by ``--workers`` threads as
  ``cdc storage-consumer`` does;
* baseline: one statement per row (INSERT / UPDATE / DELETE via pymysql), commit every 1000 rows, one thread;
  on the first ``--baseline-events`` events of every table (it is slow);
* ceiling: ``LOAD DATA LOCAL INFILE`` of the final table contents (what the events converge to).

Prints events/s for each and the ratios candidate/ceiling and candidate/baseline; also checks that the
candidate's final tables equal the ceiling's (``cdc check`` logic).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

from sparkcdc.consumer.check import checksum_sql
from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo
from sparkcdc.mysql.applier import Checkpoint, MysqlApplier
from sparkcdc.mysql.target import MysqlTarget

COLS_SQL = "id INT PRIMARY KEY, v VARCHAR(40), n BIGINT, d DECIMAL(12,3), dt DATETIME(3), f DOUBLE"
COLS = (
    ColumnInfo("id", "int", primary_key=True, handle_key=True, nullable=False),
    ColumnInfo("v", "varchar", length=40),
    ColumnInfo("n", "bigint"),
    ColumnInfo("d", "decimal", length=12, decimal=3),
    ColumnInfo("dt", "datetime", decimal=3),
    ColumnInfo("f", "double"),
)
NAMES = [c.name for c in COLS]


def generate(n_tables: int, events: int, seed: int) -> dict[str, list[RowChange]]:
    """Per table, an ordered event list: ~55% inserts, 30% updates, 15% deletes."""
    rng = random.Random(seed)
    out: dict[str, list[RowChange]] = {}
    per_table = events // n_tables
    ts = 1 << 40
    for t in range(n_tables):
        info = TableInfo("bench", f"t{t}", t + 1, COLS)
        live: dict[int, tuple[Any, ...]] = {}
        keys: list[int] = []
        next_id = 1
        evs: list[RowChange] = []
        for _ in range(per_table):
            ts += 1
            r = rng.random()
            if r < 0.55 or len(keys) < 10:
                row = _row(rng, next_id)
                next_id += 1
                live[row[0]] = row
                keys.append(row[0])
                evs.append(RowChange(ts, info, RowOp.INSERT, None, row))
            elif r < 0.85:
                k = keys[rng.randrange(len(keys))]
                row = _row(rng, k)
                evs.append(RowChange(ts, info, RowOp.UPDATE, live[k], row))
                live[k] = row
            else:
                i = rng.randrange(len(keys))
                k = keys[i]
                keys[i] = keys[-1]
                keys.pop()
                evs.append(RowChange(ts, info, RowOp.DELETE, live.pop(k), None))
        out[info.table] = evs
    return out


def _row(rng: random.Random, rid: int) -> tuple[Any, ...]:
    return (
        rid,
        f"value-{rng.getrandbits(40):x}",
        rng.getrandbits(62),
        Decimal(rng.randint(-10**8, 10**8)).scaleb(-3),
        f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 12:34:56.{rng.randint(0, 999):03d}",
        rng.uniform(-1e6, 1e6),
    )  # fmt: skip


def final_rows(events: list[RowChange]) -> list[tuple[Any, ...]]:
    state: dict[Any, tuple[Any, ...]] = {}
    for e in events:
        if e.op is RowOp.DELETE:
            assert e.before is not None
            state.pop(e.before[0], None)
        else:
            assert e.after is not None
            state[e.after[0]] = e.after
    return list(state.values())


def reset(target: MysqlTarget, tables: list[str], db: str = "bench") -> None:
    conn = target.connect(database="", autocommit=True)
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {db}")
        cur.execute("DROP DATABASE IF EXISTS sparkcdc_consumer")
        cur.execute(f"CREATE DATABASE {db}")
        for t in tables:
            cur.execute(f"CREATE TABLE {db}.{t} ({COLS_SQL})")
    conn.close()


def same_contents(target: MysqlTarget, tables: list[str]) -> list[str]:
    """Tables whose checksum differs between databases ``bench`` and ``ceiling``."""
    conn = target.connect(database="", autocommit=True)
    bad = []
    with conn.cursor() as cur:
        for t in tables:
            sums = []
            for db in ("bench", "ceiling"):
                cur.execute(checksum_sql(db, t, NAMES))
                sums.append(cur.fetchone())
            if sums[0] != sums[1]:
                bad.append(t)
    conn.close()
    return bad


def run_candidate(target: MysqlTarget, streams: dict[str, list[RowChange]], batch: int, workers: int) -> float:
    def one(table: str) -> None:
        applier = MysqlApplier(target, changefeed="bench")
        evs = streams[table]
        for i in range(0, len(evs), batch):
            chunk = evs[i : i + batch]
            applier.apply(chunk, Checkpoint("bench", table, 0, 1, "", 1, i + len(chunk), chunk[-1].commit_ts))
        applier.close()

    MysqlApplier(target, changefeed="bench").load_checkpoints()  # create the checkpoint table outside the timing
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, sorted(streams)))
    return time.perf_counter() - started


def write_tree(streams: dict[str, list[RowChange]], root: Path, events_per_file: int = 5000) -> int:
    """The events as a csv storage-sink tree (include-commit-ts), as the changefeed would write them."""
    from sparkcdc.codec.base import txn_encoder
    from sparkcdc.storage.external import ExternalStorage
    from sparkcdc.storage.layout import TableDir
    from sparkcdc.storage.metadata import encode_checkpoint
    from sparkcdc.storage.schema_file import TableDefinition

    storage = ExternalStorage.from_uri(f"file://{root}")
    encoder = txn_encoder("csv", {"include-commit-ts": True})
    top = 0
    for table, evs in streams.items():
        defn = TableDefinition.from_table(evs[0].table, 1)
        storage.write(defn.path(), defn.to_json())
        for n, i in enumerate(range(0, len(evs), events_per_file), 1):
            chunk = evs[i : i + events_per_file]
            data = b"".join(encoder.encode_txn([e]) for e in chunk)
            storage.write(TableDir("bench", table, 1).data_file(n, 20, ".csv"), data)
            top = max(top, chunk[-1].commit_ts)
    storage.write("metadata", encode_checkpoint(top))
    return top


def run_consumer(target: MysqlTarget, root: Path, batch: int, workers: int) -> float:
    from sparkcdc.consumer.runner import Consumer
    from sparkcdc.consumer.storage_consumer import StorageSource
    from sparkcdc.consumer.storage_reader import ReaderConfig
    from sparkcdc.mysql.engine import ApplyEngine
    from sparkcdc.storage.external import ExternalStorage

    source = StorageSource(ExternalStorage.from_uri(f"file://{root}"),
                           ReaderConfig("csv", "none", (("include-commit-ts", True),)), batch_rows=batch)  # fmt: skip
    consumer = Consumer(source, ApplyEngine(target, changefeed="bench", workers=workers))
    started = time.perf_counter()
    consumer.run_once()
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


def run_baseline(target: MysqlTarget, streams: dict[str, list[RowChange]], limit: int) -> tuple[float, int]:
    conn = target.connect(database="", autocommit=False)
    cols = ",".join(NAMES)
    ph = ",".join(["%s"] * len(NAMES))
    sets = ",".join(f"{c}=%s" for c in NAMES)
    done = 0
    started = time.perf_counter()
    with conn.cursor() as cur:
        for table in sorted(streams):
            for e in streams[table][:limit]:
                if e.op is RowOp.INSERT:
                    cur.execute(f"INSERT INTO bench.{table} ({cols}) VALUES ({ph})", e.after)
                elif e.op is RowOp.UPDATE:
                    assert e.after is not None and e.before is not None
                    cur.execute(f"UPDATE bench.{table} SET {sets} WHERE id=%s", (*e.after, e.before[0]))
                else:
                    assert e.before is not None
                    cur.execute(f"DELETE FROM bench.{table} WHERE id=%s", (e.before[0],))
                done += 1
                if done % 1000 == 0:
                    conn.commit()
    conn.commit()
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed, done


def _tsv(v: Any) -> str:
    if v is None:
        return "\\N"
    s = str(v)
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def load_data(
    target: MysqlTarget, rows: dict[str, list[tuple[Any, ...]]], db: str, columns: list[str], workdir: Path
) -> float:
    """Seconds ``LOAD DATA LOCAL INFILE`` takes to load each table's ``rows`` (written to TSV files under
    ``workdir`` first, untimed) into ``db``.<table> (``columns``), one transaction, one connection."""
    files = {}
    for table, table_rows in rows.items():
        p = workdir / f"{db}.{table}.tsv"
        p.write_text("".join("\t".join(_tsv(v) for v in r) + "\n" for r in table_rows))
        files[table] = p
    conn = target.connect(database="", autocommit=False, local_infile=True)
    started = time.perf_counter()
    with conn.cursor() as cur:
        for table in sorted(files):
            with conn.sending(str(files[table])):  # the connection sends no other file (mysql/local_infile.py)
                cur.execute(f"LOAD DATA LOCAL INFILE '{files[table]}' INTO TABLE {db}.{table} ({','.join(columns)})")
    conn.commit()
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed


def run_load_data(target: MysqlTarget, streams: dict[str, list[RowChange]], workdir: Path) -> tuple[float, int]:
    finals = {table: final_rows(evs) for table, evs in streams.items()}
    return load_data(target, finals, "ceiling", NAMES, workdir), sum(len(r) for r in finals.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=200_000, help="events in total (>= 200k for the report)")
    ap.add_argument("--tables", type=int, default=10, help="number of tables")
    ap.add_argument("--batch-rows", type=int, default=20_000, help="rows per applier transaction")
    ap.add_argument("--workers", type=int, default=2, help="tables applied in parallel")
    ap.add_argument("--baseline-events", type=int, default=1_000, help="row-at-a-time events per table")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    streams = generate(args.tables, args.events, args.seed)
    n_events = sum(len(v) for v in streams.values())
    ops = {op: sum(1 for v in streams.values() for e in v if e.op is op) for op in RowOp}
    with tempfile.TemporaryDirectory(prefix="bench-consumer-") as tmp:
        work = Path(tmp)
        db = MariaDB(work / "mariadb").start()
        try:
            assert db.port is not None
            target = MysqlTarget("127.0.0.1", db.port)
            tables = sorted(streams)

            # the ceiling runs last, on the warmest server (conservative for the candidate)
            reset(target, tables)
            t_base, n_base = run_baseline(target, streams, args.baseline_events)

            reset(target, tables)
            t_cand = run_candidate(target, streams, args.batch_rows, args.workers)

            reset(target, tables, "ceiling")
            t_load, n_final = run_load_data(target, streams, work)
            mismatched = same_contents(target, tables)

            write_tree(streams, work / "tree")
            reset(target, tables)
            t_full = run_consumer(target, work / "tree", args.batch_rows, args.workers)
            mismatched += [f"{t} (storage-consumer)" for t in same_contents(target, tables)]
        finally:
            db.stop()

    cand_rate = n_events / t_cand
    load_rate = n_final / t_load
    base_rate = n_base / t_base
    print(f"events: {n_events} over {args.tables} tables "
          f"(inserts {ops[RowOp.INSERT]}, updates {ops[RowOp.UPDATE]}, deletes {ops[RowOp.DELETE]}); "
          f"final rows {n_final}")  # fmt: skip
    print(f"candidate  MysqlApplier batches of {args.batch_rows}, {args.workers} workers: "
          f"{t_cand:7.2f} s  {cand_rate:10.0f} events/s")  # fmt: skip
    print(f"baseline   row-at-a-time ({n_base} events):          {t_base:7.2f} s  {base_rate:10.0f} events/s")
    print(f"ceiling    LOAD DATA LOCAL INFILE of final rows:     {t_load:7.2f} s  {load_rate:10.0f} rows/s")
    print(f"storage consumer: csv files -> decode -> apply:  {t_full:7.2f} s  {n_events / t_full:10.0f} events/s")
    print(f"ratio candidate/ceiling (rate): {cand_rate / load_rate:.2f}x   "
          f"(time for all events vs time to load the final rows: {t_load / t_cand:.2f}x)")  # fmt: skip
    print(f"ratio candidate/baseline (rate): {cand_rate / base_rate:.1f}x")
    print(f"final tables equal to the ceiling's: {'yes' if not mismatched else 'NO: ' + ','.join(mismatched)}")
    return 0 if not mismatched else 1


if __name__ == "__main__":
    sys.exit(main())
