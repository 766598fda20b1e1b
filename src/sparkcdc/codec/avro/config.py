"""Configuration of the avro codec, with TiCDC's keys (``pkg/sink/codec/common/config.go``).

``avro-decimal-handling-mode`` and ``avro-bigint-unsigned-handling-mode`` come from the sink URI or
``[sink.kafka-config.codec-config]``; ``avro-enable-watermark`` (TiCDC's testing switch: DDL and watermark messages
that Confluent's own consumers cannot read) counts only with ``enable-tidb-extension``, as in TiCDC. ``namespace``
is the changefeed's namespace, the first part of every record's Avro namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sparkcdc.codec.large_message import DEFAULT_MAX_MESSAGE_BYTES
from sparkcdc.codec.options import OptionTable, read_options
from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri

DECIMAL_MODES: Final = ("precise", "string")
BIGINT_UNSIGNED_MODES: Final = ("long", "string")
ERR_CODEC: Final = "CDC:ErrCodecInvalidConfig"


@dataclass(frozen=True, slots=True)
class AvroConfig:
    """Settings shared by the avro encoder and decoder. ``schema_registry`` is the registry's URL (shown masked)."""

    enable_tidb_extension: bool = False
    decimal_handling_mode: str = "precise"
    bigint_unsigned_handling_mode: str = "long"
    enable_watermark: bool = False
    schema_registry: str = ""
    namespace: str = "default"
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES

    @property
    def watermarks(self) -> bool:
        """DDL and watermark messages are written only with both switches on (TiCDC's ``EncodeCheckpointEvent``)."""
        return self.enable_tidb_extension and self.enable_watermark

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None = None) -> AvroConfig:
        """Build a validated config from TiCDC's option names; values may be strings (URI query) or typed (TOML).
        Keys the caller passes for the codec's collaborators (``registry``) are skipped. Raises ConfigError
        (``CDC:ErrCodecInvalidConfig``) naming the key and what it may be."""

        def unknown(key: str) -> ConfigError:
            allowed = ", ".join(sorted(_KEYS))
            return ConfigError(f"avro protocol: unknown option {key!r}; use: {allowed}", code=ERR_CODEC)

        options = {k: v for k, v in (options or {}).items() if k not in _PASSED_THROUGH}
        cfg = cls(**read_options("avro protocol", _KEYS, options, ERR_CODEC, unknown))
        cfg._validate()
        return cfg

    def _validate(self) -> None:
        if self.decimal_handling_mode not in DECIMAL_MODES:
            raise ConfigError(
                f'avro-decimal-handling-mode value could only be "string" or "precise", got '
                f"{self.decimal_handling_mode!r}",
                code=ERR_CODEC,
            )
        if self.bigint_unsigned_handling_mode not in BIGINT_UNSIGNED_MODES:
            raise ConfigError(
                f'avro-bigint-unsigned-handling-mode value could only be "long" or "string", got '
                f"{self.bigint_unsigned_handling_mode!r}",
                code=ERR_CODEC,
            )
        if self.max_message_bytes <= 0:
            raise ConfigError(f"invalid max-message-bytes {self.max_message_bytes}", code=ERR_CODEC)

    def __repr__(self) -> str:
        return (
            f"AvroConfig(enable_tidb_extension={self.enable_tidb_extension}, "
            f"decimal_handling_mode={self.decimal_handling_mode!r}, "
            f"bigint_unsigned_handling_mode={self.bigint_unsigned_handling_mode!r}, "
            f"enable_watermark={self.enable_watermark}, schema_registry={mask_uri(self.schema_registry)!r}, "
            f"namespace={self.namespace!r}, max_message_bytes={self.max_message_bytes})"
        )

    __str__ = __repr__


_KEYS: Final[OptionTable] = {
    "enable-tidb-extension": ("enable_tidb_extension", "bool"),
    "avro-decimal-handling-mode": ("decimal_handling_mode", "mode"),
    "avro-bigint-unsigned-handling-mode": ("bigint_unsigned_handling_mode", "mode"),
    "avro-enable-watermark": ("enable_watermark", "bool"),
    "schema-registry": ("schema_registry", "str"),
    "namespace": ("namespace", "str"),
    "max-message-bytes": ("max_message_bytes", "int"),
}
_PASSED_THROUGH: Final = frozenset({"registry"})

