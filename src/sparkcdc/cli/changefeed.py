"""``cdc cli changefeed create|list|query|pause|resume|update|remove``: TiCDC's flags and outputs.

Outputs follow TiCDC's CLI: ``Create changefeed successfully!`` + ``ID:`` + ``Info:`` (compact Go JSON) on
create, indented JSON for list/query, nothing on pause/resume, ``Changefeed remove successfully.`` on remove.
Confirmations (large replication lag, overwriting a checkpoint, applying an update) read Y/N from stdin
unless ``--no-confirm``; ignoring tables without a handle key is asked only at a terminal (their warning is printed
always).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click

from sparkcdc.changefeed.config import ReplicaConfig, merge_documents, read_toml_file, thaw
from sparkcdc.changefeed.info import RUNNING
from sparkcdc.cli.client import DEFAULT_SERVER, APIClient
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.masking import mask_config, mask_uri
from sparkcdc.model import tso
from sparkcdc.server.catchup import describe_lag

F = TypeVar("F", bound=Callable[..., Any])

TS_GAP_WARNING_MS = 86400 * 1000


class TSOType(click.ParamType):  # type: ignore[type-arg]
    name = "TSO"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return tso.parse(str(value))
        except ConfigError as e:
            self.fail(e.message, param, ctx)


TSO = TSOType()


def go_json(value: Any, indent: bool = False) -> str:
    """Go ``json.Marshal`` / ``MarshalIndent(v, "", "  ")`` text: HTML characters escaped as Go does."""
    text = (
        json.dumps(value, ensure_ascii=False, indent=2)
        if indent
        else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    )
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def server_option(f: F) -> F:
    return click.option(
        "--server",
        default=None,
        metavar="URL",
        help=f"Address of a cdc server's Open API (default {DEFAULT_SERVER}, or the value given to `cdc cli`).",
    )(f)


def namespace_option(f: F) -> F:
    return click.option(
        "--namespace", "-n", default="default", show_default=True, help="Replication task (changefeed) namespace."
    )(f)


def id_option(required: bool) -> Callable[[F], F]:
    def deco(f: F) -> F:
        if required:
            return click.option(
                "--changefeed-id", "-c", "changefeed_id", required=True, help="Replication task (changefeed) ID."
            )(f)
        return click.option(
            "--changefeed-id",
            "-c",
            "changefeed_id",
            default="",
            help="Replication task (changefeed) ID; matches ^[a-zA-Z0-9]+(\\-[a-zA-Z0-9]+)*$, a UUID when omitted.",
        )(f)

    return deco


def _client(ctx: click.Context, server: str | None) -> APIClient:
    root = ctx.find_root().obj or {}
    return APIClient(server or root.get("server") or DEFAULT_SERVER)


def _confirm(question: str) -> bool:
    click.echo(question)
    answer = sys.stdin.readline()
    return answer.strip().lower() == "y"


def _aborted(command: str) -> SparkcdcError:
    return SparkcdcError(f"command 'cli changefeed {command}' is aborted by user", code="CDC:ErrCliAborted")


def _confirm_large_gap(current: int, start_ts: int, command: str) -> None:
    gap = tso.physical(current) - tso.physical(start_ts)
    if gap > TS_GAP_WARNING_MS:
        hours = gap / 3_600_000
        if not _confirm(
            f"Replicate lag ({hours:.1f}h) is larger than 1 days, large data may cause OOM, "
            "confirm to continue at your own risk [Y/N]"
        ):
            click.echo(f"Abort changefeed {command}.")
            raise _aborted(command)


def _warn_ineligible(tables: list[str], config: ReplicaConfig, ask: bool) -> None:
    """TiCDC's warning on tables that have no handle key (no primary key, no NOT NULL unique key): named always; left
    out unless force-replicate, which is then asked to confirm, but only of a user at a terminal (a script's stdin
    answers no question: it goes on, as with ``--no-confirm``). The warning goes to stderr: a script reading the
    create's stdout (``ID:``, ``Info:``) sees the same lines with or without it."""
    if not tables:
        return
    named = ", ".join(tables)
    if config.force_replicate:
        click.echo(f"[WARN] force to replicate some ineligible tables (no primary key or not-null unique key): {named}",
                   err=True)  # fmt: skip
        return
    click.echo(f"[WARN] some tables are not eligible to replicate (no primary key or not-null unique key), they are "
               f"left out: {named}", err=True)  # fmt: skip
    if ask and sys.stdin.isatty() and not _confirm("Could you agree to ignore those tables, and continue to replicate "
                                                   "[Y/N]"):  # fmt: skip
        click.echo("No changefeed is created because you don't want to ignore some tables.")
        raise _aborted("create")


