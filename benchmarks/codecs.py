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

Native kernels (``sparkcdc._native``, when built): the same rows as binlog rows events (one per transaction), each
kernel (canal-json lines and messages, csv, simple json, MySQL statement values) against its Python reference in
the same run: the capture's Python decoder plus the codec's Python encoder on the same events; rows/s of both
and the per-row ratio (target >= 8x), interleaved rounds, best CPU time of each side.

Storage codecs (canal-json, csv) encode transactions of ``--txn-rows`` rows with ``encode_txn`` and decode
the resulting files with ``decode_file``; message codecs (simple json / avro) encode and decode one message
per row (the decoder first receives the bootstrap message). A codec that cannot be imported or fails is
reported as unavailable with the reason, and the run goes on.

Fairness (both sides of every ratio are measured the same way):
* same work shape: the floor encodes the same rows in the same ``--txn-rows`` transactions, joins each
  transaction's lines into one file (``b"\\n".join``) and keeps every file, exactly like a storage codec
  (keeping or dropping outputs changes malloc behaviour a lot); its decode splits those files into lines
  and ``orjson.loads`` each, as ``decode_file`` has to;
* noise: the machine is shared, so time is CPU time, and floor and codec runs are interleaved round by
  round (``--repeat`` rounds, order alternating) and the best run of each side is kept, so a load spike
  hits one run, not one side;
