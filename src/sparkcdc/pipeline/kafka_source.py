"""``format("ticdc-kafka")``: a Spark Python Data Source over a TiCDC Kafka topic, batch and streaming.

Register once per SparkSession, then read with one line::

    from sparkcdc.pipeline.kafka_source import register
    register(spark)
    df = spark.read.format("ticdc-kafka").load("kafka://127.0.0.1:9092/cdc?protocol=simple")
    q = spark.readStream.format("ticdc-kafka").load("kafka://…/cdc?protocol=canal-json&enable-tidb-extension=true")

The path is the changefeed's Kafka sink URI (``kafka://host1:9092,host2:9092/topic?protocol=…``, TiCDC's
parameters, SASL/TLS included); the messages are canal-json, simple JSON or simple Avro (``encoding-format=avro``), or
TiCDC's avro (``protocol=avro``) read through the changefeed's schema registry.
canal-json carries commit-ts only with ``enable-tidb-extension=true``; without it rows come with ``commit_ts`` 0. The
path must say what the changefeed set: a message with ``_tidb`` read without the extension, or one without read
with it, fails the read naming topic, partition and offset. Spark's own Kafka source is not used: its connector
jar is not part of PySpark. Options:

==============================  ================================================================================
``protocol``                    ``canal-json`` or ``simple`` (or ``?protocol=`` in the path)
``encoding-format``             simple: ``json`` (default) or ``avro`` (or in the path)
``enable-tidb-extension``       canal-json, avro: what the changefeed sets (or in the path; default ``false``)
``schema-registry``             avro: the changefeed's registry, ``http(s)://[user:password@]host:port`` (or in
                                the path); ``avro-enable-watermark`` and the two ``avro-*-handling-mode``
                                options: what the changefeed sets (or in the path)
``claim-check-storage-uri``     the changefeed's ``claim-check-storage-uri``: rows of large messages are read
                                from their claim-check files there (``claim-check-raw-value`` too)
``startingOffsets``             ``earliest`` (default), ``latest``, or JSON ``{"0": 12, "1": -2}`` (-2 earliest,
                                -1 latest; partitions not named start at the earliest)
``up-to-watermark``             batch only: ``true`` keeps only rows with commit-ts <= the smallest last
                                watermark of all partitions (every row up to it is in the topic); not for
                                canal-json without the extension, which has no watermarks
``skip-undecodable``            simple: ``true`` drops (and logs the count of) rows whose table schema is in no
                                message of their partition instead of failing
==============================  ================================================================================

The columns are exactly those of ``format("ticdc")`` (``sparkcdc.pipeline.source_rows``), with the same value
texts, so a query switches between the sources by changing ``format`` and the path. For Kafka: ``file`` is
``"<topic>/<kafka partition>"``, ``row_number`` the message's Kafka offset (one row per message), ``partition``
0 (the storage layout's TiDB-partition directory has no counterpart: a message does not say whether its table
is partitioned), ``table_version`` simple's ``schemaVersion`` (the storage layout's table version) and 0 for
canal-json, whose messages carry no version.

Only rows are emitted, in offset order per Kafka partition, which is commit order; DDL, WATERMARK and BOOTSTRAP
messages are consumed. A row re-sent after a sink restart with a commit-ts at or below a watermark its partition
already had is dropped, as TiCDC's consumer does (``kafka_partition``); other re-sends stay (at least once), and so
does every row without a commit-ts.
How rows of a simple topic get their schema when a reader starts mid-partition, and what is never decodable:
``sparkcdc.pipeline.kafka_partition``. A message that is not TiCDC's (corrupt, truncated, foreign) fails the
read with one error naming topic, partition and offset; so does a handle-key-only message (it names claim-check
as the remedy).

Batch: one Spark partition per Kafka partition, each from its start (``startingOffsets``) to the end the driver
found when planning. Streaming offsets are ``{"<partition>": <next offset to read>, …}``; each micro-batch reads
``[previous, latest)`` of every partition that moved. The end of a partition is found by reading, not from the
broker's high watermark (wrong on some Kafka-protocol brokers: ``sparkcdc.pipeline.kafka_topic``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import orjson
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

from sparkcdc.errors import ConfigError, KafkaError
from sparkcdc.pipeline.source_rows import SCHEMA, change_row, flag

if TYPE_CHECKING:
    from sparkcdc.sink.kafka.config import KafkaSinkConfig

log = logging.getLogger(__name__)

NAME: Final = "ticdc-kafka"
EARLIEST: Final = -2
LATEST: Final = -1
_URI_OPTIONS: Final = (
    "protocol", "encoding-format", "enable-tidb-extension", "schema-registry", "avro-enable-watermark",
    "avro-decimal-handling-mode", "avro-bigint-unsigned-handling-mode",
)  # fmt: skip
_OPTIONS: Final = frozenset({"path", *_URI_OPTIONS, "claim-check-storage-uri", "claim-check-raw-value",
                             "startingoffsets", "up-to-watermark", "skip-undecodable"})  # fmt: skip
_CLIENT_ID: Final = "sparkcdc_ticdc_kafka"


def register(spark: Any) -> None:
    """Make ``spark.read.format("ticdc-kafka")`` / ``spark.readStream.format("ticdc-kafka")`` available (safe for
    several streams of it starting at once: see ``sparkcdc.pipeline.registration``)."""
    from sparkcdc.pipeline.registration import register_data_source

    register_data_source(spark, TicdcKafkaDataSource)


@dataclass(frozen=True)
class KafkaSourceConfig:
    """The string options turned into a validated config on the driver (it pickles to the executors).

    ``starting`` is ``{partition: offset}`` with :data:`EARLIEST`/:data:`LATEST` for the symbolic ones."""

    sink: KafkaSinkConfig
    starting: Mapping[int, int]
    up_to_watermark: bool = False
    skip_undecodable: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> KafkaSourceConfig:
        """Raises ConfigError naming an unknown option, a malformed path or value, or ``up-to-watermark`` on
        canal-json without ``enable-tidb-extension`` (such a topic has no watermarks)."""
        from sparkcdc.sink.kafka.config import KafkaSinkConfig
        from sparkcdc.sink.kafka.uri import KafkaURI

        opts = {k.lower(): v for k, v in options.items()}
        unknown = sorted(set(opts) - _OPTIONS)
        if unknown:
            raise ConfigError(
                f'format("{NAME}"): unknown option(s) {", ".join(map(repr, unknown))}; use: '
                f"{', '.join([*sorted(_OPTIONS - {'path', 'startingoffsets'}), 'startingOffsets'])}"
            )
        path = opts.get("path", "")
        if not path:
            raise ConfigError(f'format("{NAME}") needs a path: .load("kafka://127.0.0.1:9092/topic?protocol=simple")')
        uri = KafkaURI.parse(path)
        for key in _URI_OPTIONS:
            if key not in opts:
                continue
            given = uri.param(key)
            if given is not None and given.lower() != opts[key].lower():
                raise ConfigError(f"option {key}={opts[key]!r} contradicts {key}={given!r} in the path {uri}")
            if given is None:
                path += ("&" if "?" in path else "?") + f"{key}={quote(opts[key], safe='')}"
        large: dict[str, Any] = {}
        if "claim-check-storage-uri" in opts:
            large["claim-check-storage-uri"] = opts["claim-check-storage-uri"]
        if "claim-check-raw-value" in opts:
            large["claim-check-raw-value"] = flag(opts, "claim-check-raw-value")
        sink = KafkaSinkConfig.from_uri(path, {"sink": {"kafka-config": {"large-message-handle": large}}})
        up_to_watermark = flag(opts, "up-to-watermark")
        if up_to_watermark and sink.protocol == "avro" and not sink.avro_enable_watermark:
            raise ConfigError(
                "option up-to-watermark needs watermarks, and avro has them only with enable-tidb-extension=true and "
                "avro-enable-watermark=true: set both in the path if the changefeed sets them, else leave "
                "up-to-watermark out",
                code="CDC:ErrKafkaInvalidConfig",
            )
        if up_to_watermark and sink.protocol == "canal-json" and not sink.enable_tidb_extension:
            raise ConfigError(
                "option up-to-watermark needs watermarks, and canal-json has them only with the TiDB extension: set "
                "enable-tidb-extension=true in the path if the changefeed sets it, else leave up-to-watermark out",
                code="CDC:ErrKafkaInvalidConfig",
            )
        return cls(
            sink=sink,
            starting=_starting_offsets(opts.get("startingoffsets", "earliest")),
            up_to_watermark=up_to_watermark,
            skip_undecodable=flag(opts, "skip-undecodable"),
        )

    @property
    def topic(self) -> str:
        return self.sink.topic

    @property
    def protocol(self) -> str:
        return self.sink.protocol

    def consumer_settings(self) -> dict[str, Any]:
        from sparkcdc.pipeline.kafka_topic import consumer_settings

        return consumer_settings(self.sink.connection_config(_CLIENT_ID))

    def decoder(self) -> Any:
        """A fresh decoder for one partition; it reads claim-check files from ``claim-check-storage-uri``."""
        from sparkcdc.storage.claim_check import claim_check_reader

        if self.protocol == "avro":
            from sparkcdc.consumer.kafka_avro import avro_decoder

            return avro_decoder(self.sink)
        options = self.sink.codec_options()
        reader = claim_check_reader(self.sink.claim_check_storage_uri)
        if self.protocol == "canal-json":
            from sparkcdc.codec.canal_json.config import CanalJsonConfig
            from sparkcdc.codec.canal_json.decoder import CanalJsonMessageDecoder

            return CanalJsonMessageDecoder(CanalJsonConfig.from_options(options), claim_check_reader=reader,
                                           check_extension=True)  # fmt: skip
        from sparkcdc.codec.simple.config import SimpleConfig
        from sparkcdc.codec.simple.decoder import SimpleDecoder

        config = SimpleConfig.from_options(options)
        return SimpleDecoder(config, claim_check_reader=reader, drop_undecodable=self.skip_undecodable)


def _starting_offsets(text: str) -> dict[int, int]:
    """``earliest``/``latest`` as ``{-1: EARLIEST|LATEST}`` (every partition), or the JSON object's offsets."""
    word = text.strip().lower()
    if word in ("earliest", "latest"):
        return {-1: EARLIEST if word == "earliest" else LATEST}
    try:
        raw = orjson.loads(text)
    except orjson.JSONDecodeError:
        raw = None
    ok = isinstance(raw, dict) and all(
        isinstance(k, str) and k.isdigit() and type(v) is int and v >= EARLIEST for k, v in raw.items()
    )
    if not ok:
        raise ConfigError(
            f"startingOffsets {text!r} is not earliest, latest or a JSON object of partition -> offset "
            '(e.g. {"0": 12, "1": -2}; -2 earliest, -1 latest)'
        )
    return {int(k): v for k, v in raw.items()}


