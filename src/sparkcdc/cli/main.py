"""Entry point of the ``cdc`` command: TiCDC's command shape on click.

User mistakes end with one ``Error:`` line and exit code 1 (no traceback unless ``--log-level debug``);
click's own usage errors exit with 2.
"""

from __future__ import annotations

import logging
import sys

import click

from sparkcdc import __version__
from sparkcdc.cli.changefeed import cli_group as cli_command
from sparkcdc.cli.check import check as check_command
from sparkcdc.cli.consumer import storage_consumer as storage_consumer_command
from sparkcdc.cli.kafka_consumer import kafka_consumer as kafka_consumer_command
from sparkcdc.cli.lake import lake as lake_command
from sparkcdc.cli.redo import redo as redo_command
from sparkcdc.cli.server import server as server_command
from sparkcdc.errors import SparkcdcError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cdc")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warn", "error"], case_sensitive=False),
    default="warn",
    show_default=True,
    help="Log level of the command itself (the server has its own).",
)
@click.pass_context
def cli(ctx: click.Context, log_level: str) -> None:
    """sparkcdc: TiCDC-compatible change data capture on Apache Spark."""
    level = {"warn": logging.WARNING}.get(log_level.lower(), getattr(logging, log_level.upper()))
    logging.basicConfig(level=level, format="[%(asctime)s] [%(levelname)s] %(name)s: %(message)s")
    ctx.obj = {"debug": log_level.lower() == "debug"}


@cli.command("version")
def version() -> None:
    """Output version information (TiCDC's `cdc version` lines, with Python and PySpark for Go)."""
    import importlib.metadata
    import platform

    try:
        pyspark = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        pyspark = "not installed"
    click.echo(f"Release Version: v{__version__}")
    click.echo(f"Python Version: {platform.python_version()}")
    click.echo(f"PySpark Version: {pyspark}")


cli.add_command(server_command)
cli.add_command(cli_command)
cli.add_command(check_command)
cli.add_command(storage_consumer_command)
cli.add_command(kafka_consumer_command)
cli.add_command(redo_command)
cli.add_command(lake_command)


def main() -> None:
    """Run the CLI, turning project errors into one ``Error:`` line."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except SparkcdcError as e:
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            logging.getLogger(__name__).exception("command failed")
        click.echo(f"Error: [{e.code}] {e.message}", err=True)
        sys.exit(1)
    except Exception as e:  # a bug, or input nobody checked yet: still one line; the traceback with debug
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            logging.getLogger(__name__).exception("command failed")
        detail = " ".join(str(e).split())[:500] or type(e).__name__
        click.echo(
            f"Error: [CDC:ErrInternal] unexpected {type(e).__name__}: {detail} "
            "(run with `cdc --log-level debug` for the traceback)",
            err=True,
        )
        sys.exit(1)
