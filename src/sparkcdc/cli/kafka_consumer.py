"""``cdc kafka-consumer``: apply a TiCDC Kafka topic to MySQL/MariaDB (TiCDC's flags, plus ours)."""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from types import FrameType

import click

from sparkcdc.cli.consumer import load_toml, setup_logging
from sparkcdc.errors import SparkcdcError

log = logging.getLogger(__name__)


@click.command("kafka-consumer")
@click.option("--upstream-uri", required=True,
              help="The changefeed's Kafka sink URI: kafka://host:9092/topic?protocol=simple")  # fmt: skip
@click.option("--downstream-uri", required=True, help="Downstream MySQL/MariaDB/TiDB: mysql://user:pass@host:port/.")
@click.option("--config", "config_path", default="", help="The changefeed's TOML ([sink] codec, large messages).")
@click.option("--consumer-group-id", "group_id", default="ticdc_kafka_consumer", show_default=True,
              help="Kafka consumer group whose offsets record what was applied.")  # fmt: skip
@click.option("--log-file", default="", help="Write logs to this file instead of stderr.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warn", "error"], case_sensitive=False),
              default="info", show_default=True, help="Log level of the consumer.")  # fmt: skip
@click.option("--tz", "--timezone", "timezone", default="System", show_default=True,
              help="Session time zone for TIMESTAMP values: System, UTC or +HH:MM (the producer's --tz).")  # fmt: skip
@click.option("--batch-rows", type=click.IntRange(1, 1_000_000), default=20000, show_default=True,
              help="Rows per downstream transaction (cut only between upstream transactions).")  # fmt: skip
@click.option("--workers", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Tables applied in parallel (one downstream connection each).")  # fmt: skip
@click.option("--reset-checkpoints", is_flag=True, default=False,
              help="Start over: read the topic again from its first offsets and forget this group's checkpoints in "
                   "sparkcdc_consumer.checkpoint (for a downstream that was dropped or recreated).")  # fmt: skip
@click.option("--quiet", is_flag=True, default=False, help="No progress line on the terminal.")
@click.option("--metrics-addr", default="", help="Serve Prometheus metrics at http://HOST:PORT/metrics.")
def kafka_consumer(
    upstream_uri: str,
    downstream_uri: str,
    config_path: str,
    group_id: str,
    log_file: str,
    log_level: str,
    timezone: str,
    batch_rows: int,
    workers: int,
    reset_checkpoints: bool,
    quiet: bool,
    metrics_addr: str,
) -> None:
    """Apply a TiCDC Kafka topic (canal-json, simple JSON or Avro) to a MySQL-compatible database in commit order,
    effectively once.

    Rows are applied up to the smallest watermark of all partitions, DDLs once every partition has passed them;
    the per-table checkpoint lives in the downstream (sparkcdc_consumer.checkpoint, same transaction as the rows)
    and the group's offsets are committed after it, so a restart resumes without applying anything twice.
    canal-json without enable-tidb-extension has no commit-ts and no watermarks: it is applied in the order read.
    A cluster that does not answer within the URI's dial-timeout (default 10s) at start ends it with exit 1.
    """
    from sparkcdc.consumer.engine import EngineStats
    from sparkcdc.consumer.kafka_consumer import KafkaConsumer, KafkaConsumerConfig
    from sparkcdc.consumer.metrics import serve_metrics
    from sparkcdc.mysql.target import MysqlTarget

    setup_logging(log_file, log_level)
    config = KafkaConsumerConfig.from_uri(upstream_uri, load_toml(config_path), group_id, changefeed=group_id,
                                          time_zone=timezone, batch_rows=batch_rows, workers=workers)  # fmt: skip
    target = MysqlTarget.parse(downstream_uri)
    target.connect().close()  # fail at once on an unreachable downstream or a wrong password
    log.info("kafka consumer starting upstream=%s downstream=%s protocol=%s", config.source.uri.masked(), target,
             config.source.protocol)  # fmt: skip
    stop = threading.Event()
    current: list[KafkaConsumer] = []
    stop_metrics = (serve_metrics(metrics_addr, lambda: current[-1].stats if current else EngineStats(), group_id)
                    if metrics_addr else None)  # fmt: skip

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    tty = sys.stderr.isatty()
    last = [0.0]

    def show(c: KafkaConsumer) -> None:
        now = time.monotonic()
        if quiet or now - last[0] < (1.0 if tty else 10.0):
            return
        last[0] = now
        s = c.stats
        line = (f"rows={s.rows_applied} (+{s.upserts}/-{s.deletes}) ddl={s.ddls_executed} "
                f"replayed-skipped={s.replayed_skipped} dropped={c.dropped} applied-ts={s.applied_ts}")  # fmt: skip
        click.echo(("\r" if tty else "") + line, err=True, nl=not tty)

    try:
        backoff = 0.5
        reached = False  # a cluster that never answered is given up at once (dial-timeout), one that did is retried
        start_over = reset_checkpoints
        while not stop.is_set():
            consumer = KafkaConsumer(config, target, start_over=start_over)
            current[:] = [consumer]
            try:
                consumer.run(stop, show)
            except SparkcdcError as e:
                reached = reached or consumer.connected
                start_over = consumer.start_over  # until one run has rewound the group and forgotten the checkpoints
                if not e.retryable or not reached:
                    raise
                log.warning("retryable error, retrying in %.1fs: %s", backoff, e.message)
                stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)
            finally:
                consumer.close()
    finally:
        if stop_metrics is not None:
            stop_metrics()