def _json_time_from_rfc3339(text: str) -> str:
    try:
        when = datetime.fromisoformat(text).astimezone()
    except ValueError:
        return text
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d}"


@click.group("changefeed")
@click.pass_context
def changefeed(ctx: click.Context) -> None:
    """Manage replication tasks (changefeeds)."""


@changefeed.command("create")
@server_option
@id_option(required=False)
@namespace_option
@click.option("--sink-uri", default="", help="Downstream address, e.g. s3://bucket/prefix?protocol=canal-json.")
@click.option("--start-ts", type=TSO, default=0, help="Start TSO of the changefeed (default: the current TSO).")
@click.option("--target-ts", type=TSO, default=0, help="Target TSO: the changefeed finishes there (default: none).")
@click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), default=None, help="Changefeed configuration (TOML)."
)
@click.option(
    "--schema-registry",
    default="",
    help="Avro Schema Registry URI (protocol=avro): http(s)://[user:password@]host:port, URL-encoded credentials.",
)
@click.option(
    "--no-confirm",
    is_flag=True,
    help="Do not ask for confirmation (large lag; ineligible tables, asked only at a terminal).",
)
@click.option("--disable-gc-check", is_flag=True, hidden=True, help="Accepted for compatibility; no effect.")
@click.pass_context
def create(
    ctx: click.Context,
    server: str | None,
    changefeed_id: str,
    namespace: str,
    sink_uri: str,
    start_ts: int,
    target_ts: int,
    config_path: str | None,
    schema_registry: str,
    no_confirm: bool,
    disable_gc_check: bool,
) -> None:
    """Create a new replication task (changefeed)."""
    config = ReplicaConfig.load(config_path) if config_path else ReplicaConfig()
    if schema_registry:  # TiCDC: the flag beats [sink] schema-registry of --config
        config = config.with_sink({**thaw(config.sink), "schema-registry": schema_registry})
    with _client(ctx, server) as client:
        if start_ts and not no_confirm:
            _confirm_large_gap(client.tso(), start_ts, "create")
        # start_ts 0: the server takes its current TSO when it creates (as TiCDC's API v2), right before it checks
        # the TSO is still retained; a TSO taken here could fall behind the relay GC during the calls below.
        body = {
            "namespace": namespace,
            "changefeed_id": changefeed_id,
            "start_ts": start_ts,
            "target_ts": target_ts,
            "sink_uri": sink_uri,
            "replica_config": config.to_api(),
        }
        _warn_ineligible(client.verify_table(body), config, ask=not no_confirm)
        info = client.create(body)
    click.echo(f"Create changefeed successfully!\nID: {info['id']}\nInfo: {go_json(info)}")


@changefeed.command("list")
@server_option
@namespace_option
@click.option("--all", "-a", "list_all", is_flag=True, help="List all replication tasks (including finished).")
@click.pass_context
def list_cmd(ctx: click.Context, server: str | None, namespace: str, list_all: bool) -> None:
    """List the replication tasks (changefeeds) of the cluster."""
    with _client(ctx, server) as client:
        items = client.list(namespace, "all")
    out = []
    for cf in items:
        if not list_all and cf.get("state") in ("finished", "removed"):
            continue
        out.append(
            {
                "id": cf["id"],
                "namespace": cf["namespace"],
                "summary": {
                    "state": cf["state"],
                    "tso": cf["checkpoint_tso"],
                    "checkpoint": cf["checkpoint_time"],
                    "error": cf.get("error"),
                },
            }
        )
    click.echo(go_json(out, indent=True))


