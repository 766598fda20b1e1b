"""Every key TiCDC's ``[sink]`` table and its sub-tables may hold (``pkg/config/sink.go``, ``large_message.go``), with
the Go type TiCDC decodes it into: the one list of each sink's keys. The sinks' configs take their key sets from
here (a key not in them is an error naming it; each sink reads its own keys and accepts the others', which belong to
other sinks, without effect), and :mod:`~sparkcdc.changefeed.toml_types` checks the values' types against them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# A table's keys -> a Go type name ("bool", "string", "[]string", an integer type), a nested table, or an array of
# tables (a one-element list holding the tables' schema).
Schema = Mapping[str, "str | Schema | list[Schema]"]

CSV: Final[Schema] = {
    "delimiter": "string", "quote": "string", "null": "string", "include-commit-ts": "bool",
    "binary-encoding-method": "string", "output-old-value": "bool", "output-handle-key": "bool",
    "output-field-header": "bool",
}  # fmt: skip
CODEC_CONFIG: Final[Schema] = {
    "enable-tidb-extension": "bool", "max-batch-size": "int", "avro-enable-watermark": "bool",
    "avro-decimal-handling-mode": "string", "avro-bigint-unsigned-handling-mode": "string",
    "encoding-format": "string",
}  # fmt: skip
LARGE_MESSAGE_HANDLE: Final[Schema] = {
    "large-message-handle-option": "string", "large-message-handle-compression": "string",
    "claim-check-storage-uri": "string", "claim-check-raw-value": "bool",
}  # fmt: skip
GLUE_SCHEMA_REGISTRY: Final[Schema] = {
    "registry-name": "string", "region": "string", "access-key": "string", "secret-access-key": "string",
    "token": "string",
}  # fmt: skip
KAFKA_CONFIG: Final[Schema] = {
    "partition-num": "int32", "replication-factor": "int16", "kafka-version": "string", "max-message-bytes": "int",
    "compression": "string", "kafka-client-id": "string", "auto-create-topic": "bool", "dial-timeout": "string",
    "write-timeout": "string", "read-timeout": "string", "required-acks": "int", "sasl-user": "string",
    "sasl-password": "string", "sasl-mechanism": "string", "sasl-gssapi-auth-type": "string",
    "sasl-gssapi-keytab-path": "string", "sasl-gssapi-kerberos-config-path": "string",
    "sasl-gssapi-service-name": "string", "sasl-gssapi-user": "string", "sasl-gssapi-password": "string",
    "sasl-gssapi-realm": "string", "sasl-gssapi-disable-pafxfast": "bool", "sasl-oauth-client-id": "string",
    "sasl-oauth-client-secret": "string", "sasl-oauth-token-url": "string", "sasl-oauth-scopes": "[]string",
    "sasl-oauth-grant-type": "string", "sasl-oauth-audience": "string", "enable-tls": "bool", "ca": "string",
    "cert": "string", "key": "string", "insecure-skip-verify": "bool", "output-raw-change-event": "bool",
    "codec-config": CODEC_CONFIG, "large-message-handle": LARGE_MESSAGE_HANDLE,
    "glue-schema-registry-config": GLUE_SCHEMA_REGISTRY,
}  # fmt: skip
MYSQL_CONFIG: Final[Schema] = {
    "worker-count": "int", "max-txn-row": "int", "max-multi-update-row-size": "int", "max-multi-update-row": "int",
    "tidb-txn-mode": "string", "ssl-ca": "string", "ssl-cert": "string", "ssl-key": "string", "time-zone": "string",
    "write-timeout": "string", "read-timeout": "string", "timeout": "string", "enable-batch-dml": "bool",
    "enable-multi-statement": "bool", "enable-cache-prepared-statement": "bool",
}  # fmt: skip
CLOUD_STORAGE_CONFIG: Final[Schema] = {
    "worker-count": "int", "flush-interval": "string", "file-size": "int", "output-column-id": "bool",
    "file-expiration-days": "int", "file-cleanup-cron-spec": "string", "flush-concurrency": "int",
    "output-raw-change-event": "bool",
}  # fmt: skip
SINK: Final[Schema] = {
    "protocol": "string", "schema-registry": "string", "csv": CSV, "transaction-atomicity": "string",
    "encoder-concurrency": "int", "terminator": "string", "date-separator": "string",
    "enable-partition-separator": "bool", "file-index-digit": "int", "enable-kafka-sink-v2": "bool",
    "only-output-updated-columns": "bool", "delete-only-output-handle-key-columns": "bool",
    "content-compatible": "bool", "kafka-config": KAFKA_CONFIG, "mysql-config": MYSQL_CONFIG,
    "cloud-storage-config": CLOUD_STORAGE_CONFIG, "advance-timeout-in-sec": "uint",
    "send-bootstrap-interval-in-sec": "int64", "send-bootstrap-in-msg-count": "int32",
    "send-bootstrap-to-all-partition": "bool", "send-all-bootstrap-at-start": "bool",
    "debezium-disable-schema": "bool", "debezium": {"output-old-value": "bool"}, "open": {"output-old-value": "bool"},
    "safe-mode": "bool", "enable-tidb-extension": "bool",
    "dispatchers": [{"matcher": "[]string", "dispatcher": "string", "partition": "string", "index": "string",
                     "columns": "[]string", "topic": "string"}],
    "column-selectors": [{"matcher": "[]string", "columns": "[]string"}],
    "pulsar-config": {},  # a table; no sink here reads its keys
}  # fmt: skip
SINK_KEYS: Final = frozenset(SINK)
