"""Kafka sink benchmark: private MariaDB -> puller -> Spark query -> Kafka sink on a private Apache Kafka broker.

    .venv/bin/python benchmarks/kafka_sink.py [--rows 500000] [--tables 4] [--txn-rows 1000] [--master 'local[2]']
                                              [--rounds 2] [--protocols canal-json,simple,avro] [--producer-runs 3]

Reports, in one run (generated input, same machine, same workload for each configuration, one Spark session):

* the changefeed's rows/s into the broker in *catch-up* mode (``benchmarks/changefeed.py``): ``--rows`` rows over
  ``--tables`` tables (INSERT ... SELECT transactions of ``--txn-rows``) committed and captured while the
  changefeed is stopped, then the query restarted and timed until its checkpoint (``progress.json``: a Kafka
  changefeed has no metadata file) covers the last commit. Every protocol of ``--protocols`` writes a topic of its
  own with 3 partitions (``canal-json`` with ``enable-tidb-extension``, so watermarks are sent too; ``avro`` is
  TiCDC's ``protocol=avro`` with a private schema registry, ``sparkcdc.devtools.schema_registry``, whose
  compatibility rule is NONE: every table's value schema is registered under the one topic's subject);
* against a plain confluent-kafka ``Producer`` (idempotent, ``acks=all``, one flush at the end) sending exactly
  the messages that changefeed produced (read back from its topics with their keys: rows, watermarks) to a fresh
  topic with the same partitions from this process. That is the floor of the broker and client the sink cannot
  beat; the sink adds reading the relay, decoding, encoding (for avro, registering its schemas) and Spark's
  batches, in a pipeline over the same cores. The producer runs ``--producer-runs`` times (a fresh topic each)
  and its median counts. Target: the changefeed at >= 0.5x the producer;
* against the storage sink (``file://...?protocol=canal-json``, the configuration of ``benchmarks/changefeed.py``)
  on the same workload: the same pipeline writing files. Target: the Kafka sink at >= 1.0x the storage sink.

Also printed per run: the CPU per row of the catch-up (this process tree: Spark, its workers, the puller; not
MariaDB nor the broker), steadier than rows/s on a shared machine; per Kafka run, messages per partition (the
default dispatcher sends a table's rows to one partition) and how many of the query's writer tasks the topic's
partitions were routed to.

Each round runs every configuration once on a fresh database, the order rotated per round so no configuration
always gets the coldest workers; with ``--rounds`` > 1 the median of the ratios is reported. A micro-batch ends a
backlog only at a trigger (0.5 s for Kafka; the storage sink's flush-interval is 2 s), so small ``--rows`` make
the ratios noisy. The puller runs as a thread of this process, as in ``cdc server``; MariaDB and the puller are
idle while a catch-up is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from changefeed import Bench, progress_checkpoint
from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.schema_registry import SchemaRegistry
from sparkcdc.pipeline.query import build_session
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.sink.kafka.committer import TOPICS_FILE
from sparkcdc.sink.kafka.encoder import route_of

PARTITIONS = 3
# librdkafka logs every connection it closes at INFO; the benchmark's output is its figures.
_QUIET = {"log_level": 3}
Partitions = dict[int, list[tuple[bytes | None, bytes]]]  # (key, value) of each message


class KafkaFeed:
    """One Kafka changefeed's sink URI and its checkpoint reader (``progress.json`` of the spec it is given)."""

    def __init__(self, bootstrap: str, topic: str, protocol: str, registry: str = "") -> None:
        self.topic = topic
        extension = "&enable-tidb-extension=true" if protocol == "canal-json" else ""
        extension += f"&schema-registry={registry}" if protocol == "avro" else ""
        self.uri = f"kafka://{bootstrap}/{topic}?protocol={protocol}{extension}&partition-num={PARTITIONS}"
        self.spec: FeedSpec | None = None

    def checkpoint(self, spec: FeedSpec, sink: Path) -> Callable[[], int]:
        self.spec = spec
        return progress_checkpoint(spec, sink)

    def topics(self) -> list[str]:
        """The topics the changefeed wrote (the sink records them in its state dir) and its default topic."""
        if self.spec is None:
            raise RuntimeError("the changefeed has not run")
        written = json.loads((Path(self.spec.state_dir) / TOPICS_FILE).read_text())
        return sorted({self.topic, *written})


def read_topic(bootstrap: str, topic: str) -> Partitions:
    """Every message (key, value) of ``topic`` by partition, in offset order."""
    from sparkcdc.devtools.kafka import read_topic as read_messages

    return {p: [(m.key, m.value) for m in ms] for p, ms in read_messages(bootstrap, topic, timeout=300.0).items()}


def create_topic(admin: Any, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=10)[topic].result()
    deadline = time.monotonic() + 10
    while not admin.list_topics(timeout=10).topics.get(topic, None):
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {topic} created but not visible")
        time.sleep(0.05)


