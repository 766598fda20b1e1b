"""Every key a Kafka changefeed may set, as TiCDC names them (``pkg/config/sink.go``,
``pkg/sink/kafka/options.go``, ``pkg/sink/codec/common/config.go``, ``pkg/config/large_message.go``).

Keys TiCDC knows but that belong to other sinks (``[sink.csv]``, ``cloud-storage-config``, ...) are accepted in
``[sink]`` and ignored; a key TiCDC does not know is an error naming it.
"""

from __future__ import annotations

from typing import Final

from sparkcdc.changefeed import sink_keys

# Sink URI parameters of the Kafka options (urlConfig of options.go).
KAFKA_URI_PARAMS: Final = frozenset(
    {
        "partition-num",
        "replication-factor",
        "kafka-version",
        "max-message-bytes",
        "max-retry",
        "compression",
        "kafka-client-id",
        "auto-create-topic",
        "dial-timeout",
        "write-timeout",
        "read-timeout",
        "required-acks",
        "sasl-user",
        "sasl-password",
        "sasl-mechanism",
        "sasl-gssapi-auth-type",
        "sasl-gssapi-keytab-path",
        "sasl-gssapi-kerberos-config-path",
        "sasl-gssapi-service-name",
        "sasl-gssapi-user",
        "sasl-gssapi-password",
        "sasl-gssapi-realm",
        "sasl-gssapi-disable-pafxfast",
        "enable-tls",
        "ca",
        "cert",
        "key",
        "insecure-skip-verify",
    }
)
# Sink URI parameters of the codec (urlConfig of codec/common/config.go) and the sink config.
CODEC_URI_PARAMS: Final = frozenset(
    {
        "protocol",
        "transaction-atomicity",
        "enable-tidb-extension",
        "max-batch-size",
        "avro-decimal-handling-mode",
        "avro-bigint-unsigned-handling-mode",
        "avro-enable-watermark",
        "schema-registry",
        "only-output-updated-columns",
        "content-compatible",
        "debezium-disable-schema",
        "encoding-format",
    }
)
URI_PARAMS: Final = KAFKA_URI_PARAMS | CODEC_URI_PARAMS

# Parameters of the avro protocol (warned about, and ignored, with another protocol).
AVRO_PARAMS: Final = frozenset(
    {"avro-decimal-handling-mode", "avro-bigint-unsigned-handling-mode", "avro-enable-watermark", "schema-registry"}
)
# Parameters accepted for TiCDC compatibility that only a protocol sparkcdc does not write (debezium) uses.
OTHER_PROTOCOL_PARAMS: Final = frozenset({"debezium-disable-schema"})

# The [sink.kafka-config] table and its sub-tables: their keys, from the one list with TiCDC's Go types.
KAFKA_CONFIG_KEYS: Final = frozenset(sink_keys.KAFKA_CONFIG)
CODEC_CONFIG_KEYS: Final = frozenset(sink_keys.CODEC_CONFIG)
LARGE_MESSAGE_KEYS: Final = frozenset(sink_keys.LARGE_MESSAGE_HANDLE)
GLUE_KEYS: Final = frozenset(sink_keys.GLUE_SCHEMA_REGISTRY)

# Protocols TiCDC knows (ParseSinkProtocolFromString) and the ones this sink encodes.
KNOWN_PROTOCOLS: Final = (
    "default",
    "canal",
    "avro",
    "flat-avro",
    "maxwell",
    "canal-json",
    "craft",
    "open-protocol",
    "csv",
    "debezium",
    "simple",
)
SUPPORTED_PROTOCOLS: Final = ("avro", "canal-json", "simple")