@changefeed.command("query")
@server_option
@id_option(required=True)
@namespace_option
@click.option("--simple", "-s", is_flag=True, help="Output simplified replication status.")
@click.pass_context
def query(ctx: click.Context, server: str | None, changefeed_id: str, namespace: str, simple: bool) -> None:
    """Query information and status of a replication task (changefeed)."""
    with _client(ctx, server) as client:
        if simple:
            for cf in client.list(namespace, "all"):
                if cf.get("id") == changefeed_id:
                    click.echo(go_json(_with_lag(cf, cf.get("checkpoint_tso", 0)), indent=True))
                    return
            raise SparkcdcError(f"changefeed not exists, {changefeed_id}", code="CDC:ErrChangeFeedNotExists")
        d = client.get(namespace, changefeed_id)
    meta: dict[str, Any] = {
        "upstream_id": d.get("upstream_id", 0),
        "namespace": d.get("namespace", ""),
        "id": d["id"],
        "sink_uri": d.get("sink_uri", ""),
        "config": d.get("config"),
        "create_time": _json_time_from_rfc3339(d.get("create_time", "")),
        "start_ts": d.get("start_ts", 0),
        "resolved_ts": d.get("resolved_ts", 0),
        "target_ts": d.get("target_ts", 0),
        "checkpoint_tso": d.get("checkpoint_ts", 0),
        "checkpoint_time": d.get("checkpoint_time", ""),
        "state": d.get("state", ""),
    }
    if d.get("error"):
        meta["error"] = d["error"]
    meta["creator_version"] = d.get("creator_version", "")
    if d.get("snapshot"):  # ours (TiCDC has no initial snapshot): the copy's progress, as the Open API shows it
        meta["snapshot"] = d["snapshot"]
    click.echo(go_json(_with_lag(meta, meta["checkpoint_tso"]), indent=True))


def _with_lag(doc: dict[str, Any], checkpoint_ts: int) -> dict[str, Any]:
    """Ours: ``checkpoint_lag``, how far a running changefeed's checkpoint trails this host's clock, in words."""
    if doc.get("state") not in RUNNING or not checkpoint_ts:
        return doc
    return {**doc, "checkpoint_lag": describe_lag(tso.lag_seconds(int(checkpoint_ts), time.time()))}


@changefeed.command("pause")
@server_option
@id_option(required=True)
@namespace_option
@click.pass_context
def pause(ctx: click.Context, server: str | None, changefeed_id: str, namespace: str) -> None:
    """Pause a replication task (changefeed)."""
    with _client(ctx, server) as client:
        client.pause(namespace, changefeed_id)