def produce(bootstrap: str, topic: str, messages: Partitions) -> float:
    """Seconds a plain idempotent ``acks=all`` producer takes to send ``messages`` (partition by partition, as
    read) to ``topic`` and flush; raises RuntimeError unless every message reads back."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", **_QUIET})
    producer.list_topics(topic, timeout=10)  # connected, metadata known: time the sending only
    t0 = time.perf_counter()
    for partition, values in messages.items():
        for key, value in values:
            while True:
                try:
                    producer.produce(topic, value, key, partition=partition)
                    break
                except BufferError:  # the client's queue is full: serve deliveries
                    producer.poll(0.05)
    left = producer.flush(120)
    elapsed = time.perf_counter() - t0
    back = read_topic(bootstrap, topic)
    if left or {p: len(v) for p, v in back.items()} != {p: len(v) for p, v in messages.items()}:
        raise RuntimeError(f"producer baseline: {left} messages not flushed or the topic {topic} lacks messages")
    return elapsed


def writer_tasks(topic: str, partitions: int, writers: int) -> int:
    """How many writer tasks the partitions of ``topic`` are sent from: the query gives the payloads of a topic
    partition (route ``route_of``) to writer task ``route % writers`` (``sparkcdc.pipeline.query.writer_route``)."""
    return len({route_of(topic, p) % writers for p in range(partitions)})


def run_kafka(bench: Bench, spark: Any, broker: ApacheKafka, protocol: str, name: str,
              registry: str) -> dict[str, Any]:  # fmt: skip
    """Catch-up rows/s of a Kafka changefeed with ``protocol``, then the producer baseline on its messages."""
    feed = KafkaFeed(broker.bootstrap, f"bench-{name}", protocol, registry)
    rate = bench.catch_up(spark, name, feed.uri, feed.checkpoint)
    cpu = bench.catch_up_cpu
    assert feed.spec is not None
    writers = min(feed.spec.sink_config().worker_count, spark.sparkContext.defaultParallelism)
    topics = feed.topics()
    if len(topics) != 1:
        raise RuntimeError(f"expected one topic, the changefeed wrote {topics}")
    messages = read_topic(broker.bootstrap, topics[0])
    count = sum(len(v) for v in messages.values())
    size = sum(len(k or b"") + len(m) for v in messages.values() for k, m in v)
    if count < bench.args.rows:
        raise RuntimeError(f"topic {topics[0]}: {count} messages for {bench.args.rows} rows")
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap, **_QUIET})
    runs = []
    for i in range(bench.args.producer_runs):
        baseline = f"{topics[0]}-producer{i}"
        create_topic(admin, baseline, len(messages))
        runs.append(produce(broker.bootstrap, baseline, messages))
        for f in admin.delete_topics([baseline], request_timeout=30).values():
            f.result()
    for f in admin.delete_topics([topics[0]], request_timeout=30).values():
        f.result()
    seconds = statistics.median(runs)
    return {"rate": rate, "cpu": cpu, "producer": bench.args.rows / seconds, "messages": count, "bytes": size,
            "producer_msgs": count / seconds, "per_partition": [len(messages[p]) for p in sorted(messages)],
            "writers": f"{writer_tasks(topics[0], len(messages), writers)} of {writers}"}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--txn-rows", type=int, default=1000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--protocols", default="canal-json,simple,avro", help="comma-separated Kafka sink protocols")
    ap.add_argument("--producer-runs", type=int, default=3, help="producer baseline runs per Kafka run (median)")
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    protocols = [p for p in args.protocols.split(",") if p]
    configs = ["storage", *protocols]
    results: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    with tempfile.TemporaryDirectory(prefix="sparkcdc-bench-") as tmp:
        bench = Bench(Path(tmp), args)
        broker = ApacheKafka(Path(tmp) / "kafka").start(timeout=90)
        registry = SchemaRegistry(Path(tmp) / "registry").start() if "avro" in protocols else None
        if registry is not None:  # the tables share a topic, so its value subject holds every table's schema
            import httpx

            httpx.put(f"{registry.url}/config", json={"compatibility": "NONE"}, timeout=10).raise_for_status()
        spark = build_session(args.master, "sparkcdc-bench")
        try:
            for r in range(args.rounds):
                for c in configs[r % len(configs) :] + configs[: r % len(configs)]:
                    name = f"{c.replace('-', '_')}_r{r}"
                    if c == "storage":
                        results[c].append({"rate": bench.catch_up(spark, name), "cpu": bench.catch_up_cpu})
                    else:
                        results[c].append(run_kafka(bench, spark, broker, c, name, registry.url if registry else ""))
                    got = results[c][-1]
                    extra = (f"; {got['messages']:,} messages ({got['bytes'] / 2**20:,.0f} MiB, per partition "
                             f"{got['per_partition']}, sent from {got['writers']} writer tasks); producer alone "
                             f"{got['producer_msgs']:,.0f} msg/s" if "producer" in got else "")  # fmt: skip
                    print(f"round {r + 1} {c}: catch-up {got['rate']:,.0f} rows/s, CPU "
                          f"{got['cpu'] / args.rows * 1e6:.1f} us/row{extra}", flush=True)  # fmt: skip
        finally:
            spark.stop()
            broker.stop()
            if registry is not None:
                registry.stop()
            bench.close()
    storage = results["storage"]
    print(f"{args.rows} rows, {args.tables} tables, {args.txn_rows} rows/txn, {args.master}, catch-up mode, "
          f"{PARTITIONS} partitions; median of {args.rounds} round(s)")  # fmt: skip
    print(f"storage sink (file://, canal-json): {statistics.median(x['rate'] for x in storage):,.0f} rows/s")
    for p in protocols:
        runs = results[p]
        rate = statistics.median(x["rate"] for x in runs)
        vs_producer = statistics.median(x["rate"] / x["producer"] for x in runs)
        vs_storage = statistics.median(x["rate"] / s["rate"] for x, s in zip(runs, storage))
        print(f"kafka sink {p}: {rate:,.0f} rows/s; ratio to the plain producer on its messages "
              f"({statistics.median(x['producer'] for x in runs):,.0f} rows/s) {vs_producer:.2f}x (target >= 0.5x); "
              f"ratio to the storage sink {vs_storage:.2f}x (target >= 1.0x)", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
