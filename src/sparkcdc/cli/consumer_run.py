"""What every consumer command shares (``cdc storage-consumer``, ``cdc kafka-consumer``, ``cdc redo apply``): one
set of options, logging, the target from the downstream URI, signals, the progress line and metrics, around the one
run loop (``sparkcdc.consumer.runner``). A command only builds its source."""

from __future__ import annotations

import functools
import logging
import signal
import sys
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar

import click

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.errors import ConfigError

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

_TTY_EVERY = 1.0  # seconds between progress lines on a terminal
_LOG_EVERY = 10.0  # ... in a log file, while something changes
_QUIET_EVERY = 60.0  # ... while nothing changes


@dataclass(frozen=True)
class ConsumerOptions:
    """The options every consumer command takes (see :func:`consumer_options`)."""

    downstream_uri: str
    log_file: str
    log_level: str
    timezone: str | None
    workers: int
    batch_rows: int
    reset_checkpoints: bool
    quiet: bool
    metrics_addr: str


def consumer_options(*, downstream: str = "--downstream-uri", workers: int = 4, batch_help: str,
                     reset_help: str | None, tz: bool = True) -> Callable[[F], F]:  # fmt: skip
    """The shared options, handed to the command as one ``opts: ConsumerOptions``. ``downstream`` is the flag of
    the downstream URI (``cdc redo apply`` takes TiCDC's ``--sink-uri``); ``reset_help`` None: no
    ``--reset-checkpoints`` (the command cannot start over); ``tz`` False: no ``--tz`` (the time zone comes from
    elsewhere)."""
    zone_help = "Session time zone for TIMESTAMP values: System, UTC or +HH:MM (the producer's --tz)."
    options = [
        click.option(downstream, "downstream_uri", required=True,
                     help="Downstream MySQL/MariaDB/TiDB: mysql://user:pass@host:port/ (the storage and Kafka "
                          "consumers also take lake tables: delta:///root, iceberg:///warehouse)."),
        click.option("--log-file", default="", help="Write logs to this file instead of stderr."),
        click.option("--log-level", type=click.Choice(["debug", "info", "warn", "error"], case_sensitive=False),
                     default="info", show_default=True, help="Log level of the consumer."),
        *([click.option("--tz", "--timezone", "timezone", default="System", show_default=True, help=zone_help)]
          if tz else []),
        click.option("--workers", type=click.IntRange(1, 64), default=workers, show_default=True,
                     help="Tables applied in parallel (one downstream connection each)."),
        click.option("--batch-rows", type=click.IntRange(1, 1_000_000), default=20000, show_default=True,
                     help=batch_help),
        click.option("--quiet", is_flag=True, default=False, help="No progress line on the terminal."),
        click.option("--metrics-addr", default="", help="Serve Prometheus metrics at http://HOST:PORT/metrics."),
        *([click.option("--reset-checkpoints", is_flag=True, default=False, help=reset_help)]
          if reset_help is not None else []),
    ]  # fmt: skip
    names = ("downstream_uri", "log_file", "log_level", "timezone", "workers", "batch_rows", "quiet", "metrics_addr",
             "reset_checkpoints")  # fmt: skip

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def inner(**kw: Any) -> Any:
            shared = {name: kw.pop(name, None if name == "timezone" else False) for name in names}
            return command(opts=ConsumerOptions(**shared), **kw)

        wrapped: Callable[..., Any] = inner
        for option in reversed(options):
            wrapped = option(wrapped)
        return wrapped  # type: ignore[return-value]

    return decorate


def load_toml(path: str) -> dict[str, Any]:
    """The producer's changefeed TOML (``--config``); ``{}`` without one. It is checked as ``changefeed create``
    checks it, as TiCDC's consumers decode it strictly: a misspelt key is an error naming it, not a setting silently
    left at its default. Raises ConfigError naming the file."""
    if not path:
        return {}
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
        ReplicaConfig.from_document(doc, f"--config {path}")
        return doc
    except OSError as e:
        raise ConfigError(f"cannot read --config {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"--config {path} is not valid TOML: {e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"--config {path} is not UTF-8 text") from None


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


def run_consumer(opts: ConsumerOptions, source: Any, *, consumer: str, pause: float = 0.0,
                 open_target: Callable[[Any], Any] | None = None) -> None:  # fmt: skip
    """Open the target of ``opts.downstream_uri`` for ``source`` and run the loop until the source is finished or
    SIGTERM/SIGINT; ``consumer`` names the target's positions (and the metrics), ``pause`` is the wait between
    polls; ``open_target`` opens the target from its ``TargetOptions`` instead of the registry. Prints the progress
    line (rate-limited; a last one at the end once the source started). Raises SparkcdcError."""
    from sparkcdc.consumer import target as targets
    from sparkcdc.consumer.metrics import serve_metrics
    from sparkcdc.consumer.runner import Consumer

    tty = sys.stderr.isatty()
    last, shown = [0.0], [""]
    current: list[Consumer] = []

    def show(force: bool = False) -> None:
        if opts.quiet or not current:
            return
        now = time.monotonic()
        line = current[0].source.progress_line(current[0].stats)
        wait = _TTY_EVERY if tty else (_LOG_EVERY if line != shown[0] else _QUIET_EVERY)
        if (not force and now - last[0] < wait) or (force and line == shown[0]):
            return
        last[0], shown[0] = now, line
        click.echo(("\r" if tty else "") + line, err=True, nl=not tty)

    options = targets.TargetOptions(consumer=consumer, time_zone=opts.timezone, workers=opts.workers,
                                    on_progress=show)  # fmt: skip
    target = targets.open_target(opts.downstream_uri, options) if open_target is None else open_target(options)
    runner = Consumer(source, target)
    current.append(runner)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stop_metrics = serve_metrics(opts.metrics_addr, lambda: runner.stats, consumer) if opts.metrics_addr else None
    try:
        runner.run(stop, pause=pause, on_progress=lambda _: show())
    finally:
        runner.close()
        if stop_metrics is not None:
            stop_metrics()
        if runner.started:  # a source that never started (no cluster, no downstream) has nothing to say
            show(force=True)
            if tty and not opts.quiet:
                click.echo("", err=True)