class KafkaRange(InputPartition):
    """Offsets ``[start, end)`` of one Kafka partition (``start`` :data:`EARLIEST`: the partition's first
    offset); rows with commit-ts above ``high`` are left out (None: none)."""

    def __init__(self, partition: int, start: int, end: int, high: int | None = None) -> None:
        self.partition = partition
        self.start = start
        self.end = end
        self.high = high


def _bounds(cfg: KafkaSourceConfig) -> dict[int, tuple[int, int]]:
    from sparkcdc.pipeline.kafka_topic import open_consumer, partition_bounds

    consumer = open_consumer(cfg.consumer_settings())
    try:
        return partition_bounds(consumer, cfg.topic)
    finally:
        consumer.close()


def _first_offsets(cfg: KafkaSourceConfig, bounds: Mapping[int, tuple[int, int]]) -> dict[int, int]:
    """Where each partition starts by ``startingOffsets``. Raises ConfigError for a partition the topic lacks."""
    extra = sorted(set(cfg.starting) - {-1} - set(bounds))
    if extra:
        raise ConfigError(f"startingOffsets names partition(s) {extra} that topic {cfg.topic!r} does not have")
    out = {}
    for p, (low, end) in bounds.items():
        want = cfg.starting.get(p, cfg.starting.get(-1, EARLIEST))
        out[p] = low if want == EARLIEST else end if want == LATEST else max(low, want)
    return out


