"""``cdc storage-consumer``: replay a storage-sink tree into MySQL/MariaDB (TiCDC's flags, plus ours)."""

from __future__ import annotations

import logging
import signal
import sys
import time
import tomllib
from types import FrameType
from typing import Any

import click

from sparkcdc.errors import ConfigError, SparkcdcError

log = logging.getLogger(__name__)


def load_toml(path: str) -> dict[str, Any]:
    if not path:
        return {}
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read --config {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"--config {path} is not valid TOML: {e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"--config {path} is not UTF-8 text") from None


def _parse_interval(text: str) -> float:
    from sparkcdc.storage.duration import parse_duration

    try:
        return float(text)
    except ValueError:
        return parse_duration(text, key="flush-interval") / 1e9


@click.command("storage-consumer")
@click.option(
    "--upstream-uri", required=True, help="Storage sink URI with its protocol (s3://b/p?protocol=canal-json)."
)
@click.option("--downstream-uri", required=True, help="Downstream MySQL/MariaDB/TiDB: mysql://user:pass@host:port/.")
@click.option("--config", "config_path", default="", help="Changefeed TOML of the producer ([sink] csv options etc).")
@click.option("--log-file", default="", help="Write logs to this file instead of stderr.")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warn", "error"], case_sensitive=False),
    default="info",
    show_default=True,
    help="Log level of the consumer.",
)
@click.option("--flush-interval", "--interval", "interval", default="10s", show_default=True,
              help="Polling period (Go duration such as 10s, or seconds).")  # fmt: skip
@click.option("--file-index-width", type=click.IntRange(6, 20), default=20, show_default=True,
              help="Producer file-index-digit (accepted for compatibility; any width is read).")  # fmt: skip
@click.option("--enable-profiling", is_flag=True, default=False, help="Accepted for TiCDC compatibility; ignored.")
@click.option("--tz", "--timezone", "timezone", default="System", show_default=True,
              help="Session time zone for TIMESTAMP values: System, UTC or +HH:MM (the producer's --tz).")  # fmt: skip
@click.option("--changefeed", "consumer_id", default="default", show_default=True,
              help="Name of this consumer's checkpoints in sparkcdc_consumer.checkpoint.")  # fmt: skip
@click.option("--date-separator", type=click.Choice(["auto", "none", "year", "month", "day"]), default=None,
              help="Date directories of the tree (default: the --config value, else auto-detect).")  # fmt: skip