* warm-up: every side runs one untimed transaction first (plans compiled, caches filled);
* GC: all inputs (rows and the floor's dicts) are built, then frozen before anything is timed, and a
  collection runs before every timed run; the collector stays enabled for both sides.
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
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # tests.unit.native.binlog_rows builds the events

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


Side = tuple[Callable[[], int], Callable[[], int]]  # (encode, decode); each returns the rows it handled


def interleaved(repeat: int, floor: Side, codec: Side) -> tuple[Result, Result]:
    """Best CPU time of each side over ``repeat`` rounds, floor and codec alternating within each round.

    Encodes are all timed before decodes (a decode reads the files the last encode kept). Returns
    (floor, codec) results with rates in rows/s.
    """
    best: list[list[tuple[float, int]]] = [[], [], [], []]  # floor enc, codec enc, floor dec, codec dec
    for phase in (0, 1):  # 0: encode, 1: decode
        for r in range(repeat):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for side in order:
                fn = (floor, codec)[side][phase]
                best[phase * 2 + side].append(timed(fn))
    picked = [min(runs) for runs in best]
    rates = [n / s if s > 0 and n else None for s, n in picked]
    note = "" if picked[3][1] == picked[1][1] else f"decoded {picked[3][1]} of {picked[1][1]} rows"
    return Result("orjson floor", rates[0], rates[2]), Result("", rates[1], rates[3], note)


def floor_side(dict_batches: Sequence[Sequence[dict[str, Any]]], default: Callable[[Any], Any] | None) -> Side:
    """The orjson floor in the codecs' shape: one joined file per transaction, every file kept."""
    dumps, loads = orjson.dumps, orjson.loads
    files: list[bytes] = []
    join = b"\n".join

    def encode() -> int:
        files.clear()
        count = 0
        for batch in dict_batches:
            files.append(join([dumps(d, default=default) for d in batch]))
            count += len(batch)
        return count

    def decode() -> int:
        count = 0
        for data in files:
            for line in data.split(b"\n"):
                loads(line)
                count += 1
        return count

    encode()  # warm-up, and files for a decode-only use
    return encode, decode


def bench_floor(name: str, dict_batches: Sequence[Sequence[dict[str, Any]]], repeat: int, native: bool) -> Result:
    """A floor alone (reference lines), best of ``repeat`` runs."""
    enc, dec = floor_side(dict_batches, None if native else _native)
    enc_s, n = min(timed(enc) for _ in range(repeat))
    dec_s, _ = min(timed(dec) for _ in range(repeat))
    return Result(name, n / enc_s, n / dec_s)


def bench_from_rows(table: TableInfo, batches: Sequence[Sequence[RowChange]], repeat: int) -> Result:
    """Reference: the dict built from the RowChange inside the timed loop (what a naive encoder does)."""
    names = [c.name for c in table.columns]
    dumps = orjson.dumps
    files: list[bytes] = []

    def encode() -> int:
        files.clear()
        for batch in batches:
            files.append(b"\n".join([dumps(dict(zip(names, row.values)), default=_native) for row in batch]))
        return sum(map(len, batches))

    enc_s, n = min(timed(encode) for _ in range(repeat))
    return Result("orjson from row", n / enc_s, None, "dict(zip(names, row.values)) + dumps, per row (reference)")


def storage_side(protocol: str, table: TableInfo, batches: Sequence[Sequence[RowChange]]) -> Side:
    encoder = base.txn_encoder(protocol)
    decoder = base.file_decoder(protocol)
    files: list[bytes] = []

    def encode() -> int:
        files.clear()
        count = 0
        for batch in batches:
            files.append(encoder.file_header(table) + encoder.encode_txn(batch))
            count += len(batch)
        return count

    def decode() -> int:
        count = 0
        for data in files:
            for _ in decoder.decode_file(data, table, source="bench"):
                count += 1
        return count

    encoder.encode_txn(batches[0])  # warm-up: per-table plans are built on first use
    for _ in decoder.decode_file(encoder.file_header(table) + encoder.encode_txn(batches[0]), table, source="bench"):
        pass
    return encode, decode


def message_side(
    protocol: str, options: dict[str, Any], table: TableInfo, batches: Sequence[Sequence[RowChange]]
) -> Side:
    encoder = base.message_encoder(protocol, options)
    decoder = base.message_decoder(protocol, options)
    messages: list[base.Message] = []
    rows = [row for batch in batches for row in batch]

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
        for _ in decoder.decode(encoder.encode_bootstrap(table)):
            pass
    except Exception:  # protocols without bootstrap (canal-json) carry the schema in every message
        pass
    for _ in decoder.decode(encoder.encode_row(rows[0])):  # warm-up
        pass
    return encode, decode


def bench_codec(label: str, make: Callable[[], Side], floor: Side, repeat: int) -> tuple[Result, Result]:
    """(codec, its interleaved floor); a codec that cannot be built or fails is reported, not raised."""
    try:
        codec = make()
    except Exception as e:  # the codec may not exist yet: report, do not crash
        return Result(label, note=f"unavailable ({type(e).__name__}: {e})"[:100]), Result("orjson floor")
    try:
        floor_res, res = interleaved(repeat, floor, codec)
    except Exception as e:
        return Result(label, note=f"failed ({type(e).__name__}: {e})"[:100]), Result("orjson floor")
    res.name = label
    return res, floor_res


def kernel_sides(table: TableInfo, batches: Sequence[Sequence[RowChange]]) -> list[tuple[str, Side, Side]]:
    """(kernel, python side, native side) per native kernel; a side returns the rows it encoded."""
    from tests.unit.native.binlog_rows import rows_events

    from sparkcdc.codec.canal_json.encoder import CanalJsonMessageEncoder, CanalJsonTxnEncoder
    from sparkcdc.codec.csv.encoder import CsvEncoder
    from sparkcdc.codec.simple.encoder import SimpleEncoder
    from sparkcdc.sink.mysql.config import MysqlSinkConfig
    from sparkcdc.sink.mysql.encoder import MysqlEncoder, render_rows

    txns = [rows_events(table, batch, per_event=len(batch)) for batch in batches]
    kept: list[Any] = []

    def python(encode: Callable[[list[RowChange]], Any]) -> Callable[[], int]:
        def run() -> int:
            kept.clear()
            n = 0
            for events in txns:
                rows = [r for e in events for r in e.rows()]
                kept.append(encode(rows))
                n += len(rows)
            return n

        return run

    def native(encode: Callable[[list[Any]], Any], count: Callable[[Any], int]) -> Callable[[], int]:
        def run() -> int:
            kept.clear()
            n = 0
            for events in txns:
                out = encode(events)
                if out is None:
                    raise RuntimeError("the kernel declined the benchmark rows")
                kept.append(out)
                n += count(out)
            return n

        return run

    canal = CanalJsonTxnEncoder()
    mq = CanalJsonMessageEncoder()
    csv = CsvEncoder()
    simple = SimpleEncoder()
    mysql = MysqlEncoder(MysqlSinkConfig.from_uri("mysql://root@127.0.0.1:3306/"))
    pair = len
    return [
        ("canal-json", (python(canal.encode_txn), python(canal.encode_txn)),
         (native(lambda e: canal.encode_events(e, True), lambda o: o[1]),) * 2),
        ("canal-json (MQ)", (python(mq.encode_rows),) * 2, (native(lambda e: mq.encode_events(e, True), pair),) * 2),
        ("csv", (python(csv.encode_txn),) * 2, (native(lambda e: csv.encode_events(e, True), lambda o: o[1]),) * 2),
        ("simple json", (python(simple.encode_rows),) * 2,
         (native(lambda e: simple.encode_events(e, True), pair),) * 2),
        ("mysql values", (python(render_rows),) * 2,
         (native(lambda e: mysql._kernels.encode(e, 0), pair),) * 2),
    ]  # fmt: skip


def bench_kernels(table: TableInfo, batches: Sequence[Sequence[RowChange]], repeat: int) -> list[str]:
    """One line per native kernel: Python and native rows/s (CPU time, interleaved, best of ``repeat``)."""
    from sparkcdc.codec import native

    if not native.available():
        return ["native kernels: unavailable (sparkcdc._native is not built: pip install -e .)"]
    lines = []
    for name, py_side, native_side in kernel_sides(table, batches):
        try:
            py, nat = interleaved(repeat, py_side, native_side)
        except Exception as e:
            lines.append(f"{name:<18}failed ({type(e).__name__}: {e})"[:120])
            continue
        ratio = (nat.encode_rate or 0) / (py.encode_rate or 1)
        lines.append(f"{name:<18}{fmt_rate(py.encode_rate):>15}{fmt_rate(nat.encode_rate):>15}{ratio:>9.2f}x")
    return lines


def fmt_rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:,.0f}"


