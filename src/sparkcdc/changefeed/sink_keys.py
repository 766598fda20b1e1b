"""Every key TiCDC's ``[sink]`` table may hold (``pkg/config/sink.go``). Each sink reads its own keys and accepts
the others (they belong to other sinks) without effect; a key not in this list is an error naming it."""

from __future__ import annotations

from typing import Final

SINK_KEYS: Final = frozenset(
    {
        "protocol",
        "schema-registry",
        "csv",
        "dispatchers",
        "column-selectors",
        "transaction-atomicity",
        "encoder-concurrency",
        "terminator",
        "date-separator",
        "enable-partition-separator",
        "file-index-digit",
        "enable-kafka-sink-v2",
        "only-output-updated-columns",
        "delete-only-output-handle-key-columns",
        "content-compatible",
        "kafka-config",
        "pulsar-config",
        "mysql-config",
        "cloud-storage-config",
        "advance-timeout-in-sec",
        "send-bootstrap-interval-in-sec",
        "send-bootstrap-in-msg-count",
        "send-bootstrap-to-all-partition",
        "send-all-bootstrap-at-start",
        "debezium-disable-schema",
        "debezium",
        "open",
        "safe-mode",
        "enable-tidb-extension",
    }
)
