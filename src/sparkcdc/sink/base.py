"""The sink seam: what every sink provides, and the one registry that finds a sink by its URI scheme.

The server's validation, the changefeed query and the CLI all go through :func:`sink_for`, so a new sink is one
new package plus one registry line. A sink has four parts, matching where the query runs them:

``config(uri, toml)``      validating constructor (driver and control plane); raises ConfigError, secrets masked
``encoder(config, ctx)``   executors, source side: one table's rows of one transaction -> routed payloads
``writer(config, ctx)``    executors, sink side: a task's routed payloads (one route per task) -> a result
``committer(config, ctx)`` driver: publishes a batch's results and DDLs, then the checkpoint

Every payload of one route goes to one writer task, in commit order (storage: TiCDC's DML worker bucket, so one task
owns a table; Kafka: the topic partition, so one task produces a partition in order). Between encoder and writer the
query shuffles by ``Payload.route``, unless the encoder is ``TableRouted`` (a table's payloads all take one route):
then each writer task decodes and encodes its own tables itself, and there is no shuffle. Only the committer's
``checkpoint`` acknowledges progress, after the batch's data is durable downstream.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from sparkcdc.changefeed.consistent import ConsistentConfig
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.masking import mask_uri
from sparkcdc.model import DDLEvent, RowChange, TableInfo

ERR_SINK_URI_INVALID = "CDC:ErrSinkURIInvalid"


class SinkConfig(Protocol):
    """What the query needs of any sink's config (each sink's config is a frozen dataclass that pickles)."""

    @property
    def flush_interval(self) -> float:
        """Seconds between micro-batches while the changefeed is caught up."""
        ...

    @property
    def worker_count(self) -> int:
        """Upper bound of the writer tasks (further bounded by the cluster's task slots)."""
        ...


@dataclass(frozen=True, slots=True)
class Payload:
    """One encoded unit for the writers: ``nrows`` rows of one physical table, on writer route ``route``."""

    route: int
    physical_table_id: int
    nrows: int
    data: bytes


class SinkEncoder(Protocol):
    def encode(self, rows: Sequence[RowChange]) -> Iterator[Payload]:
        """Rows of one versioned table from one transaction, in commit order (key-changing UPDATEs not split:
        whether to split is the sink's setting)."""
        ...


@runtime_checkable
class TableRouted(Protocol):
    """An encoder whose route is a function of the table alone (storage's DML worker bucket; the MySQL and lake sinks'
    ``row_payload.table_route``), so a writer task can pick its tables before decoding anything of them."""

    def table_route(self, schema: str, table: str) -> int:
        """The route of every payload of ``schema.table``."""
        ...


@dataclass(frozen=True, slots=True)
class Routed:
    """A payload as a writer task receives it: the table it belongs to and its order key ``(commit_ts, seq)``."""

    schema: str
    table: str
    version: int
    physical_table_id: int
    commit_ts: int
    seq: int
    nrows: int
    data: bytes
    info: TableInfo


def by_table(payloads: Iterable[Routed]) -> dict[tuple[str, str], list[Routed]]:
    """A writer task's payloads per table (``(schema, table)``), each table's in the commit order ``write`` is given
    them in: ``write_partition`` sorts shuffled rows, and a route-aligned task reads the relay log's chunks in commit
    order (every commit-ts above the last, ``seq`` counting up within the task). The writers that take a table's
    payloads together (MySQL's conflict slots, a lake table's one commit) check that order here, one comparison per
    payload, instead of sorting again. Raises SparkcdcError when a table's payloads are out of order (a bug)."""
    tables: dict[tuple[str, str], list[Routed]] = {}
    for p in payloads:
        chunks = tables.setdefault((p.schema, p.table), [])
        if chunks and (p.commit_ts, p.seq) < (chunks[-1].commit_ts, chunks[-1].seq):
            raise SparkcdcError(
                f"{p.schema}.{p.table}: a payload at (commit-ts, seq) ({p.commit_ts}, {p.seq}) came after "
                f"({chunks[-1].commit_ts}, {chunks[-1].seq}); sinks need each table's changes in commit order (a "
                "bug: please report it)"
            )
        chunks.append(p)
    return tables


@dataclass(frozen=True, slots=True)
class SinkContext:
    """Per changefeed run: ``sink_start_ts`` is TiCDC's TableSinkStartTs (the checkpoint the run started from);
    ``state_dir`` is the changefeed's private directory (for a sink's own bookkeeping)."""

    changefeed: str
    sink_start_ts: int
    state_dir: str


class SinkWriter(Protocol):
    def write(self, payloads: Iterable[Routed]) -> Any:
        """Make the task's payloads durable downstream; returns a picklable result for the committer. They come in
        commit order (``(commit_ts, seq)``), possibly as an iterator that reads them as it goes. Raises
        SparkcdcError: the batch fails and nothing of it is acknowledged."""
        ...


class SinkCommitter(Protocol):
    def start(self, tables: Callable[[], Sequence[TableInfo]]) -> None:
        """Once per changefeed run, before its first batch is published; ``tables()`` reads every replicated table
        at the run's start (for the simple protocol's ``send-all-bootstrap-at-start``)."""
        ...

    def recover(self) -> None:
        """Once per process that runs the changefeed, before its first batch is published there (the batch's tasks
        have ended, and a killed process's tasks are gone): clean up what a writer killed mid-batch left."""
        ...

    def commit(self, results: Sequence[Any], ddls: Sequence[DDLEvent]) -> None:
        """Publish what the batch's tasks made durable, then its DDLs (a batch's DDL is its last event: the DDL
        barrier). Called again for a batch Spark replays after a crash: must be idempotent."""
        ...

    def checkpoint(self, ts: int) -> None:
        """Everything with commit-ts <= ``ts`` is durable downstream: record it where consumers see it."""
        ...


class Sink(Protocol):
    """A sink that writes a redo log first (``[consistent] level = "eventual"``: only the MySQL sink, as in TiCDC)
    says so with a ``redo = True`` attribute; the others refuse that level (:func:`sink_config`)."""

    def config(self, uri: str, toml: Mapping[str, Any]) -> SinkConfig: ...

    def check(self, config: Any, tables: Callable[[], Sequence[TableInfo]]) -> None:
        """Control plane, at changefeed create and update: what can be checked of the downstream before running
        (the MySQL sink connects, as TiCDC does), and of ``tables()``, the tables the changefeed replicates from its
        start as far as the server knows them (a lake sink refuses a definition it cannot keep). Raises ConfigError
        saying what to fix; most sinks check nothing more than their config."""
        ...

    def encoder(self, config: Any, ctx: SinkContext) -> SinkEncoder: ...

    def writer(self, config: Any, ctx: SinkContext) -> SinkWriter: ...

    def committer(self, config: Any, ctx: SinkContext) -> SinkCommitter: ...


# URI scheme -> "module:attribute" of the Sink; imported when used, so validating a storage URI loads no Kafka.
SINKS: dict[str, str] = {
    "file": "sparkcdc.sink.storage:SINK",
    "s3": "sparkcdc.sink.storage:SINK",
    "gcs": "sparkcdc.sink.storage:SINK",
    "gs": "sparkcdc.sink.storage:SINK",
    "azure": "sparkcdc.sink.storage:SINK",
    "azblob": "sparkcdc.sink.storage:SINK",
    "noop": "sparkcdc.sink.storage:SINK",
    "blackhole": "sparkcdc.sink.blackhole:SINK",
    "kafka": "sparkcdc.sink.kafka:SINK",
    "kafka+ssl": "sparkcdc.sink.kafka:SINK",
    "mysql": "sparkcdc.sink.mysql:SINK",
    "mysql+ssl": "sparkcdc.sink.mysql:SINK",
    "tidb": "sparkcdc.sink.mysql:SINK",
    "tidb+ssl": "sparkcdc.sink.mysql:SINK",
    "delta": "sparkcdc.sink.lake:SINK",
    "iceberg": "sparkcdc.sink.lake:SINK",
}


def sink_for(uri: str) -> Sink:
    """The sink serving ``uri``'s scheme. Raises ConfigError naming the schemes there are."""
    try:
        scheme = urlsplit(uri).scheme.lower() if isinstance(uri, str) else ""
    except ValueError:
        scheme = ""
    if not uri or not scheme:
        raise ConfigError(
            f"sink uri invalid '{mask_uri(uri) if isinstance(uri, str) else repr(uri)}': missing scheme; "
            "use e.g. file:///path?protocol=canal-json",
            code=ERR_SINK_URI_INVALID,
        )
    target = SINKS.get(scheme)
    if target is None:
        raise ConfigError(
            f"unsupported scheme {scheme!r} in sink uri '{mask_uri(uri)}'; use one of: {', '.join(sorted(SINKS))}",
            code=ERR_SINK_URI_INVALID,
        )
    module, _, attr = target.partition(":")
    sink: Sink = getattr(importlib.import_module(module), attr)
    return sink


def check_sink(uri: str, toml: Mapping[str, Any] | None = None,
               tables: Callable[[], Sequence[TableInfo]] = tuple) -> SinkConfig:  # fmt: skip
    """:func:`sink_config`, then the sink's own check of its downstream and of ``tables()`` (changefeed create and
    update: the tables the changefeed replicates from its start; none by default)."""
    config = sink_config(uri, toml)
    sink_for(uri).check(config, tables)
    return config


def sink_config(uri: str, toml: Mapping[str, Any] | None = None) -> SinkConfig:
    """Validate ``uri`` with the changefeed config's TOML document (its ``[sink]`` table); the config the query
    will run with. Raises ConfigError (secrets masked)."""
    if not uri:
        raise ConfigError(
            "sink uri invalid '': sink_uri is empty, cannot create a changefeed without sink_uri",
            code=ERR_SINK_URI_INVALID,
        )
    sink = sink_for(uri)
    config = sink.config(uri, toml or {})
    if not getattr(sink, "redo", False) and ConsistentConfig.from_toml((toml or {}).get("consistent")).enabled:
        raise ConfigError(
            f'[consistent] level = "eventual" needs a MySQL-compatible sink (mysql://, tidb://), not '
            f"'{mask_uri(uri)}': TiCDC writes its redo log for those only; set level = \"none\"",
            code="CDC:ErrInvalidReplicaConfig",
        )
    return config
