"""``cdc kafka-consumer`` throughput: events/s applied from a private Kafka broker into a private MariaDB.

    .venv/bin/python benchmarks/kafka_consumer.py [--events 200000] [--tables 10] [--txn-rows 10]
                                                  [--watermark-rows 5000] [--protocols simple,canal-json]
                                                  [--storage-workers 4] [--rounds 1] [--profile 0]

What it measures, in one run on one MariaDB (``sparkcdc.devtools.mariadb``) and one Apache Kafka broker
(``sparkcdc.devtools.apache_kafka``), both private, on the same generated events:

* candidate: :class:`~sparkcdc.consumer.kafka_consumer.KafkaSource` in the consumer loop (``cdc kafka-consumer``),
  in-process, timed from ``run()`` (connect, assign, every fetch, decode, ordering, apply, offset commits) until
  its ``stats.applied_ts`` reaches the last commit-ts; one run per protocol of ``--protocols``, each on a topic of
  its own with 3 partitions (``simple`` JSON; ``canal-json`` with ``enable-tidb-extension``), a fresh consumer
  group and empty downstream tables;
* ceiling: ``LOAD DATA LOCAL INFILE`` of the final table contents the events converge to (``benchmarks/consumer.py``);
* the storage consumer (``StorageSource`` once, i.e. ``cdc storage-consumer --once``, ``--storage-workers``
  threads, the CLI's default 4) on the same events written as a csv storage-sink tree with ``include-commit-ts``
  (``benchmarks/consumer.py``'s ``write_tree``).

Both consumers apply in batches of ``--batch-rows`` (the CLIs' default 20000) and must leave the downstream
tables equal to the ceiling's (``cdc check``'s checksum); a mismatch fails the run (exit 1). Printed: absolute
events/s (rows/s for LOAD DATA) and the candidate's rate as a ratio to each baseline of the same run.

Why this input: the events are ``benchmarks/consumer.py``'s (seeded ~55% inserts, 30% updates, 15% deletes over
``--tables`` tables), re-stamped into transactions of ``--txn-rows`` rows of one table, round-robin over the
tables, so the partitions of the topic interleave in commit-ts order as a live upstream would. They are encoded
with our Kafka codecs the way the Kafka sink sends them, without a changefeed (which would only add its own time
to the setup): the default dispatcher's partition per table, simple BOOTSTRAP messages of every table to every
partition first, and a watermark (the sink's per-micro-batch checkpoint) to every partition after every
``--watermark-rows`` events and after the last one. The messages are produced before the clock starts: the
consumer reads a backlog (catch-up), as ``cdc storage-consumer --once`` reads a finished tree. The downstream
tables are created by SQL before each run, for every consumer alike.

``--profile N`` adds, after the measured runs, one cProfile'd run of the Kafka consumer per protocol and prints
its N most expensive functions (cumulative, then own time); the profiled runs are not in the figures.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import io
import pstats
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from consumer import generate, reset, run_consumer, run_load_data, same_contents, write_tree
from kafka_sink import _QUIET, PARTITIONS, Partitions, create_topic, produce
from sparkcdc.codec.base import message_encoder
from sparkcdc.consumer.kafka_consumer import KafkaConsumerConfig, KafkaSource
from sparkcdc.consumer.runner import Consumer
from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.model import RowChange, RowOp
from sparkcdc.model.events import split_key_updates
from sparkcdc.mysql.engine import ApplyEngine
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.sink.kafka.config import KafkaSinkConfig
from sparkcdc.sink.kafka.dispatcher import bootstrap_partitions

Streams = dict[str, list[RowChange]]


def interleave(streams: Streams, txn_rows: int) -> tuple[Streams, list[list[RowChange]]]:
    """The per-table streams re-stamped into transactions of ``txn_rows`` rows of one table, taken round-robin
    over the tables (per-table order kept, so the final rows are unchanged). Returns the re-stamped streams and
    the transactions in commit order."""
    ts = 1 << 42
    cursors = dict.fromkeys(sorted(streams), 0)
    out: Streams = {t: [] for t in streams}
    txns: list[list[RowChange]] = []
    while cursors:
        for table in list(cursors):
            start = cursors[table]
            chunk = streams[table][start : start + txn_rows]
            if not chunk:
                del cursors[table]
                continue
            ts += 1
            txn = [dataclasses.replace(e, commit_ts=ts) for e in chunk]
            out[table].extend(txn)
            txns.append(txn)
            cursors[table] = start + len(chunk)
    return out, txns


def topic_uri(bootstrap: str, topic: str, protocol: str) -> str:
    """The changefeed's sink URI, which ``cdc kafka-consumer`` takes as ``--upstream-uri``."""
    extension = "&enable-tidb-extension=true" if protocol == "canal-json" else ""
    return f"kafka://{bootstrap}/{topic}?protocol={protocol}{extension}&partition-num={PARTITIONS}"