def _plan_batch(cfg: KafkaSourceConfig) -> list[InputPartition]:
    bounds = _bounds(cfg)
    starts = _first_offsets(cfg, bounds)
    high = _global_watermark(cfg, bounds) if cfg.up_to_watermark else None
    return [KafkaRange(p, starts[p], end, high) for p, (_, end) in bounds.items() if end > starts[p]]


def _global_watermark(cfg: KafkaSourceConfig, bounds: Mapping[int, tuple[int, int]]) -> int:
    """The smallest last watermark over all partitions: every row up to it is in the topic."""
    from sparkcdc.pipeline.kafka_partition import marker_reader
    from sparkcdc.pipeline.kafka_topic import last_watermark, open_consumer

    settings = cfg.consumer_settings()
    marker = marker_reader(cfg.protocol, cfg.decoder())
    return min(
        last_watermark(lambda: open_consumer(settings), cfg.topic, p, low, end, marker)
        for p, (low, end) in bounds.items()
    )


def _read(cfg: KafkaSourceConfig, part: InputPartition) -> Iterator[tuple[Any, ...]]:
    if not isinstance(part, KafkaRange):
        return  # Spark's placeholder partition when the plan is empty
    from sparkcdc.pipeline.kafka_partition import PartitionRows, marker_reader
    from sparkcdc.pipeline.kafka_topic import PrefixScan, first_offset, open_consumer, read_range

    settings = cfg.consumer_settings()
    topic, p = cfg.topic, part.partition
    consumer = open_consumer(settings)
    prefix: PrefixScan | None = None
    try:
        low = first_offset(consumer, topic, p)
        start = low if part.start == EARLIEST else part.start
        if start < low:
            raise KafkaError(
                f"topic {topic} partition {p}: offsets {start} to {low - 1} are gone (deleted by retention?); their "
                "rows cannot be read",
                retryable=False,
            )
        if start > low:
            marker = marker_reader(cfg.protocol, cfg.decoder())
            prefix = PrefixScan(lambda: open_consumer(settings), topic, p, low, start, marker)
        rows = PartitionRows(cfg.decoder(), topic=topic, partition=p, prefix=prefix,
                             skip_undecodable=cfg.skip_undecodable)  # fmt: skip
        file = f"{topic}/{p}"
        for offset, key, value in read_range(consumer, topic, p, start, part.end):
            for at, row in rows.feed(offset, value, key):
                if part.high is not None and row.commit_ts > part.high:
                    continue
                t = row.table
                yield change_row(row, t.schema, t.table, t.version, 0, file, at)
        rows.finish()
        if rows.dropped:
            log.warning("topic %s partition %d [%d, %d): %d row(s) that can never be decoded dropped "
                        "(skip-undecodable)", topic, p, start, part.end, rows.dropped)  # fmt: skip
        if rows.fallback:
            log.info("topic %s partition %d [%d, %d): %d row(s) re-sent at or below a watermark of their partition "
                     "left out (delivery is at least once)", topic, p, start, part.end, rows.fallback)  # fmt: skip
    finally:
        consumer.close()
        if prefix is not None:
            prefix.close()


