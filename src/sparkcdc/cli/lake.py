"""``cdc lake read`` and ``cdc lake maintain``: a lake sink's tables (``delta://``, ``iceberg://``) read as of an
upstream commit-ts, and compacted. Both read only the lake (and its Iceberg catalog): no ``cdc server``."""

from __future__ import annotations

import datetime
import json
import sys
from typing import Any

import click

from sparkcdc.errors import ConfigError

_URI_HELP = "The lake sink's URI, as given to changefeed create (delta://..., iceberg://...?catalog-uri=...)."
_NEWEST = 2**63 - 1


@click.group("lake")
def lake() -> None:
    """Read and maintain the Delta / Iceberg tables of a lake sink or a consumer's lake target."""


@lake.command("read")
@click.option("--sink-uri", required=True, help=_URI_HELP)
@click.option("--table", "table", required=True, help="The upstream table, as schema.table.")
@click.option("--as-of", "as_of", default=None,
              help="An upstream commit-ts (TSO): the table as the upstream was then, for any commit-ts up to the "
                   "changefeed's checkpoint-ts. Default: the table's newest commit.")  # fmt: skip
@click.option("--output", type=click.Choice(["table", "csv", "json"], case_sensitive=False), default="table",
              show_default=True, help="table: aligned text; csv: a header, then one line a row; json: one object a "
                                      "line (JSON Lines).")  # fmt: skip
@click.option("--limit", type=click.IntRange(min=0), default=None, help="At most this many rows.")
def read(sink_uri: str, table: str, as_of: str | None, output: str, limit: int | None) -> None:
    """Print the rows of a lake table as of an upstream commit-ts (the format's own time travel)."""
    from sparkcdc.lake.as_of import read_as_of

    ts = _NEWEST if as_of is None else _commit_ts(as_of)
    rows = read_as_of(sink_uri, table, ts)
    if limit is not None:
        rows = rows.slice(0, limit)
    _print(rows, output.lower())


def _commit_ts(text: str) -> int:
    if not text.isdigit() or int(text) > _NEWEST:
        raise ConfigError(f"--as-of {text!r}: give an upstream commit-ts, a TSO such as 449530437123211265 "
                          "(cdc cli changefeed query shows the checkpoint-ts)")  # fmt: skip
    return int(text)


def _print(rows: Any, output: str) -> None:
    if output == "csv":
        import pyarrow.csv  # type: ignore[import-untyped]

        pyarrow.csv.write_csv(rows, sys.stdout.buffer)
        return
    if output == "json":
        for row in rows.to_pylist():
            click.echo(json.dumps(row, default=_json_value, ensure_ascii=False))
        return
    click.echo(rows.to_pandas().to_string(index=False) if rows.num_rows else f"(no rows; columns: "
               f"{', '.join(rows.column_names)})")  # fmt: skip


def _json_value(v: Any) -> Any:
    """DECIMAL as its exact text, binary as hex (JSON has neither)."""
    return v.hex() if isinstance(v, bytes) else str(v)


@lake.command("maintain")
@click.option("--sink-uri", required=True, help=_URI_HELP)
@click.option("--table", "tables", required=True, multiple=True, help="An upstream table, as schema.table; repeat it.")
@click.option("--retain", default="168h", show_default=True,
              help="History kept for as-of reads (Go duration): older Delta files are vacuumed, older Iceberg "
                   "snapshots expired.")  # fmt: skip
def maintain(sink_uri: str, tables: tuple[str, ...], retain: str) -> None:
    """Compact each table's small files and drop history older than --retain. Pause the changefeed first."""
    from sparkcdc.lake.location import LakeLocation
    from sparkcdc.lake.maintenance import maintain as run
    from sparkcdc.storage.duration import parse_duration

    where, _params = LakeLocation.from_uri(sink_uri)
    ns = parse_duration(retain, key="--retain")
    if ns < 0:
        raise ConfigError(f"--retain {retain!r}: give a duration of 0 or more, such as 168h")
    keep = datetime.timedelta(microseconds=ns // 1000)
    for name in tables:
        schema, dot, table = name.partition(".")
        if not dot or not schema or not table:
            raise ConfigError(f"--table {name!r}: give it as schema.table")
        done = run(where, schema, table, keep)
        click.echo(f"{done.table}: data files {done.files_before} -> {done.files_after}, "
                   f"{'files vacuumed' if where.fmt == 'delta' else 'snapshots expired'} {done.removed}")  # fmt: skip