@changefeed.command("resume")
@server_option
@id_option(required=True)
@namespace_option
@click.option("--no-confirm", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--overwrite-checkpoint-ts",
    default="",
    metavar="now|TSO",
    help="Restart from this checkpoint instead of the stored one: 'now' or a TSO.",
)
@click.pass_context
def resume(
    ctx: click.Context,
    server: str | None,
    changefeed_id: str,
    namespace: str,
    no_confirm: bool,
    overwrite_checkpoint_ts: str,
) -> None:
    """Resume a paused, failed or finished replication task (changefeed)."""
    with _client(ctx, server) as client:
        detail = client.get(namespace, changefeed_id)
        current = client.tso()
        checkpoint = 0
        if overwrite_checkpoint_ts:
            if overwrite_checkpoint_ts.lower() == "now":
                checkpoint = current
            else:
                try:
                    checkpoint = int(overwrite_checkpoint_ts)
                except ValueError:
                    checkpoint = 0
                if checkpoint <= 0 or checkpoint >= 1 << 64:
                    raise SparkcdcError(
                        f"invalid overwrite-checkpoint-ts {overwrite_checkpoint_ts}, overwrite-checkpoint-ts only "
                        "accept 'now' or a valid timestamp in integer",
                        code="CDC:ErrCliInvalidCheckpointTs",
                    )
                if checkpoint > current:
                    raise SparkcdcError(
                        f"the overwrite-checkpoint-ts {checkpoint} must be smaller than current TSO",
                        code="CDC:ErrCliCheckpointTsIsInFuture",
                    )
        if not no_confirm:
            if checkpoint:
                if not _confirm(
                    f"You are overwriting the checkpoint of changefeed({changefeed_id}) to {checkpoint}, which may "
                    "lead to data loss or data duplication.\nConfirm that you know what this command will do and "
                    "use it at your own risk [Y/N]"
                ):
                    click.echo("Abort changefeed resume.")
                    raise _aborted("resume")
            else:
                _confirm_large_gap(current, int(detail.get("checkpoint_ts", current)), "resume")
        client.resume(namespace, changefeed_id, checkpoint)


@changefeed.command("remove")
@server_option
@id_option(required=True)
@namespace_option
@click.pass_context
def remove(ctx: click.Context, server: str | None, changefeed_id: str, namespace: str) -> None:
    """Remove a replication task (changefeed)."""
    with _client(ctx, server) as client:
        try:
            detail = client.get(namespace, changefeed_id)
        except SparkcdcError as e:
            if e.code == "CDC:ErrChangeFeedNotExists":
                click.echo(f"Changefeed not found.\nID: {changefeed_id}")
                return
            raise
        client.delete(namespace, changefeed_id)
    click.echo(
        f"Changefeed remove successfully.\nID: {changefeed_id}\nCheckpointTs: {detail.get('checkpoint_ts', 0)}\n"
        f"SinkURI: {detail.get('sink_uri', '')}"
    )


@changefeed.command("update")
@server_option
@id_option(required=True)
@namespace_option
@click.option("--sink-uri", default=None, help="New downstream address.")
@click.option("--target-ts", type=TSO, default=None, help="New target TSO.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML applied on top of the current configuration.",
)
@click.option("--no-confirm", is_flag=True, help="Apply the changes without asking.")
@click.pass_context
def update(
    ctx: click.Context,
    server: str | None,
    changefeed_id: str,
    namespace: str,
    sink_uri: str | None,
    target_ts: int | None,
    config_path: str | None,
    no_confirm: bool,
) -> None:
    """Update the configuration of a stopped or failed replication task (changefeed)."""
    overlay = read_toml_file(config_path) if config_path else None
    with _client(ctx, server) as client:
        old = client.get(namespace, changefeed_id)
        old_cfg = ReplicaConfig.from_api(old.get("config"))
        new_cfg = old_cfg
        if overlay is not None:
            new_cfg = ReplicaConfig.from_document(merge_documents(old_cfg.to_toml(), overlay), str(config_path))
        changes: list[str] = []
        if target_ts is not None and target_ts != old.get("target_ts", 0):
            changes.append(f"update target_ts: {old.get('target_ts', 0)} -> {target_ts}")
        if sink_uri is not None and sink_uri != old.get("sink_uri"):
            changes.append(f"update sink_uri: {old.get('sink_uri', '')} -> {mask_uri(sink_uri)}")
        old_api, new_api = old_cfg.to_api(), new_cfg.to_api()
        shown_old, shown_new = mask_config(old_api), mask_config(new_api)  # the diff never shows a secret
        for key in new_api:
            if new_api[key] != old_api.get(key):
                changes.append(f"update config.{key}: {go_json(shown_old.get(key))} -> {go_json(shown_new[key])}")
        if not changes:
            click.echo("changefeed config is the same with the old one, do nothing")
            return
        click.echo("Diff of changefeed config:")
        for change in changes:
            click.echo(change)
        if not no_confirm and not _confirm("Could you agree to apply changes above to changefeed [Y/N]"):
            click.echo("No update to changefeed.")
            return
        body: dict[str, Any] = {"target_ts": target_ts or 0, "sink_uri": sink_uri or ""}
        if overlay is not None:
            body["replica_config"] = new_cfg.to_api()
        info = client.update(namespace, changefeed_id, body)
    click.echo(f"Update changefeed config successfully! \nID: {changefeed_id}\nInfo: {go_json(info)}")


