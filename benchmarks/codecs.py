"""Encode/decode throughput of every codec against an ``orjson`` floor, measured in one run.

    .venv/bin/python benchmarks/codecs.py            # 200k rows
    .venv/bin/python benchmarks/codecs.py -n 50000   # quicker

Input: N INSERT rows of a 10-column mixed-type table (int PK, bigint unsigned, varchar, decimal, double,
datetime(3), varbinary, text with quotes/newlines, enum, json), generated locally with a fixed seed.

Floors (measured in the same run, same rows):
* encode floor: ``orjson.dumps(row_dict)`` per row, where ``row_dict`` is the row as a plain dict of
  JSON-native values built before timing (Decimal -> str, bytes -> latin-1 str);
* decode floor: ``orjson.loads`` of those bytes per row.

Storage codecs (canal-json, csv) encode transactions of ``--txn-rows`` rows with ``encode_txn`` and decode
the resulting files with ``decode_file``; message codecs (simple json / avro) encode and decode one message
per row (the decoder first receives the bootstrap message). A codec that cannot be imported or fails is
reported as unavailable with the reason, and the run goes on.
"""

from __future__ import annotations

import argparse
import gc
import random
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


def plain_dicts(table: TableInfo, rows: Sequence[RowChange]) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    out = []
    for row in rows:
        values = [
            str(v) if isinstance(v, Decimal) else v.decode("latin-1") if isinstance(v, bytes) else v for v in row.values
        ]
        out.append(dict(zip(names, values)))
    return out


@dataclass
class Result:
    name: str
    encode_rate: float | None = None
    decode_rate: float | None = None
    note: str = ""


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    """Seconds taken by ``fn`` (GC collected before, not disabled) and the count it returns."""
    gc.collect()
    start = time.perf_counter()
    count = fn()
    return time.perf_counter() - start, count


def bench_floor(dicts: Sequence[dict[str, Any]]) -> Result:
    dumps, loads = orjson.dumps, orjson.loads

    def encode() -> int:
        for d in dicts:
            dumps(d)
        return len(dicts)

    encoded = [dumps(d) for d in dicts]

    def decode() -> int:
        for b in encoded:
            loads(b)
        return len(encoded)

    enc_s, n = timed(encode)
    dec_s, _ = timed(decode)
    return Result("orjson floor", n / enc_s, n / dec_s)


def bench_storage(protocol: str, table: TableInfo, rows: Sequence[RowChange], txn_rows: int) -> Result:
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
        enc_s, n = timed(encode)
        dec_s, decoded = timed(decode)
    except Exception as e:
        return Result(name, note=f"failed ({type(e).__name__}: {e})"[:100])
    note = "" if decoded == n else f"decoded {decoded} of {n} rows"
    return Result(name, n / enc_s, decoded / dec_s if decoded else None, note)


def bench_messages(
    label: str, protocol: str, options: dict[str, Any], table: TableInfo, rows: Sequence[RowChange]
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
        enc_s, n = timed(encode)
        try:
            for _ in decoder.decode(encoder.encode_bootstrap(table)):
                pass
        except Exception:  # protocols without bootstrap (canal-json) carry the schema in every message
            pass
        dec_s, decoded = timed(decode)
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
    args = parser.parse_args(argv)
    if args.rows <= 0 or args.txn_rows <= 0:
        parser.error("--rows and --txn-rows must be positive")

    table = make_table()
    rows = make_rows(table, args.rows, args.seed)
    results = [
        bench_storage("canal-json", table, rows, args.txn_rows),
        bench_messages("canal-json (MQ)", "canal-json", {}, table, rows),
        bench_storage("csv", table, rows, args.txn_rows),
        bench_messages("simple json", "simple", {"encoding-format": "json"}, table, rows),
        bench_messages("simple avro", "simple", {"encoding-format": "avro"}, table, rows),
    ]
    floor = bench_floor(plain_dicts(table, rows))

    print(f"{args.rows:,} rows x 10 columns, Python {sys.version.split()[0]}, orjson {orjson.__version__}")
    header = f"{'codec':<18}{'encode rows/s':>15}{'vs floor':>10}{'decode rows/s':>15}{'vs floor':>10}  note"
    print(header)
    print("-" * len(header))
    print(
        f"{floor.name:<18}{fmt_rate(floor.encode_rate):>15}{'1.000x':>10}{fmt_rate(floor.decode_rate):>15}"
        f"{'1.000x':>10}  orjson.dumps / orjson.loads of plain dicts"
    )
    for r in results:
        print(
            f"{r.name:<18}{fmt_rate(r.encode_rate):>15}{fmt_ratio(r.encode_rate, floor.encode_rate):>10}"
            f"{fmt_rate(r.decode_rate):>15}{fmt_ratio(r.decode_rate, floor.decode_rate):>10}  {r.note}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