@click.option("--workers", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Tables applied in parallel (one downstream connection each).")  # fmt: skip
@click.option("--batch-rows", type=click.IntRange(1, 1_000_000), default=20000, show_default=True,
              help="Rows per downstream transaction (cut at file/transaction boundaries).")  # fmt: skip
@click.option("--ignore-foreign-files", is_flag=True, default=False,
              help="Skip files that are not part of the storage-sink layout instead of stopping.")  # fmt: skip
@click.option("--once", is_flag=True, default=False,
              help="Apply everything up to the current storage checkpoint, then exit.")  # fmt: skip
@click.option("--reset-checkpoints", is_flag=True, default=False,
              help="Start over: forget this consumer's checkpoints in sparkcdc_consumer.checkpoint and apply the "
                   "tree from its beginning (for a downstream that was dropped or recreated).")  # fmt: skip
@click.option("--quiet", is_flag=True, default=False, help="No progress line on the terminal.")
@click.option("--metrics-addr", default="", help="Serve Prometheus metrics at http://HOST:PORT/metrics.")
def storage_consumer(
    upstream_uri: str,
    downstream_uri: str,
    config_path: str,
    log_file: str,
    log_level: str,
    interval: str,
    file_index_width: int,
    enable_profiling: bool,
    timezone: str,
    consumer_id: str,
    date_separator: str | None,
    workers: int,
    batch_rows: int,
    ignore_foreign_files: bool,
    once: bool,
    reset_checkpoints: bool,
    quiet: bool,
    metrics_addr: str,
) -> None:
    """Replay a TiCDC storage-sink tree (csv or canal-json) into a MySQL-compatible database, effectively once.

    Table versions strictly in order, DDL before its rows, rows only up to the storage `metadata` checkpoint,
    replays below the consumer's checkpoint skipped; the checkpoint lives in the downstream
    (sparkcdc_consumer.checkpoint), written in the same transaction as the rows, so restarts resume exactly.
    """
    from sparkcdc.consumer.metrics import serve_metrics
    from sparkcdc.consumer.storage_consumer import Progress, StorageConsumer
    from sparkcdc.consumer.storage_reader import ReaderConfig
    from sparkcdc.mysql.target import MysqlTarget
    from sparkcdc.storage.external import ExternalStorage
    from sparkcdc.storage.sink_config import StorageSinkConfig

    setup_logging(log_file, log_level)
    period = _parse_interval(interval)
    if period <= 0:
        raise ConfigError(f"--flush-interval must be positive, got {interval!r}")
    sink = StorageSinkConfig.from_uri(upstream_uri, load_toml(config_path))
    if sink.uri.scheme == "noop":
        raise ConfigError("a noop:// upstream has no files to consume")
    explicit_sep = date_separator or ("auto" if not config_path else None)
    reader = ReaderConfig.from_sink(sink, date_separator=explicit_sep, ignore_foreign_files=ignore_foreign_files)
    target = MysqlTarget.parse(downstream_uri)
    target.connect().close()  # fail at once on an unreachable downstream or a wrong password, not after waiting
    storage = ExternalStorage.from_config(sink)
    log.info("storage consumer starting upstream=%s downstream=%s protocol=%s", sink.uri.masked(), target,
             sink.protocol)  # fmt: skip

    last = [0.0]
    shown: list[tuple[int, ...]] = [()]
    tty = sys.stderr.isatty()

    def show(p: Progress) -> None:
        now = time.monotonic()
        state = (p.rows_applied, p.replayed_skipped, p.ddls_executed, p.storage_checkpoint, p.applied_ts)
        if quiet or now - last[0] < 1.0 or (state == shown[0] and now - last[0] < 60):
            return
        last[0] = now
        shown[0] = state
        click.echo(("\r" if tty else "") + p.line(), err=True, nl=not tty)

    stop = [False]

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    consumer = StorageConsumer(
        storage, reader, target, changefeed=consumer_id, time_zone=timezone, workers=workers, batch_rows=batch_rows,
        on_progress=show,
    )  # fmt: skip
    if reset_checkpoints:
        log.warning("--reset-checkpoints: %d checkpoints of %r forgotten; the tree is applied from its beginning",
                    consumer.engine.reset_checkpoints(), consumer_id)  # fmt: skip
    stop_metrics = serve_metrics(metrics_addr, lambda: consumer.progress, consumer_id) if metrics_addr else None
    backoff = 0.5
    failures = 0
    try:
        while not stop[0]:
            try:
                consumer.run_once()
                backoff, failures = 0.5, 0
            except SparkcdcError as e:
                failures += 1
                if not e.retryable or (once and failures > 5):
                    raise
                log.warning("retryable error, retrying in %.1fs: %s", backoff, e.message)
                _sleep(backoff, stop)
                backoff = min(backoff * 2, 30.0)
                continue
            if once:
                break
            _sleep(period, stop)
    finally:
        consumer.close()
        if stop_metrics is not None:
            stop_metrics()
        if not quiet:
            last[0], shown[0] = 0.0, ()
            show(consumer.progress)
            if tty:
                click.echo("", err=True)


def _sleep(seconds: float, stop: list[bool]) -> None:
    deadline = time.monotonic() + seconds
    while not stop[0] and time.monotonic() < deadline:
        time.sleep(min(0.1, seconds))


def setup_logging(log_file: str, level: str) -> None:
    """Raises ConfigError when ``log_file`` cannot be opened for appending."""
    root = logging.getLogger()
    root.setLevel({"warn": logging.WARNING}.get(level.lower(), getattr(logging, level.upper(), logging.INFO)))
    if log_file:
        try:
            handler: logging.Handler = logging.FileHandler(log_file)
        except OSError as e:
            raise ConfigError(f"cannot write --log-file {log_file}: {e.strerror or e}") from None
        handler.setFormatter(logging.Formatter("[%(asctime)s] [%(levelname)s] %(name)s: %(message)s"))
        for h in list(root.handlers):
            root.removeHandler(h)
        root.addHandler(handler)
