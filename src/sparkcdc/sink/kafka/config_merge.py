"""Merging the sink URI with the changefeed's TOML into :class:`~sparkcdc.sink.kafka.config.KafkaSinkConfig` values.

One function per group of TiCDC settings; each reads through :class:`~sparkcdc.sink_options.Sources` (URI
first) and writes validated values into a dict of config fields. TiCDC's codes: ``CDC:ErrKafkaInvalidConfig`` and
its narrower Kafka codes for producer options, ``CDC:ErrCodecInvalidConfig`` for codec options,
``CDC:ErrInvalidReplicaConfig`` for large-message handling and unknown TOML keys, ``CDC:ErrSinkUnknownProtocol``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Final

from sparkcdc.errors import ConfigError
from sparkcdc.sink.kafka import keys
from sparkcdc.sink.kafka.column_selector import parse_column_selectors
from sparkcdc.sink.kafka.dispatcher import parse_dispatch_rules
from sparkcdc.sink_options import (
    ERR_REPLICA,
    INT16,
    INT32,
    Setting,
    Sources,
    as_bool,
    as_choice,
    as_duration_ns,
    as_int,
    as_str,
)
from sparkcdc.storage.sink_uri import SinkURI

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES: Final = 10 * 1024 * 1024
DEFAULT_MAX_BATCH_SIZE: Final = 16
DEFAULT_MAX_RETRY: Final = 5
DEFAULT_TIMEOUT_NS: Final = 10 * 1_000_000_000
DEFAULT_KAFKA_VERSION: Final = "2.4.0"
COMPRESSIONS: Final = ("none", "gzip", "snappy", "lz4", "zstd")
LARGE_MESSAGE_OPTIONS: Final = ("none", "handle-key-only", "claim-check")
LARGE_MESSAGE_COMPRESSIONS: Final = ("none", "snappy", "lz4")

ERR_CODEC: Final = "CDC:ErrCodecInvalidConfig"
SINK, KAFKA, CODEC, LARGE = (
    "[sink]",
    "[sink.kafka-config]",
    "[sink.kafka-config.codec-config]",
    "[sink.kafka-config.large-message-handle]",
)
CLIENT_ID: Final = re.compile(r"[A-Za-z0-9._-]+")
_KAFKA_VERSION = re.compile(r"0\.\d+\.\d+\.\d+|[1-9]\d*\.\d+\.\d+")


def protocol(src: Sources) -> str:
    from_uri, from_toml = src.uri.get("protocol"), src.toml(SINK, "protocol")
    if from_toml is not None:
        as_str(from_toml, "", code="CDC:ErrSinkUnknownProtocol")
    if from_uri is not None and from_toml is not None and from_toml.value and from_uri != from_toml.value:
        log.warning("sink URI protocol %r overrides [sink] protocol %r", from_uri, from_toml.value)
    raw = from_uri if from_uri is not None else (from_toml.value if from_toml is not None else "")
    protocol = raw.strip().lower()
    if protocol == "flat-avro":  # TiCDC's other name of avro
        protocol = "avro"
    if not protocol:
        raise ConfigError(
            "protocol is required for a kafka sink; add protocol=canal-json, protocol=simple or protocol=avro to the "
            "sink URI",
            code="CDC:ErrSinkUnknownProtocol",
        )
    if protocol not in keys.KNOWN_PROTOCOLS:
        raise ConfigError(
            f"unknown protocol {raw!r}; use one of: {', '.join(keys.SUPPORTED_PROTOCOLS)}",
            code="CDC:ErrSinkUnknownProtocol",
        )
    if protocol not in keys.SUPPORTED_PROTOCOLS:
        raise ConfigError(
            f"protocol {raw!r} is not supported by sparkcdc's kafka sink; use avro, canal-json or simple",
            code="CDC:ErrSinkUnknownProtocol",
        )
    return protocol


def kafka_options(src: Sources, v: dict[str, Any]) -> None:
    def pick(key: str) -> Setting | None:
        return src.pick(key, KAFKA)

    partitions = pick("partition-num")
    v["partition_num"] = as_int(partitions, 0, INT32, code="CDC:ErrKafkaInvalidPartitionNum")
    if partitions is not None and v["partition_num"] <= 0:
        raise partitions.fail("invalid partition num; use a positive number", "CDC:ErrKafkaInvalidPartitionNum")
    factor = pick("replication-factor")
    v["replication_factor"] = as_int(factor, 1, INT16)
    if factor is not None and v["replication_factor"] < 1 and v["replication_factor"] != -1:
        raise factor.fail("use a positive number (or -1 for the broker's default)")
    version = pick("kafka-version")
    v["kafka_version"] = as_str(version, DEFAULT_KAFKA_VERSION, code="CDC:ErrKafkaInvalidVersion")
    if version is not None and _KAFKA_VERSION.fullmatch(v["kafka_version"]) is None:
        raise version.fail("use a version such as 2.4.0 or 0.11.0.2", "CDC:ErrKafkaInvalidVersion")
    size = pick("max-message-bytes")
    v["max_message_bytes"] = as_int(size, DEFAULT_MAX_MESSAGE_BYTES, code=ERR_CODEC)
    if size is not None and v["max_message_bytes"] <= 0:
        raise size.fail("must be greater than 0", ERR_CODEC)
    retry = src.pick("max-retry")
    max_retry = as_int(retry, DEFAULT_MAX_RETRY, INT32)
    if max_retry < 0:
        log.warning("max-retry %d is negative; using %d", max_retry, DEFAULT_MAX_RETRY)
        max_retry = DEFAULT_MAX_RETRY
    v["max_retry"] = max_retry
    v["compression"] = as_choice(pick("compression"), "none", COMPRESSIONS)
    client = pick("kafka-client-id")
    v["client_id"] = as_str(client, "", code="CDC:ErrKafkaInvalidClientID")
    if client is not None and v["client_id"] and CLIENT_ID.fullmatch(v["client_id"]) is None:
        raise client.fail("use letters, digits, '.', '_' and '-'", "CDC:ErrKafkaInvalidClientID")
    v["auto_create_topic"] = as_bool(pick("auto-create-topic"), True)
    for key in ("dial-timeout", "read-timeout", "write-timeout"):
        v[key.replace("-", "_") + "_ns"] = as_duration_ns(pick(key), DEFAULT_TIMEOUT_NS)
    acks = pick("required-acks")
    v["required_acks"] = as_int(acks, -1, INT32, code="CDC:ErrKafkaInvalidRequiredAcks")
    if acks is not None and v["required_acks"] not in (-1, 0, 1):
        raise acks.fail("invalid required acks; use -1 (all), 0 or 1", "CDC:ErrKafkaInvalidRequiredAcks")


def codec_options(src: Sources, v: dict[str, Any]) -> None:
    protocol = v["protocol"]
    v["enable_tidb_extension"] = as_bool(src.pick("enable-tidb-extension", CODEC, SINK), False, ERR_CODEC)
    batch = src.pick("max-batch-size", CODEC)
    v["max_batch_size"] = as_int(batch, DEFAULT_MAX_BATCH_SIZE, code=ERR_CODEC)
    if batch is not None and v["max_batch_size"] <= 0:
        raise batch.fail("must be greater than 0", ERR_CODEC)
    v["content_compatible"] = as_bool(src.pick("content-compatible", SINK), False, ERR_CODEC)
    v["only_output_updated_columns"] = as_bool(src.pick("only-output-updated-columns", SINK), False, ERR_CODEC)
    fmt = src.pick("encoding-format", CODEC)
    v["encoding_format"] = as_choice(fmt, "json", ("json", "avro"), ERR_CODEC)
    for key in keys.OTHER_PROTOCOL_PARAMS | (frozenset() if protocol == "avro" else keys.AVRO_PARAMS):
        setting = src.pick(key, CODEC, SINK)
        if setting is not None:
            log.warning("%s in %s has no effect with protocol %s", key, setting.where, protocol)
    if protocol == "avro":
        avro_options(src, v)
    if protocol == "simple":
        for key in ("content-compatible", "only-output-updated-columns"):
            if v[key.replace("-", "_")]:
                log.warning("%s has no effect with protocol simple", key)


def avro_options(src: Sources, v: dict[str, Any]) -> None:
    """TiCDC's avro settings (``codec/common/config.go``): the handling modes (an empty value keeps the default), the
    testing-mode watermarks (only with the TiDB extension), and the Confluent registry, which is required: the URI's
    ``schema-registry`` beats ``[sink] schema-registry`` (what ``--schema-registry`` sets)."""
    for key, default, choices in (
        ("avro-decimal-handling-mode", "precise", ("precise", "string")),
        ("avro-bigint-unsigned-handling-mode", "long", ("long", "string")),
    ):
        setting = src.pick(key, CODEC)
        value = as_str(setting, "", code=ERR_CODEC) or default
        if setting is not None and value not in choices:
            raise setting.fail(f'{key} value could only be "{choices[1]}" or "{choices[0]}"', ERR_CODEC)
        v[key.replace("-", "_")] = value
    watermark = src.pick("avro-enable-watermark", CODEC)
    v["avro_enable_watermark"] = as_bool(watermark, False, ERR_CODEC) and v["enable_tidb_extension"]
    registry = src.pick("schema-registry", SINK)
    url = as_str(registry, "", code=ERR_CODEC)
    glue = src.tables[KAFKA].get("glue-schema-registry-config")
    if url and glue:
        raise ConfigError(
            'Avro protocol requires only one of "schema-registry" or "glue-schema-registry" to specify the schema '
            "registry; remove one",
            code=ERR_CODEC,
        )
    if glue:
        raise ConfigError(
            f"{KAFKA} glue-schema-registry-config: the AWS Glue schema registry is not supported by sparkcdc; use a "
            "Confluent-compatible registry with --schema-registry",
            code=ERR_CODEC,
        )
    if registry is None or not url:
        raise ConfigError(
            'Avro protocol requires parameter "schema-registry" to specify the schema registry; pass '
            "--schema-registry http://host:8081 to changefeed create (or schema-registry in [sink])",
            code=ERR_CODEC,
        )
    from sparkcdc.schema_registry.url import RegistryURL

    try:
        RegistryURL.parse(url, f"schema-registry in {registry.where}")
    except ConfigError as e:
        raise ConfigError(e.message, code=ERR_CODEC) from None
    v["schema_registry"] = url


def large_message(src: Sources, v: dict[str, Any]) -> None:
    # TiCDC treats an empty option or compression as "none".
    option, compression = (
        None if setting is None or setting.value == "" else setting
        for setting in (
            src.toml(LARGE, "large-message-handle-option"),
            src.toml(LARGE, "large-message-handle-compression"),
        )
    )
    v["large_message_handle_option"] = as_choice(option, "none", LARGE_MESSAGE_OPTIONS, ERR_REPLICA)
    v["large_message_handle_compression"] = as_choice(compression, "none", LARGE_MESSAGE_COMPRESSIONS, ERR_REPLICA)
    v["claim_check_storage_uri"] = as_str(src.toml(LARGE, "claim-check-storage-uri"), "", ERR_REPLICA)
    v["claim_check_raw_value"] = as_bool(src.toml(LARGE, "claim-check-raw-value"), False, ERR_REPLICA)
    handled = v["large_message_handle_option"]
    if handled == "none":
        return
    if v["protocol"] == "avro":
        raise ConfigError(
            f"large message handle is set to {handled}, protocol is avro, it's not supported; set "
            "large-message-handle-option to none",
            code=ERR_REPLICA,
        )
    if v["protocol"] == "canal-json" and not v["enable_tidb_extension"]:
        raise ConfigError(
            f"large message handle is set to {handled}, protocol is canal-json, but enable-tidb-extension is false; "
            "set enable-tidb-extension=true",
            code=ERR_REPLICA,
        )
    if handled == "claim-check":
        uri = v["claim_check_storage_uri"]
        if not uri:
            raise ConfigError(
                "large message handle is set to claim-check, but the claim-check-storage-uri is empty; "
                f"set it in {LARGE} (e.g. s3://bucket/claim-check)",
                code=ERR_REPLICA,
            )
        try:  # the storage sink's URI rules (schemes, bucket names, parameters), without connecting
            SinkURI.parse(uri)
        except ConfigError as e:
            raise Setting("claim-check-storage-uri", uri, LARGE).fail(e.message, ERR_REPLICA) from None


def sink_options(src: Sources, doc: Mapping[str, Any], v: dict[str, Any]) -> None:
    v["delete_only_output_handle_key_columns"] = as_bool(
        src.toml(SINK, "delete-only-output-handle-key-columns"), False, "CDC:ErrSinkInvalidConfig"
    )
    v["output_raw_change_event"] = as_bool(src.toml(KAFKA, "output-raw-change-event"), False, ERR_REPLICA)
    v["send_bootstrap_interval_in_sec"] = as_int(
        src.toml(SINK, "send-bootstrap-interval-in-sec"), 120, code=ERR_REPLICA
    )
    v["send_bootstrap_in_msg_count"] = as_int(src.toml(SINK, "send-bootstrap-in-msg-count"), 10000, INT32, ERR_REPLICA)
    v["send_bootstrap_to_all_partition"] = as_bool(src.toml(SINK, "send-bootstrap-to-all-partition"), True, ERR_REPLICA)
    v["send_all_bootstrap_at_start"] = as_bool(src.toml(SINK, "send-all-bootstrap-at-start"), False, ERR_REPLICA)
    concurrency = src.toml(SINK, "encoder-concurrency")
    v["encoder_concurrency"] = as_int(concurrency, 32, code="CDC:ErrSinkInvalidConfig")
    if concurrency is not None and v["encoder_concurrency"] < 0:
        raise concurrency.fail("must not be negative", "CDC:ErrSinkInvalidConfig")
    atomicity = src.pick("transaction-atomicity", SINK)
    level = as_str(atomicity, "", code="CDC:ErrSinkURIInvalid")
    if atomicity is not None and level not in ("", "none"):
        raise atomicity.fail(
            f"{level} level atomicity is not supported by kafka scheme; use none", "CDC:ErrSinkURIInvalid"
        )
    sink = src.tables[SINK]
    v["dispatch_rules"] = parse_dispatch_rules(sink.get("dispatchers"))
    v["column_selector_rules"] = parse_column_selectors(sink.get("column-selectors"))
    case = doc.get("case-sensitive", False)
    v["case_sensitive"] = as_bool(Setting("case-sensitive", case, "the changefeed config"), False, ERR_REPLICA)
