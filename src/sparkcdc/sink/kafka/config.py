"""The Kafka sink's configuration: the sink URI merged with the changefeed's ``[sink]`` TOML, as TiCDC merges it.

One validating constructor, :meth:`KafkaSinkConfig.from_uri`. URI parameters beat ``[sink.kafka-config]``,
``[sink.kafka-config.codec-config]`` and ``[sink]`` (TiCDC's ``mergeConfig``); large-message handling, OAuth,
bootstrap and ``output-raw-change-event`` exist only in the TOML. Every problem is one ConfigError line with
TiCDC's code that names the key, where it came from and what to do; secrets never appear in errors, ``str`` or
``repr``. The config also yields the codec options for ``codec.base.message_encoder`` (:meth:`codec_options`),
the confluent-kafka producer settings (:meth:`producer_config`), the event router and the column selectors; the
codec options are checked by the codec's own config here, so a changefeed is refused at create, not at run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sparkcdc.changefeed import sink_keys
from sparkcdc.codec.avro.config import AvroConfig
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.simple.config import SimpleConfig
from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri
from sparkcdc.sink.kafka import config_merge as merge
from sparkcdc.sink.kafka import keys
from sparkcdc.sink.kafka.column_selector import ColumnSelectorRule, ColumnSelectors
from sparkcdc.sink.kafka.config_merge import (
    CODEC,
    DEFAULT_KAFKA_VERSION,
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_RETRY,
    DEFAULT_TIMEOUT_NS,
    KAFKA,
    LARGE,
    SINK,
)
from sparkcdc.sink.kafka.dispatcher import DispatchRule, EventRouter
from sparkcdc.sink.kafka.security import SaslConfig, TlsConfig, parse_sasl, parse_tls, security_protocol
from sparkcdc.sink.kafka.topic import validate_avro_expression
from sparkcdc.sink.kafka.uri import KafkaURI
from sparkcdc.sink_options import Sources, table

_CLIENT_ID_INVALID = re.compile(r'[?:,"]')
# Room librdkafka's own size check needs above the largest message the codec lets through (record overhead).
_CLIENT_SIZE_SLACK: Final = 1024
_NO_SASL: Final = SaslConfig()
_NO_TLS: Final = TlsConfig()


@dataclass(frozen=True, repr=False)
class KafkaSinkConfig:
    """Everything that shapes what the Kafka sink sends and how it connects. Durations are nanoseconds.

    ``partition_num`` 0 means "not set": use the topic's partition count, or 3 for a topic the sink creates
    (:func:`resolve_partition_num`). ``client_id`` is the configured ``kafka-client-id`` (``""`` for TiCDC's
    default, see :meth:`kafka_client_id`).
    """

    uri: KafkaURI
    protocol: str
    partition_num: int = 0
    replication_factor: int = 1
    kafka_version: str = DEFAULT_KAFKA_VERSION
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_retry: int = DEFAULT_MAX_RETRY
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    compression: str = "none"
    client_id: str = ""
    auto_create_topic: bool = True
    dial_timeout_ns: int = DEFAULT_TIMEOUT_NS
    read_timeout_ns: int = DEFAULT_TIMEOUT_NS
    write_timeout_ns: int = DEFAULT_TIMEOUT_NS
    required_acks: int = -1
    sasl: SaslConfig = _NO_SASL
    tls: TlsConfig = _NO_TLS
    enable_tidb_extension: bool = False
    only_output_updated_columns: bool = False
    content_compatible: bool = False
    delete_only_output_handle_key_columns: bool = False
    encoding_format: str = "json"
    large_message_handle_option: str = "none"
    large_message_handle_compression: str = "none"
    claim_check_storage_uri: str = ""
    claim_check_raw_value: bool = False
    output_raw_change_event: bool = False
    send_bootstrap_interval_in_sec: int = 120
    send_bootstrap_in_msg_count: int = 10000
    send_bootstrap_to_all_partition: bool = True
    send_all_bootstrap_at_start: bool = False
    encoder_concurrency: int = 32
    avro_decimal_handling_mode: str = "precise"
    avro_bigint_unsigned_handling_mode: str = "long"
    avro_enable_watermark: bool = False
    schema_registry: str = ""
    dispatch_rules: tuple[DispatchRule, ...] = ()
    column_selector_rules: tuple[ColumnSelectorRule, ...] = ()
    case_sensitive: bool = False

    @classmethod
    def from_uri(cls, uri: str | KafkaURI, toml: Mapping[str, Any] | None = None) -> KafkaSinkConfig:
        """Build the config from a sink URI and the changefeed's TOML document (its ``sink`` table is read; the
        top-level ``case-sensitive`` too). Raises ConfigError (one line, secrets masked)."""
        parsed = uri if isinstance(uri, KafkaURI) else KafkaURI.parse(uri)
        doc = toml or {}
        sink = table(doc, "sink", "the changefeed config", sink_keys.SINK_KEYS)
        kafka = table(sink, "kafka-config", SINK, keys.KAFKA_CONFIG_KEYS)
        codec = table(kafka, "codec-config", KAFKA, keys.CODEC_CONFIG_KEYS)
        large = table(kafka, "large-message-handle", KAFKA, keys.LARGE_MESSAGE_KEYS)
        table(kafka, "glue-schema-registry-config", KAFKA, keys.GLUE_KEYS)
        for key, _ in parsed.params:
            if key not in keys.URI_PARAMS:
                raise ConfigError(
                    f"unknown kafka sink URI parameter {key!r}; allowed: {', '.join(sorted(keys.URI_PARAMS))}",
                    code="CDC:ErrSinkURIInvalid",
                )
        src = Sources(dict(parsed.params), {SINK: sink, KAFKA: kafka, CODEC: codec, LARGE: large})
        v: dict[str, Any] = {"uri": parsed, "protocol": merge.protocol(src)}
        merge.kafka_options(src, v)
        v["sasl"] = parse_sasl(src)
        v["tls"] = parse_tls(src)
        merge.codec_options(src, v)
        merge.large_message(src, v)
        merge.sink_options(src, doc, v)
        cfg = cls(**v)
        cfg._check_codec()
        if cfg.protocol == "avro":
            cfg._check_avro(doc)
        cfg.event_router()
        cfg.column_selectors()
        return cfg

    # -- what the pipeline needs ------------------------------------------------------------------------
    @property
    def flush_interval(self) -> float:
        """Seconds between micro-batches while caught up: a message queue is for low latency (TiCDC's MQ sink
        sends as soon as it has events), so half a second, Spark's trigger poll."""
        return 0.5

    @property
    def worker_count(self) -> int:
        """Producer tasks; each owns whole topic-partitions (bounded further by the cluster's task slots)."""
        return 16

    @property
    def topic(self) -> str:
        """The default topic (the URI's path)."""
        return self.uri.topic

    @property
    def bootstrap_enabled(self) -> bool:
        """TiCDC sends BOOTSTRAP messages only for simple with a positive interval and message count."""
        interval, count = self.send_bootstrap_interval_in_sec, self.send_bootstrap_in_msg_count
        return self.protocol == "simple" and interval > 0 and count > 0

    def event_router(self) -> EventRouter:
        return EventRouter(self.dispatch_rules, self.topic, case_sensitive=self.case_sensitive)

    def column_selectors(self) -> ColumnSelectors:
        return ColumnSelectors(self.column_selector_rules, case_sensitive=self.case_sensitive)

    def codec_options(self, time_zone: str | None = None) -> dict[str, Any]:
        """Options for ``sparkcdc.codec.base.message_encoder(self.protocol, options)`` with the codec's key names.

        ``time_zone`` is the capture server's zone for simple's TIMESTAMP ``location`` (the codec's default when
        None). Both codecs check ``max-message-bytes`` and handle large messages themselves.
        """
        large: dict[str, Any] = {
            "enable-tidb-extension": self.enable_tidb_extension,
            "max-message-bytes": self.max_message_bytes,
            "large-message-handle-option": self.large_message_handle_option,
            "large-message-handle-compression": self.large_message_handle_compression,
            "claim-check-storage-uri": self.claim_check_storage_uri,
            "claim-check-raw-value": self.claim_check_raw_value,
        }
        if self.protocol == "avro":
            return {
                "enable-tidb-extension": self.enable_tidb_extension,
                "max-message-bytes": self.max_message_bytes,
                "avro-decimal-handling-mode": self.avro_decimal_handling_mode,
                "avro-bigint-unsigned-handling-mode": self.avro_bigint_unsigned_handling_mode,
                "avro-enable-watermark": self.avro_enable_watermark,
                "schema-registry": self.schema_registry,
            }
        if self.protocol == "canal-json":
            return {
                **large,
                "content-compatible": self.content_compatible,
                "only-output-updated-columns": self.only_output_updated_columns,
                "delete-only-output-handle-key-columns": self.delete_only_output_handle_key_columns,
            }
        out: dict[str, Any] = {
            **large,
            "encoding-format": self.encoding_format,
            "send-bootstrap-interval-in-sec": self.send_bootstrap_interval_in_sec,
            "send-bootstrap-in-msg-count": self.send_bootstrap_in_msg_count,
            "send-bootstrap-to-all-partition": self.send_bootstrap_to_all_partition,
            "send-all-bootstrap-at-start": self.send_all_bootstrap_at_start,
        }
        if time_zone is not None:
            out["time-zone"] = time_zone
        return out

    def kafka_client_id(self, capture_addr: str, namespace: str, changefeed_id: str) -> str:
        """TiCDC's ``NewKafkaClientID``: the configured id, else ``TiCDC_producer_<addr>_<ns>_<changefeed>`` with
        ``? : , "`` replaced by ``_``. Raises ConfigError (``CDC:ErrKafkaInvalidClientID``) for an illegal id."""
        client_id = self.client_id or _CLIENT_ID_INVALID.sub(
            "_", f"TiCDC_producer_{capture_addr}_{namespace}_{changefeed_id}"
        )
        if merge.CLIENT_ID.fullmatch(client_id) is None:
            raise ConfigError(
                f"invalid kafka client ID {client_id!r}; use letters, digits, '.', '_' and '-'",
                code="CDC:ErrKafkaInvalidClientID",
            )
        return client_id

    def producer_config(
        self, client_id: str | None = None, overrides: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """confluent-kafka ``Producer`` settings.

        ``acks=-1`` gets the idempotent producer (ordered, no duplicates from retries); with ``0``/``1``
        idempotence is impossible, so one request in flight keeps each partition ordered (TiCDC's
        ``MaxOpenRequests=1``). ``batch.size`` stays within ``max-message-bytes`` so the broker's limit holds for
        whole batches; ``message.max.bytes`` leaves room above it so a message the codec let through is never
        refused by the client. Timeouts map to librdkafka's socket timeouts. ``overrides`` wins.
        """
        acks = self.required_acks
        cfg: dict[str, Any] = {
            **self.connection_config(client_id),
            "acks": "all" if acks == -1 else str(acks),
            "enable.idempotence": acks == -1,
            "compression.type": self.compression,
            "message.max.bytes": min(max(self.max_message_bytes + _CLIENT_SIZE_SLACK, 1000), 1_000_000_000),
            "batch.size": max(1, min(1_000_000, self.max_message_bytes)),
            "linger.ms": 5,
            # A message not acknowledged within write-timeout fails the batch (the changefeed shows a warning
            # and retries) instead of waiting librdkafka's default five minutes for a broker that is gone.
            "message.timeout.ms": max(1000, self.write_timeout_ns // 1_000_000),
        }
        if acks == -1:
            cfg["max.in.flight.requests.per.connection"] = 5
        else:
            cfg["max.in.flight.requests.per.connection"] = 1
            cfg["retries"] = self.max_retry
        cfg.update(overrides or {})
        return cfg

    def connection_config(self, client_id: str | None = None) -> dict[str, Any]:
        """Settings every client of the sink shares (producer and admin): brokers, client id, timeouts and
        security. Producer-only keys stay out: librdkafka warns about them on an admin client."""
        cfg: dict[str, Any] = {
            "bootstrap.servers": self.uri.bootstrap_servers,
            "client.id": client_id or self.client_id or "sparkcdc_producer",
            "socket.connection.setup.timeout.ms": max(1000, self.dial_timeout_ns // 1_000_000),
            "socket.timeout.ms": max(10, max(self.read_timeout_ns, self.write_timeout_ns) // 1_000_000),
            "security.protocol": security_protocol(self.sasl, self.tls),
        }
        cfg.update(self.sasl.librdkafka())
        cfg.update(self.tls.librdkafka())
        return cfg

    # -- validation ----------------------------------------------------------------------------------
    def _check_codec(self) -> None:
        # TiCDC wraps the codec's refusal in CDC:ErrSinkInvalidConfig (GetEncoderConfig).
        try:
            if self.protocol == "canal-json":
                CanalJsonConfig.from_options(self.codec_options())
            elif self.protocol == "avro":
                AvroConfig.from_options(self.codec_options())
            else:
                SimpleConfig.from_options(self.codec_options())
        except ConfigError as e:
            raise ConfigError(e.message, code="CDC:ErrSinkInvalidConfig") from e

    def _check_avro(self, doc: Mapping[str, Any]) -> None:
        """What TiCDC refuses for avro: force-replicate (a table without a handle key has no key schema), and a
        dispatcher topic expression that could put two tables in one topic (one subject per topic: TiCDC's
        ``ValidateForAvro``). Raises ConfigError."""
        if doc.get("force-replicate") is True:
            raise ConfigError(
                "force-replicate must be disabled, when using avro protocol; set force-replicate = false",
                code="CDC:ErrCodecInvalidConfig",
            )
        for rule in self.dispatch_rules:
            validate_avro_expression(rule.topic)

    def __repr__(self) -> str:
        return (
            f"KafkaSinkConfig(uri={self.uri.masked()!r}, protocol={self.protocol!r}, topic={self.topic!r}, "
            f"partition_num={self.partition_num}, replication_factor={self.replication_factor}, "
            f"max_message_bytes={self.max_message_bytes}, compression={self.compression!r}, "
            f"required_acks={self.required_acks}, sasl={self.sasl!r}, tls={self.tls!r}, "
            f"dispatchers={len(self.dispatch_rules)}, column_selectors={len(self.column_selector_rules)}"
            + (f", schema_registry={mask_uri(self.schema_registry)!r})" if self.schema_registry else ")")
        )

    __str__ = __repr__
