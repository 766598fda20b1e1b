"""``cdc storage-consumer``: replay a storage-sink tree into MySQL/MariaDB (TiCDC's flags, plus ours)."""

from __future__ import annotations

import logging

import click

from sparkcdc.cli.consumer_run import ConsumerOptions, consumer_options, load_toml, run_consumer, setup_logging
from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri

log = logging.getLogger(__name__)


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
@click.option("--config", "config_path", default="", help="Changefeed TOML of the producer ([sink] csv options etc).")
@click.option("--flush-interval", "--interval", "interval", default="10s", show_default=True,
              help="Polling period (Go duration such as 10s, or seconds).")  # fmt: skip
@click.option("--file-index-width", type=click.IntRange(6, 20), default=20, show_default=True,
              help="Producer file-index-digit (accepted for compatibility; any width is read).")  # fmt: skip
@click.option("--enable-profiling", is_flag=True, default=False, help="Accepted for TiCDC compatibility; ignored.")
@click.option("--changefeed", "consumer_id", default="default", show_default=True,
              help="Name of this consumer's checkpoints in sparkcdc_consumer.checkpoint.")  # fmt: skip
@click.option("--date-separator", type=click.Choice(["auto", "none", "year", "month", "day"]), default=None,
              help="Date directories of the tree (default: the --config value, else auto-detect).")  # fmt: skip
@click.option("--ignore-foreign-files", is_flag=True, default=False,
              help="Skip files that are not part of the storage-sink layout instead of stopping.")  # fmt: skip
@click.option("--once", is_flag=True, default=False,
              help="Apply everything up to the current storage checkpoint, then exit.")  # fmt: skip
@consumer_options(
    batch_help="Rows per downstream transaction (cut at file/transaction boundaries).",
    reset_help="Start over: forget this consumer's checkpoints in sparkcdc_consumer.checkpoint and apply the tree "
    "from its beginning (for a downstream that was dropped or recreated).",
)
def storage_consumer(
    opts: ConsumerOptions,
    upstream_uri: str,
    config_path: str,
    interval: str,
    file_index_width: int,
    enable_profiling: bool,
    consumer_id: str,
    date_separator: str | None,
    ignore_foreign_files: bool,
    once: bool,
) -> None:
    """Replay a TiCDC storage-sink tree (csv or canal-json) into a MySQL-compatible database, effectively once.

    Table versions strictly in order, DDL before its rows, rows only up to the storage `metadata` checkpoint,
    replays below the consumer's checkpoint skipped; the checkpoint lives in the downstream
    (sparkcdc_consumer.checkpoint), written in the same transaction as the rows, so restarts resume exactly.
    """
    from sparkcdc.consumer.storage_consumer import StorageSource
    from sparkcdc.consumer.storage_reader import ReaderConfig
    from sparkcdc.storage.external import ExternalStorage
    from sparkcdc.storage.sink_config import StorageSinkConfig

    setup_logging(opts.log_file, opts.log_level)
    period = _parse_interval(interval)
    if period <= 0:
        raise ConfigError(f"--flush-interval must be positive, got {interval!r}")
    sink = StorageSinkConfig.from_uri(upstream_uri, load_toml(config_path))
    if sink.uri.scheme == "noop":
        raise ConfigError("a noop:// upstream has no files to consume")
    explicit_sep = date_separator or ("auto" if not config_path else None)
    reader = ReaderConfig.from_sink(sink, date_separator=explicit_sep, ignore_foreign_files=ignore_foreign_files)
    source = StorageSource(ExternalStorage.from_config(sink), reader, batch_rows=opts.batch_rows, once=once,
                           start_over=opts.reset_checkpoints, consumer=consumer_id)  # fmt: skip
    log.info("storage consumer starting upstream=%s downstream=%s protocol=%s", sink.uri.masked(),
             mask_uri(opts.downstream_uri), sink.protocol)  # fmt: skip
    run_consumer(opts, source, consumer=consumer_id, pause=period)