def encode_topic(uri: str, txns: list[list[RowChange]], watermark_rows: int) -> Partitions:
    """The message values per partition that the Kafka sink sends for ``txns`` (see the module docstring)."""
    config = KafkaSinkConfig.from_uri(uri)
    codec: Any = message_encoder(config.protocol, config.codec_options())
    router = config.event_router()
    out: Partitions = {p: [] for p in range(PARTITIONS)}
    if config.bootstrap_enabled:
        seen = {}
        for txn in txns:
            seen.setdefault(txn[0].table.qualified_name, txn[0].table)
        for info in seen.values():
            value = codec.encode_bootstrap(info).value
            for p in bootstrap_partitions(config.send_bootstrap_to_all_partition, PARTITIONS):
                out[p].append(value)
    partition_of: dict[str, int] = {}
    since = 0
    for txn in txns:
        name = txn[0].table.qualified_name
        if name not in partition_of:
            partition_of[name] = router.partition_for_row(txn[0], PARTITIONS).index
        out[partition_of[name]].extend(codec.encode_row(r).value for r in split_key_updates(txn))
        since += len(txn)
        if since >= watermark_rows or txn is txns[-1]:
            since = 0
            mark = codec.encode_watermark(txn[0].commit_ts).value
            for values in out.values():
                values.append(mark)
    return out


def run_kafka(uri: str, target: MysqlTarget, group: str, last_ts: int, batch_rows: int,
              profile: cProfile.Profile | None = None, timeout: float = 900.0) -> tuple[float, int]:  # fmt: skip
    """Seconds until the Kafka consumer applied everything up to ``last_ts``, and the rows it applied.
    Raises RuntimeError when it does not get there in ``timeout``."""
    config = KafkaConsumerConfig.from_uri(uri, {}, group, changefeed=group, batch_rows=batch_rows)
    consumer = Consumer(KafkaSource(config), ApplyEngine(target, changefeed=group, workers=4))
    stop = threading.Event()

    def progress(c: Consumer) -> None:
        if c.stats.applied_ts >= last_ts:
            stop.set()

    watchdog = threading.Timer(timeout, stop.set)
    watchdog.start()
    try:
        started = time.perf_counter()
        if profile is not None:
            profile.runcall(consumer.run, stop, on_progress=progress)
        else:
            consumer.run(stop, on_progress=progress)
        elapsed = time.perf_counter() - started
    finally:
        watchdog.cancel()
        consumer.close()
    if consumer.stats.applied_ts < last_ts:
        raise RuntimeError(f"{group}: applied up to {consumer.stats.applied_ts}, not {last_ts}, in {timeout:.0f}s")
    return elapsed, consumer.stats.rows_applied


