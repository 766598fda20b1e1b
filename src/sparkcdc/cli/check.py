"""``cdc check``: compare tables of a source and a target server (row count + checksum of every column)."""

from __future__ import annotations

import json

import click

from sparkcdc.consumer.check import compare, parse_tables
from sparkcdc.mysql.target import MysqlTarget


@click.command("check")
@click.option("--source", "source_uri", required=True, help="Source server, mysql://user:pass@host:port/.")
@click.option("--target", "target_uri", required=True, help="Target server, mysql://user:pass@host:port/.")
@click.option(
    "--tables",
    default="",
    help="Comma-separated <schema>.<table> or <schema>.* (default: every user table on either side).",
)
@click.option(
    "--output",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Result format: a table for people, json for scripts.",
)
def check(source_uri: str, target_uri: str, tables: str, output: str) -> None:
    """Compare row count and a checksum over all columns per table; exit 0 only when every table matches."""
    source = MysqlTarget.parse(source_uri)
    target = MysqlTarget.parse(target_uri)
    selected = parse_tables(tables) if tables else None
    results = compare(source, target, selected)
    ok = all(r.matches for r in results) and bool(results)
    if output == "json":
        doc = {
            "match": ok,
            "tables": [
                {
                    "schema": r.schema,
                    "table": r.table,
                    "match": r.matches,
                    "source_rows": r.source.rows if r.source else None,
                    "target_rows": r.target.rows if r.target else None,
                    "source_checksum": r.source.checksum if r.source else None,
                    "target_checksum": r.target.checksum if r.target else None,
                    "note": r.note,
                }
                for r in results
            ],
        }
        click.echo(json.dumps(doc, indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"cdc check: {source} -> {target}")
        for col in ("table", "source rows", "target rows", "checksum", "result"):
            table.add_column(col)
        for r in results:
            same_sum = r.source is not None and r.target is not None and r.source.checksum == r.target.checksum
            table.add_row(
                f"{r.schema}.{r.table}",
                str(r.source.rows) if r.source else "-",
                str(r.target.rows) if r.target else "-",
                "-" if r.source is None or r.target is None else "equal" if same_sum else "DIFFERENT",
                "[green]match[/green]" if r.matches else f"[red]MISMATCH[/red] {r.note}",
            )
        console = Console(width=160)
        console.print(table)
        if not results:
            console.print("no tables to compare")
        console.print(f"{sum(r.matches for r in results)}/{len(results)} tables match")
    if not ok:
        raise SystemExit(1)
