"""Encode/decode throughput of every codec against an ``orjson`` floor, measured in one run.

    .venv/bin/python benchmarks/codecs.py            # 200k rows
    .venv/bin/python benchmarks/codecs.py -n 50000   # quicker

Input: N INSERT rows of a 10-column mixed-type table (int PK, bigint unsigned, varchar, decimal, double,
datetime(3), varbinary, text with quotes/newlines, enum, json), generated locally with a fixed seed.

Floors (measured in the same run, same rows; "vs floor" columns use the first):
* ``orjson floor``: ``orjson.dumps(row_dict, default=…)`` per row, ``row_dict`` being the row as a plain
  dict ``{column: value}`` of its own values (built before timing); ``default`` renders the two types orjson
  lacks (Decimal -> str, bytes -> latin-1 str). Decode: ``orjson.loads`` of those bytes.
* ``orjson native``: the same with every value already JSON-native (no ``default`` calls): the raw cost of
  serialising the row, a stricter bar, printed for reference.

Storage codecs (canal-json, csv) encode transactions of ``--txn-rows`` rows with ``encode_txn`` and decode
the resulting files with ``decode_file``; message codecs (simple json / avro) encode and decode one message
per row (the decoder first receives the bootstrap message). A codec that cannot be imported or fails is
reported as unavailable with the reason, and the run goes on.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparkcdc.codec import base
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys

COMMIT_TS = 450253245302439944


def make_table() -> TableInfo:
    columns = (
        ColumnInfo("id", "int", nullable=False),
        ColumnInfo("big_u", "bigint", unsigned=True),
        ColumnInfo("name", "varchar", length=64),
        ColumnInfo("amount", "decimal", length=12, decimal=2),
        ColumnInfo("score", "double"),
        ColumnInfo("created", "datetime", decimal=3),
        ColumnInfo("payload", "varbinary", length=64),
        ColumnInfo("note", "text"),
        ColumnInfo("status", "enum", elements=("new", "paid", "shipped", "closed")),
        ColumnInfo("doc", "json"),
    )
    indexes = (IndexInfo("PRIMARY", ("id",), primary=True),)
    return TableInfo("bench", "orders", 101, with_handle_keys(columns, indexes), indexes, version=COMMIT_TS - 1000)


def make_rows(table: TableInfo, n: int, seed: int = 7) -> list[RowChange]:
    rnd = random.Random(seed)
    words = ["alpha", "beta", 'quo"te', "new\nline", "tab\there", "ümlaut", "emoji 🚀", "<tag>&amp;", "back\\slash"]
    rows = []
    for i in range(n):
        after = (
            i + 1,
            rnd.choice((rnd.randrange(2**64), rnd.randrange(1000))),
            f"customer-{rnd.randrange(10**6)}",
            Decimal(rnd.randrange(-(10**8), 10**8)).scaleb(-2),
            rnd.uniform(-1e6, 1e6),
            f"2024-{rnd.randrange(1, 13):02d}-{rnd.randrange(1, 29):02d} "
            f"{rnd.randrange(24):02d}:{rnd.randrange(60):02d}:{rnd.randrange(60):02d}.{rnd.randrange(1000):03d}",
            rnd.randbytes(rnd.randrange(4, 24)),
            " ".join(rnd.choice(words) for _ in range(rnd.randrange(2, 8))),
            rnd.randrange(1, 5),
            orjson.dumps({"k": rnd.randrange(1000), "tags": ["a", "b"]}).decode(),
        )
        rows.append(RowChange(COMMIT_TS + i // 100, table, RowOp.INSERT, None, after))
    return rows


def row_dicts(table: TableInfo, rows: Sequence[RowChange]) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    return [dict(zip(names, row.values)) for row in rows]


def native_dicts(table: TableInfo, rows: Sequence[RowChange]) -> list[dict[str, Any]]:
    return [{k: _native(v) for k, v in d.items()} for d in row_dicts(table, rows)]


def _native(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value


@dataclass
class Result:
    name: str
    encode_rate: float | None = None
    decode_rate: float | None = None
    note: str = ""


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    """CPU seconds of this process taken by ``fn`` (GC collected before, not disabled) and its count.

    CPU time rather than wall time: the benchmark machines are shared, and other processes' load would
    otherwise swing the figures by several times between the floor and a codec.
    """
    gc.collect()
    start = time.process_time()
    count = fn()
    return time.process_time() - start, count


def bench_floor(name: str, dicts: Sequence[dict[str, Any]], repeat: int) -> Result:
    dumps, loads = orjson.dumps, orjson.loads

    def encode() -> int:
        for d in dicts:
            dumps(d, default=_native)
        return len(dicts)

    encoded = [dumps(d, default=_native) for d in dicts]

    def decode() -> int:
        for b in encoded:
            loads(b)
        return len(encoded)

    enc_s, n = best_of(repeat, encode)
    dec_s, _ = best_of(repeat, decode)
    return Result(name, n / enc_s, n / dec_s)


def bench_from_rows(table: TableInfo, rows: Sequence[RowChange], repeat: int) -> Result:
    """Reference: the dict built from the RowChange inside the timed loop (what a naive encoder does)."""
    names = [c.name for c in table.columns]
    dumps = orjson.dumps

    def encode() -> int:
        for row in rows:
            dumps(dict(zip(names, row.values)), default=_native)
        return len(rows)

    enc_s, n = best_of(repeat, encode)
    return Result("orjson from row", n / enc_s, None, "dict(zip(names, row.values)) + dumps, per row (reference)")


def best_of(repeat: int, fn: Callable[[], int]) -> tuple[float, int]:
    runs = [timed(fn) for _ in range(repeat)]
    return min(runs)


def bench_storage(protocol: str, table: TableInfo, rows: Sequence[RowChange], txn_rows: int, repeat: int) -> Result:
    name = protocol
    try:
        encoder = base.txn_encoder(protocol)
        decoder = base.file_decoder(protocol)
    except Exception as e:  # the codec may not exist yet: report, do not crash
        return Result(name, note=f"unavailable ({type(e).__name__}: {e})"[:100])
    batches = [rows[i : i + txn_rows] for i in range(0, len(rows), txn_rows)]
    files: list[bytes] = []

    def encode() -> int:
        files.clear()
        for batch in batches:
            files.append(encoder.file_header(table) + encoder.encode_txn(batch))
        return len(rows)

    def decode() -> int:
        count = 0
        for data in files:
            for _ in decoder.decode_file(data, table, source="bench"):
                count += 1
        return count

    try:
        enc_s, n = best_of(repeat, encode)
        dec_s, decoded = best_of(repeat, decode)
    except Exception as e:
        return Result(name, note=f"failed ({type(e).__name__}: {e})"[:100])
    note = "" if decoded == n else f"decoded {decoded} of {n} rows"
    return Result(name, n / enc_s, decoded / dec_s if decoded else None, note)


def bench_messages(
    label: str, protocol: str, options: dict[str, Any], table: TableInfo, rows: Sequence[RowChange], repeat: int
) -> Result:
    try:
        encoder = base.message_encoder(protocol, options)
        decoder = base.message_decoder(protocol, options)
    except Exception as e:
        return Result(label, note=f"unavailable ({type(e).__name__}: {e})"[:100])
    messages: list[base.Message] = []

    def encode() -> int:
        messages.clear()
        for row in rows:
            messages.append(encoder.encode_row(row))
        return len(rows)

    def decode() -> int:
        count = 0
        for message in messages:
            for _ in decoder.decode(message):
                count += 1
        return count

    try:
        enc_s, n = best_of(repeat, encode)
        try:
            for _ in decoder.decode(encoder.encode_bootstrap(table)):
                pass
        except Exception:  # protocols without bootstrap (canal-json) carry the schema in every message
            pass
        dec_s, decoded = best_of(repeat, decode)
    except Exception as e:
        return Result(label, note=f"failed ({type(e).__name__}: {e})"[:100])
    note = "" if decoded == n else f"decoded {decoded} of {n} rows"
    return Result(label, n / enc_s, decoded / dec_s if decoded else None, note)


def fmt_rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:,.0f}"


def fmt_ratio(rate: float | None, floor: float | None) -> str:
    return "-" if rate is None or not floor else f"{rate / floor:.3f}x"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--rows", type=int, default=200_000, help="rows to generate (default 200000)")
    parser.add_argument("--txn-rows", type=int, default=100, help="rows per storage transaction (default 100)")
    parser.add_argument("--seed", type=int, default=7, help="random seed for the generated rows")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per measurement, best kept (default 2)")
    args = parser.parse_args(argv)
    if args.rows <= 0 or args.txn_rows <= 0 or args.repeat <= 0:
        parser.error("--rows, --txn-rows and --repeat must be positive")

    table = make_table()
    rows = make_rows(table, args.rows, args.seed)
    gc.collect()
    gc.freeze()  # the generated input is permanent: keep the collector from re-scanning it in every run
    r = args.repeat
    plain = row_dicts(table, rows)
    codecs: list[tuple[str, Callable[[], Result]]] = [
        ("canal-json", lambda: bench_storage("canal-json", table, rows, args.txn_rows, r)),
        ("canal-json (MQ)", lambda: bench_messages("canal-json (MQ)", "canal-json", {}, table, rows, r)),
        ("csv", lambda: bench_storage("csv", table, rows, args.txn_rows, r)),
        ("simple json", lambda: bench_messages("simple json", "simple", {"encoding-format": "json"}, table, rows, r)),
        ("simple avro", lambda: bench_messages("simple avro", "simple", {"encoding-format": "avro"}, table, rows, r)),
    ]
    # The floor is measured right before each codec and each codec's ratio uses its own floor run, so load
    # changes on a shared machine move both sides of a ratio together.
    results: list[tuple[Result, Result]] = []
    for _, run in codecs:
        floor = bench_floor("orjson floor", plain, r)
        results.append((run(), floor))
    native = bench_floor("orjson native", native_dicts(table, rows), r)
    from_rows = bench_from_rows(table, rows, r)
    floors = [f for _, f in results]
    median = Result(
        "orjson floor",
        statistics.median(f.encode_rate or 0.0 for f in floors),
        statistics.median(f.decode_rate or 0.0 for f in floors),
        "orjson.dumps(row dict, default=…) / orjson.loads; median of the per-codec floor runs",
    )

    print(
        f"{args.rows:,} rows x 10 columns, best of {r} (CPU time), Python {sys.version.split()[0]}, "
        f"orjson {orjson.__version__}"
    )
    header = f"{'codec':<18}{'encode rows/s':>15}{'vs floor':>10}{'decode rows/s':>15}{'vs floor':>10}  note"
    print(header)
    print("-" * len(header))
    native.note = "JSON-native dicts, no default= calls (reference)"
    for res, floor in [(median, median), (native, median), (from_rows, median), *results]:
        print(
            f"{res.name:<18}{fmt_rate(res.encode_rate):>15}{fmt_ratio(res.encode_rate, floor.encode_rate):>10}"
            f"{fmt_rate(res.decode_rate):>15}{fmt_ratio(res.decode_rate, floor.decode_rate):>10}  {res.note}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
