"""``cdc redo apply`` and ``cdc redo meta``: a MySQL-sink changefeed's redo log after a disaster (TiCDC's flags, plus
ours). Both read only the redo storage (and ``apply`` the downstream): no ``cdc server`` and no upstream."""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from sparkcdc.cli.consumer_run import ConsumerOptions, consumer_options, run_consumer, setup_logging

log = logging.getLogger(__name__)

_STORAGE_HELP = ("The redo log's storage: the changefeed's [consistent] storage, e.g. s3://bucket/prefix?endpoint=... "
                 "or file:///nfs/redo (TiCDC's local:// and nfs:// too).")  # fmt: skip
_CHANGEFEED_HELP = "The changefeed whose redo log to read, when the storage holds several."


@click.group("redo")
def redo() -> None:
    """Read and apply the redo log of a changefeed with [consistent] level = "eventual" (disaster recovery)."""


def _storage(uri: str) -> Any:
    from sparkcdc.changefeed.consistent import storage_uri
    from sparkcdc.storage.external import ExternalStorage

    return ExternalStorage.from_uri(storage_uri(uri))


@redo.command("meta")
@click.option("--storage", "storage_uri", required=True, help=_STORAGE_HELP)
@click.option("--tmp-dir", default="", help="Accepted for TiCDC compatibility; meta downloads nothing.")
@click.option("--changefeed", default=None, help=_CHANGEFEED_HELP)
@click.option("--log-level", type=click.Choice(["debug", "info", "warn", "error"], case_sensitive=False),
              default="warn", show_default=True, help="Log level of the command.")  # fmt: skip
def meta(storage_uri: str, tmp_dir: str, changefeed: str | None, log_level: str) -> None:
    """Print the redo log's checkpoint ts (where it starts) and resolved ts (where an apply brings the downstream)."""
    from sparkcdc.redo.reader import RedoLog

    setup_logging("", log_level)
    found = RedoLog.read(_storage(storage_uri), changefeed)
    click.echo(f"checkpoint-ts:{found.checkpoint_ts}, resolved-ts:{found.resolved_ts}")


@redo.command("apply")
@click.option("--storage", "storage_uri", required=True, help=_STORAGE_HELP)
@click.option("--tmp-dir", default="",
              help="Where remote log files are downloaded (default: a new directory under the system's temp dir, "
                   "removed afterwards).")  # fmt: skip
@click.option("--changefeed", default=None, help=_CHANGEFEED_HELP)
@click.option("--enable-profiling", is_flag=True, default=False, help="Accepted for TiCDC compatibility; ignored.")
@click.option("--memory-limit", type=int, default=10, show_default=True,
              help="Accepted for TiCDC compatibility (GiB); ignored.")  # fmt: skip
@consumer_options(downstream="--sink-uri", workers=16, tz=False, reset_help=None,
                  batch_help="Rows per downstream transaction (cut only between upstream transactions).")  # fmt: skip
def apply(opts: ConsumerOptions, storage_uri: str, tmp_dir: str, changefeed: str | None, enable_profiling: bool,
          memory_limit: int) -> None:  # fmt: skip
    """Bring the downstream to the redo log's resolved ts: every table, every row, one point.

    Every log file is read and checked first; then the rows and DDLs after the log's checkpoint are applied as the
    changefeed's MySQL sink applies them, continuing its checkpoints in tidb_cdc.checkpoint, so what the sink had
    already applied is skipped and running it again (or after a kill) applies nothing twice. The time zone of
    TIMESTAMP values is the sink's (its URI's time-zone wins). Stop every cdc server of the changefeed first.
    """
    from sparkcdc.consumer.redo_source import RedoSource
    from sparkcdc.consumer.target import TargetOptions
    from sparkcdc.mysql.engine import ApplyEngine
    from sparkcdc.sink.mysql.config import MysqlSinkConfig
    from sparkcdc.sink.mysql.session import CHECKPOINT_SCHEMA

    setup_logging(opts.log_file, opts.log_level)
    sink = MysqlSinkConfig.from_uri(opts.downstream_uri, {})
    sink.target.connect().close()  # an unreachable downstream or a wrong password: at once, in one line
    made = not tmp_dir
    tmp = Path(tmp_dir) if tmp_dir else Path(tempfile.mkdtemp(prefix="cdc-redo-apply-"))
    try:
        source = RedoSource(_storage(storage_uri), tmp, changefeed=changefeed, batch_rows=opts.batch_rows)
        found = source.log
        zone = sink.time_zone if sink.time_zone is not None else found.time_zone
        log.info("applying the redo log of %s from %d to %d (%d files) to %s", found.changefeed, found.checkpoint_ts,
                 found.resolved_ts, len(found.files), sink.target)  # fmt: skip

        def open_target(options: TargetOptions) -> ApplyEngine:
            return ApplyEngine(sink.target, changefeed=found.changefeed, time_zone=zone, workers=options.workers,
                               checkpoint_schema=CHECKPOINT_SCHEMA, on_progress=options.on_progress)  # fmt: skip

        run_consumer(opts, source, consumer=found.changefeed, open_target=open_target)
        if source.finished:
            click.echo(f"Apply redo log successfully (resolved-ts:{found.resolved_ts})")
    finally:
        if made:
            shutil.rmtree(tmp, ignore_errors=True)