def print_profile(profile: cProfile.Profile, top: int) -> None:
    for key in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).strip_dirs().sort_stats(key).print_stats(top)
        text = out.getvalue()
        print(text[text.find("   ncalls") :].rstrip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=200_000, help="row events in total")
    ap.add_argument("--tables", type=int, default=10, help="number of tables")
    ap.add_argument("--txn-rows", type=int, default=10, help="rows per upstream transaction (one table each)")
    ap.add_argument("--watermark-rows", type=int, default=5000, help="events between watermarks")
    ap.add_argument("--protocols", default="simple,canal-json", help="comma-separated: simple, canal-json")
    ap.add_argument("--batch-rows", type=int, default=20_000, help="rows per downstream transaction (both consumers)")
    ap.add_argument("--storage-workers", type=int, default=4, help="storage consumer threads (CLI default 4)")
    ap.add_argument("--rounds", type=int, default=1, help="repeat every measurement; medians are printed")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the N top functions of a profiled run")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    protocols = [p for p in args.protocols.split(",") if p]

    streams, txns = interleave(generate(args.tables, args.events, args.seed), args.txn_rows)
    n_events = sum(len(t) for t in txns)
    last_ts = txns[-1][0].commit_ts
    ops = {op: sum(1 for t in txns for e in t if e.op is op) for op in RowOp}
    tables = sorted(streams)
    times: dict[str, list[float]] = {"load": [], "storage": [], **{p: [] for p in protocols}}
    sizes: dict[str, tuple[int, int]] = {}
    mismatched: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-kafka-consumer-") as tmp:
        work = Path(tmp)
        write_tree(streams, work / "tree")
        db = MariaDB(work / "mariadb").start()
        broker = ApacheKafka(work / "kafka").start(timeout=90)
        try:
            assert db.port is not None
            target = MysqlTarget("127.0.0.1", db.port)
            from confluent_kafka.admin import AdminClient

            admin = AdminClient({"bootstrap.servers": broker.bootstrap, **_QUIET})
            uris = {}
            for p in protocols:
                uris[p] = topic_uri(broker.bootstrap, f"bench-{p}", p)
                messages = encode_topic(uris[p], txns, args.watermark_rows)
                create_topic(admin, f"bench-{p}", PARTITIONS)
                produce(broker.bootstrap, f"bench-{p}", messages)
                sizes[p] = (sum(len(v) for v in messages.values()), sum(len(m) for v in messages.values() for m in v))
            del admin  # librdkafka would log the broker's shutdown as a connection failure

            n_final = 0
            for r in range(args.rounds):
                reset(target, tables, "ceiling")
                elapsed, n_final = run_load_data(target, streams, work)
                times["load"].append(elapsed)
                order = ["storage", *protocols]
                for name in order[r % len(order) :] + order[: r % len(order)]:
                    reset(target, tables)
                    if name == "storage":
                        elapsed = run_consumer(target, work / "tree", args.batch_rows, args.storage_workers)
                    else:
                        elapsed, applied = run_kafka(uris[name], target, f"bench-{name}-r{r}", last_ts,
                                                     args.batch_rows)  # fmt: skip
                        if applied != n_events:
                            mismatched.append(f"{name}: applied {applied} of {n_events} rows")
                    times[name].append(elapsed)
                    mismatched += [f"{t} ({name})" for t in same_contents(target, tables)]
                    print(f"round {r + 1} {name}: {elapsed:.2f} s", flush=True)
            for p in protocols if args.profile else []:
                reset(target, tables)
                profile = cProfile.Profile()
                elapsed, _ = run_kafka(uris[p], target, f"bench-{p}-profile", last_ts, args.batch_rows, profile)
                print(f"\nprofile of the Kafka consumer, {p} ({elapsed:.2f} s under cProfile):")
                print_profile(profile, args.profile)
        finally:
            broker.stop()
            db.stop()

    t = {k: statistics.median(v) for k, v in times.items()}
    load_rate = n_final / t["load"]
    storage_rate = n_events / t["storage"]
    print(f"\nevents: {n_events} over {args.tables} tables in {len(txns)} transactions of {args.txn_rows} "
          f"(inserts {ops[RowOp.INSERT]}, updates {ops[RowOp.UPDATE]}, deletes {ops[RowOp.DELETE]}); final rows "
          f"{n_final}; {PARTITIONS} partitions, a watermark every {args.watermark_rows} events; "
          f"batch-rows {args.batch_rows}; median of {args.rounds} round(s)")  # fmt: skip
    print(f"ceiling   LOAD DATA LOCAL INFILE of the final rows:   {t['load']:7.2f} s  {load_rate:9.0f} rows/s")
    print(f"baseline  storage consumer (csv tree, workers={args.storage_workers}):    "
          f"{t['storage']:7.2f} s  {storage_rate:9.0f} events/s")  # fmt: skip
    for p in protocols:
        rate = n_events / t[p]
        count, size = sizes[p]
        print(f"candidate kafka consumer {p:<10} ({count} msgs, {size / 2**20:.0f} MiB): {t[p]:7.2f} s  "
              f"{rate:9.0f} events/s   ratio to LOAD DATA {rate / load_rate:.2f}x, "
              f"to the storage consumer {rate / storage_rate:.2f}x")  # fmt: skip
    verdict = "yes" if not mismatched else "NO: " + ", ".join(mismatched)
    print(f"downstream equal to the ceiling after every run: {verdict}")
    return 0 if not mismatched else 1


if __name__ == "__main__":
    sys.exit(main())