class TicdcKafkaReader(DataSourceReader):
    def __init__(self, cfg: KafkaSourceConfig) -> None:
        self.cfg = cfg

    def partitions(self) -> Sequence[InputPartition]:
        return _plan_batch(self.cfg)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        yield from _read(self.cfg, partition)


class TicdcKafkaStreamReader(DataSourceStreamReader):
    """Offsets ``{"<partition>": <next offset to read>}``: Kafka's own durable positions."""

    def __init__(self, cfg: KafkaSourceConfig) -> None:
        self.cfg = cfg

    def initialOffset(self) -> dict[str, int]:
        return {str(p): o for p, o in _first_offsets(self.cfg, _bounds(self.cfg)).items()}

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        floor = start or {}
        return {str(p): max(end, int(floor.get(str(p), 0))) for p, (_, end) in _bounds(self.cfg).items()}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        out: list[InputPartition] = []
        for key, stop in sorted(end.items(), key=lambda kv: int(kv[0])):
            first = int(start.get(key, EARLIEST))
            if int(stop) > max(first, 0):
                out.append(KafkaRange(int(key), first, int(stop)))
        return out

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        yield from _read(self.cfg, partition)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to do: the topic belongs to the producer, and no consumer group is used."""


class TicdcKafkaDataSource(DataSource):
    """``format("ticdc-kafka")``; see the module docstring for the path, options and columns."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return TicdcKafkaReader(KafkaSourceConfig.from_options(dict(self.options)))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        cfg = KafkaSourceConfig.from_options(dict(self.options))
        if cfg.up_to_watermark:
            raise ConfigError(
                "option up-to-watermark is for batch reads (spark.read); a stream ends at the latest offset"
            )
        return TicdcKafkaStreamReader(cfg)
