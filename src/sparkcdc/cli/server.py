"""``cdc server``: run a node (Open API, changefeed state machine, pipeline runner)."""

from __future__ import annotations

from pathlib import Path

import click

from sparkcdc.server.runners import RUNNERS


@click.command("server")
@click.option("--addr", default="127.0.0.1:8300", show_default=True, help="Listen address of the Open API (host:port).")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("default.data"),
    show_default=True,
    help="Directory of the metadata store and the pipelines' private state.",
)
@click.option(
    "--upstream",
    default=None,
    envvar="SPARKCDC_UPSTREAM",
    metavar="mysql://user:password@host:port",
    help="Upstream MySQL/MariaDB server (row-based binlog) to capture from; also read from $SPARKCDC_UPSTREAM, "
    "which keeps the password out of the process list.",
)
@click.option(
    "--pd",
    default=None,
    metavar="http://host:port[,...]",
    help="etcd endpoints of a cluster of cdc servers (TiCDC's flag: its metadata lives in PD's etcd). Servers "
    "on one etcd share their changefeeds and elect an owner; without it the server keeps its metadata in SQLite "
    "under --data-dir and is its own owner.",
)
@click.option("--cluster-id", default="default", show_default=True, help="Cluster name within the etcd (--pd).")
@click.option(
    "--session-ttl",
    type=click.IntRange(1, 600),
    default=10,
    hidden=True,
    help="Seconds a dead server keeps its etcd session (and ownership) before another one takes over (tests).",
)
@click.option("--spark-master", default="local[*]", show_default=True, help="Spark master URL for the pipelines.")
@click.option(
    "--log-file", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Log file (default: stderr)."
)
@click.option(
    "--log-level",
    "server_log_level",
    type=click.Choice(["debug", "info", "warn", "error"], case_sensitive=False),
    default="info",
    show_default=True,
    help="Log level of the server.",
)
@click.option(
    "--runner",
    type=click.Choice(sorted(RUNNERS)),
    default="spark",
    show_default=True,
    help="Changefeed executor: 'spark' runs the pipeline; 'noop' only manages state (tests, dry runs).",
)
@click.option(
    "--tz", default="System", show_default=True, help="Time zone for TIMESTAMP values (System or an IANA name)."
)
@click.option(
    "--gc-ttl",
    type=click.IntRange(0),
    default=86400,
    show_default=True,
    help="Seconds a stopped or failed changefeed keeps holding captured data; after that the relay log is "
    "collected past its checkpoint and it can no longer be resumed.",
)
@click.option(
    "--gc-interval",
    type=click.FloatRange(0.05),
    default=60.0,
    hidden=True,
    help="Seconds between GC safepoint updates (tests).",
)
@click.option(
    "--gc-life-time",
    type=click.FloatRange(0),
    default=600.0,
    hidden=True,
    help="Seconds behind the current TSO never collected, like TiDB's tidb_gc_life_time (tests).",
)
@click.option(
    "--relay-segment-bytes",
    type=click.IntRange(1),
    default=256 << 20,
    hidden=True,
    help="Size at which the relay log starts a new segment (tests).",
)
@click.option(
    "--lock-wait",
    type=click.FloatRange(0),
    default=30.0,
    hidden=True,
    help="Seconds to wait for a busy --data-dir lock (the Spark processes of a just-stopped server hold it).",
)
@click.option(
    "--status-interval",
    type=click.FloatRange(0.05, 60),
    default=0.5,
    show_default=True,
    help="Seconds between polls of the pipelines' progress.",
)
def server(
    addr: str,
    data_dir: Path,
    upstream: str | None,
    pd: str | None,
    cluster_id: str,
    session_ttl: int,
    spark_master: str,
    log_file: Path | None,
    server_log_level: str,
    runner: str,
    tz: str,
    status_interval: float,
    gc_ttl: int,
    gc_interval: float,
    gc_life_time: float,
    relay_segment_bytes: int,
    lock_wait: float,
) -> None:
    """Start a cdc server (a node of a cluster with --pd, else one node owning every changefeed)."""
    from sparkcdc.server.gc import GcPolicy
    from sparkcdc.server.process import ServerOptions, run_server

    run_server(
        ServerOptions(
            addr=addr,
            data_dir=data_dir,
            upstream=upstream,
            pd=pd,
            cluster_id=cluster_id,
            session_ttl=session_ttl,
            spark_master=spark_master,
            log_file=log_file,
            log_level=server_log_level,
            runner=runner,
            poll_interval=status_interval,
            tz=tz,
            gc=GcPolicy(ttl_s=gc_ttl, life_time_s=gc_life_time, interval_s=gc_interval),
            relay_segment_bytes=relay_segment_bytes,
            lock_wait=lock_wait,
        )
    )