def fmt_ratio(rate: float | None, floor: float | None) -> str:
    return "-" if rate is None or not floor else f"{rate / floor:.3f}x"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--rows", type=int, default=200_000, help="rows to generate (default 200000)")
    parser.add_argument("--txn-rows", type=int, default=100, help="rows per storage transaction (default 100)")
    parser.add_argument("--seed", type=int, default=7, help="random seed for the generated rows")
    parser.add_argument(
        "--repeat", type=int, default=3, help="interleaved timed rounds per measurement, best kept (default 3)"
    )
    args = parser.parse_args(argv)
    if args.rows <= 0 or args.txn_rows <= 0 or args.repeat <= 0:
        parser.error("--rows, --txn-rows and --repeat must be positive")

    table = make_table()
    rows = make_rows(table, args.rows, args.seed)
    step = args.txn_rows
    batches = [rows[i : i + step] for i in range(0, len(rows), step)]
    plain = row_dicts(table, rows)
    dict_batches = [plain[i : i + step] for i in range(0, len(plain), step)]
    native_batches = [[{k: _native(v) for k, v in d.items()} for d in b] for b in dict_batches]
    gc.collect()
    gc.freeze()  # the generated input is permanent: keep the collector from re-scanning it in every run
    r = args.repeat
    floor = floor_side(dict_batches, _native)
    codecs: list[tuple[str, Callable[[], Side]]] = [
        ("canal-json", lambda: storage_side("canal-json", table, batches)),
        ("canal-json (MQ)", lambda: message_side("canal-json", {}, table, batches)),
        ("csv", lambda: storage_side("csv", table, batches)),
        ("simple json", lambda: message_side("simple", {"encoding-format": "json"}, table, batches)),
        ("simple avro", lambda: message_side("simple", {"encoding-format": "avro"}, table, batches)),
    ]
    # Each codec's ratio uses the floor runs interleaved with its own runs, so load changes on a shared
    # machine move both sides of a ratio together.
    results = [bench_codec(label, make, floor, r) for label, make in codecs]
    native = bench_floor("orjson native", native_batches, r, native=True)
    from_rows = bench_from_rows(table, batches, r)
    floors = [f for _, f in results if f.encode_rate]
    median = Result(
        "orjson floor",
        statistics.median(f.encode_rate or 0.0 for f in floors) if floors else None,
        statistics.median(f.decode_rate or 0.0 for f in floors) if floors else None,
        "orjson.dumps(row dict, default=…) / orjson.loads; median of the per-codec floor runs",
    )

    print(
        f"{args.rows:,} rows x 10 columns, {step} rows per transaction, best of {r} interleaved rounds "
        f"(CPU time), Python {sys.version.split()[0]}, orjson {orjson.__version__}"
    )
    header = f"{'codec':<18}{'encode rows/s':>15}{'vs floor':>10}{'decode rows/s':>15}{'vs floor':>10}  note"
    print(header)
    print("-" * len(header))
    native.note = "JSON-native dicts, no default= calls (reference)"
    for res, ref in [(median, median), (native, median), (from_rows, median), *results]:
        print(
            f"{res.name:<18}{fmt_rate(res.encode_rate):>15}{fmt_ratio(res.encode_rate, ref.encode_rate):>10}"
            f"{fmt_rate(res.decode_rate):>15}{fmt_ratio(res.decode_rate, ref.decode_rate):>10}  {res.note}"
        )
    print()
    print("native kernels: binlog rows events -> payloads, vs the Python decoder + encoder on the same events")
    header = f"{'kernel':<18}{'python rows/s':>15}{'native rows/s':>15}{'per row':>10}"
    print(header)
    print("-" * len(header))
    for line in bench_kernels(table, batches, r):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
