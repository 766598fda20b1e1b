"""Configuration of the simple protocol codec.

Keys are TiCDC's: ``encoding-format`` lives under ``[sink.kafka-config.codec-config]`` (or the sink URI),
the large-message keys under ``[sink.kafka-config.large-message-handle]``, the bootstrap keys under
``[sink]``. One mapping with all of them is accepted so a sink can pass its merged options; values may be
strings (sink URI query) or typed (TOML).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sparkcdc.codec.large_message import DEFAULT_MAX_MESSAGE_BYTES, LARGE_MESSAGE_OPTIONS, validate_large_message
from sparkcdc.codec.options import OptionTable, read_options
from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "ENCODING_FORMATS", "LARGE_MESSAGE_OPTIONS", "SimpleConfig"]

ENCODING_FORMATS: Final = ("json", "avro")
DEFAULT_BOOTSTRAP_INTERVAL_SEC: Final = 120
DEFAULT_BOOTSTRAP_MSG_COUNT: Final = 10000
DEFAULT_MAX_PENDING_DML: Final = 100_000
MAX_PENDING_DML_LIMIT: Final = 10_000_000


@dataclass(frozen=True, slots=True)
class SimpleConfig:
    """Settings shared by the simple encoder and decoder.

    ``time_zone`` is the ``location`` written next to TIMESTAMP values (the capture server's zone, in which
    the model's TIMESTAMP strings are rendered). ``max_pending_dml`` bounds the DML messages a decoder holds
    while it waits for their table schema. The bootstrap settings tell a sink when to send BOOTSTRAP
    messages and tell a decoder whether it may wait for one.
    """

    encoding_format: str = "json"
    enable_tidb_extension: bool = False
    time_zone: str = "UTC"
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    large_message_handle_option: str = "none"
    large_message_handle_compression: str = "none"
    claim_check_storage_uri: str = ""
    claim_check_raw_value: bool = False
    enable_row_checksum: bool = False
    send_bootstrap_interval_in_sec: int = DEFAULT_BOOTSTRAP_INTERVAL_SEC
    send_bootstrap_in_msg_count: int = DEFAULT_BOOTSTRAP_MSG_COUNT
    send_bootstrap_to_all_partition: bool = True
    send_all_bootstrap_at_start: bool = False
    max_pending_dml: int = DEFAULT_MAX_PENDING_DML

    @property
    def bootstrap_enabled(self) -> bool:
        """TiCDC sends bootstraps only when both the interval and the message count are positive."""
        return self.send_bootstrap_interval_in_sec > 0 and self.send_bootstrap_in_msg_count > 0

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None = None) -> SimpleConfig:
        """Build a validated config; raises ConfigError naming every unknown key or the bad value."""
        options = dict(options or {})
        unknown = sorted(k for k in options if k not in _KEYS)
        if unknown:
            raise ConfigError(
                f"simple protocol: unknown option(s) {', '.join(repr(k) for k in unknown)}; "
                f"use: {', '.join(sorted(_KEYS))}"
            )
        protocol = options.pop("protocol", "simple")
        if protocol != "simple":
            raise ConfigError(f"simple codec: option protocol={protocol!r} must be 'simple'")
        cfg = cls(**read_options("simple protocol", _KEYS, options))
        cfg._validate()
        return cfg

    def _validate(self) -> None:
        if self.encoding_format not in ENCODING_FORMATS:
            raise ConfigError(
                f"simple protocol: unsupported encoding-format {self.encoding_format!r}; use one of: json, avro"
            )
        validate_large_message(
            "simple protocol",
            option=self.large_message_handle_option,
            compression=self.large_message_handle_compression,
            storage_uri=self.claim_check_storage_uri,
            max_message_bytes=self.max_message_bytes,
        )
        if not 1 <= self.max_pending_dml <= MAX_PENDING_DML_LIMIT:
            raise ConfigError(
                f"simple protocol: max-pending-dml must be between 1 and {MAX_PENDING_DML_LIMIT}, "
                f"got {self.max_pending_dml}"
            )
        if self.time_zone not in ("UTC", "Local"):
            try:
                ZoneInfo(self.time_zone)
            except (ZoneInfoNotFoundError, ValueError) as e:
                raise ConfigError(f"simple protocol: unknown time-zone {self.time_zone!r}; use an IANA name") from e

    def __repr__(self) -> str:
        def shown(attr: str) -> str:
            value = getattr(self, attr)
            return repr(mask_uri(value) if attr == "claim_check_storage_uri" and value else value)

        fields = ", ".join(f"{attr}={shown(attr)}" for attr, _ in _KEYS.values() if attr != "protocol")
        return f"SimpleConfig({fields})"

    __str__ = __repr__


_KEYS: Final[OptionTable] = {
    "protocol": ("protocol", "str"),
    "encoding-format": ("encoding_format", "lower"),
    "enable-tidb-extension": ("enable_tidb_extension", "bool"),
    "time-zone": ("time_zone", "str"),
    "max-message-bytes": ("max_message_bytes", "int"),
    "large-message-handle-option": ("large_message_handle_option", "lower"),
    "large-message-handle-compression": ("large_message_handle_compression", "lower"),
    "claim-check-storage-uri": ("claim_check_storage_uri", "str"),
    "claim-check-raw-value": ("claim_check_raw_value", "bool"),
    "enable-row-checksum": ("enable_row_checksum", "bool"),
    "send-bootstrap-interval-in-sec": ("send_bootstrap_interval_in_sec", "int"),
    "send-bootstrap-in-msg-count": ("send_bootstrap_in_msg_count", "int"),
    "send-bootstrap-to-all-partition": ("send_bootstrap_to_all_partition", "bool"),
    "send-all-bootstrap-at-start": ("send_all_bootstrap_at_start", "bool"),
    "max-pending-dml": ("max_pending_dml", "int"),
}