@changefeed.command("statistics")
@server_option
@id_option(required=True)
@namespace_option
@click.option(
    "--interval", "-I", type=click.IntRange(1), default=10, show_default=True, help="Seconds between two outputs."
)
@click.option("--count", type=click.IntRange(0), default=0, help="Stop after this many outputs (0: run until Ctrl-C).")
@click.pass_context
def statistics(
    ctx: click.Context, server: str | None, changefeed_id: str, namespace: str, interval: int, count: int
) -> None:
    """Periodically output the lag of a replication task (changefeed)."""
    import time

    printed = 0
    with _client(ctx, server) as client:
        while True:
            detail = client.get(namespace, changefeed_id)
            now = client.tso()
            checkpoint = int(detail.get("checkpoint_ts", 0))
            sink_gap = tso.physical(int(detail.get("resolved_ts", 0))) - tso.physical(checkpoint)
            replication_gap = tso.physical(now) - tso.physical(checkpoint)
            click.echo(go_json({"sink_gap": f"{sink_gap}ms", "replication_gap": f"{replication_gap}ms"}, indent=True))
            printed += 1
            if count and printed >= count:
                return
            time.sleep(interval)


@click.group("tso")
def tso_group() -> None:
    """Timestamp oracle of the upstream."""


@tso_group.command("query")
@server_option
@click.pass_context
def tso_query(ctx: click.Context, server: str | None) -> None:
    """Print the upstream's current TSO (usable as --start-ts)."""
    with _client(ctx, server) as client:
        click.echo(str(client.tso()))


@click.group("cli")
@click.option(
    "--server", default=None, metavar="URL", help=f"Address of a cdc server's Open API (default {DEFAULT_SERVER})."
)
@click.pass_context
def cli_group(ctx: click.Context, server: str | None) -> None:
    """Manage a sparkcdc cluster through a cdc server's Open API."""
    root = ctx.find_root()
    if root.obj is None:
        root.obj = {}
    if server:
        root.obj["server"] = server


@click.group("capture")
def capture_group() -> None:
    """The captures (cdc server processes) of the cluster."""


@capture_group.command("list")
@server_option
@click.pass_context
def capture_list(ctx: click.Context, server: str | None) -> None:
    """List the captures and which one is the owner (as TiCDC's JSON)."""
    with _client(ctx, server) as client:
        items = client.captures()
    out = [{"id": c["id"], "is-owner": c["is_owner"], "address": c["address"], "cluster-id": c["cluster_id"]}
           for c in items]  # fmt: skip
    click.echo(go_json(out, indent=True))


@click.group("processor")
def processor_group() -> None:
    """Which capture runs each changefeed (a processor: one changefeed's work on one capture)."""


@processor_group.command("list")
@server_option
@click.pass_context
def processor_list(ctx: click.Context, server: str | None) -> None:
    """List the processors of the cluster (as TiCDC's JSON)."""
    with _client(ctx, server) as client:
        items = client.processors()
    out = [{"changefeed-id": {"namespace": p["namespace"], "id": p["changefeed_id"]}, "capture-id": p["capture_id"]}
           for p in items]  # fmt: skip
    click.echo(go_json(out, indent=True))


cli_group.add_command(changefeed)
cli_group.add_command(tso_group)
cli_group.add_command(capture_group)
cli_group.add_command(processor_group)
