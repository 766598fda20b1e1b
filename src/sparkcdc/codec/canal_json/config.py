"""canal-json options, named as TiCDC names them (``spec/canal-json.md``, ``storage-layout.md`` §9).

The large-message keys (``max-message-bytes``, ``large-message-handle-*``, ``claim-check-*``) matter only to
the Kafka/Pulsar message encoder and decoder (``codec/large_message.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from sparkcdc.codec.large_message import DEFAULT_MAX_MESSAGE_BYTES, validate_large_message
from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri

DEFAULT_TERMINATOR = "\r\n"

# option name -> dataclass field; underscores are accepted as well as TiCDC's dashes.
_BOOL_OPTIONS = {
    "enable-tidb-extension": "enable_tidb_extension",
    "content-compatible": "content_compatible",
    "only-output-updated-columns": "only_output_updated_columns",
    "delete-only-output-handle-key-columns": "delete_only_output_handle_key_columns",
    "claim-check-raw-value": "claim_check_raw_value",
}
_LOWER_OPTIONS = {
    "large-message-handle-option": "large_message_handle_option",
    "large-message-handle-compression": "large_message_handle_compression",
}
_KNOWN = (*_BOOL_OPTIONS, *_LOWER_OPTIONS, "max-message-bytes", "claim-check-storage-uri", "terminator", "protocol")


@dataclass(frozen=True, slots=True)
class CanalJsonConfig:
    """Frozen canal-json settings.

    ``content_compatible`` writes TiDB's full column type in ``mysqlType`` and implies
    ``only_output_updated_columns`` (TiCDC does the same). ``terminator`` ends every line of a storage
    data file; the message-queue forms do not use it. The large-message settings are TiCDC's; handling
    (anything but ``none``) needs ``enable_tidb_extension`` as in TiCDC, whose consumers read the
    ``_tidb.onlyHandleKey``/``_tidb.claimCheckLocation`` markers.
    """

    enable_tidb_extension: bool = False
    content_compatible: bool = False
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False
    terminator: str = DEFAULT_TERMINATOR
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    large_message_handle_option: str = "none"
    large_message_handle_compression: str = "none"
    claim_check_storage_uri: str = ""
    claim_check_raw_value: bool = False

    def __post_init__(self) -> None:
        """Raises ConfigError for an empty terminator or a bad large-message setting."""
        if not self.terminator:
            raise ConfigError("canal-json terminator must not be empty; use \\r\\n (default) or \\n")
        if self.content_compatible and not self.only_output_updated_columns:
            object.__setattr__(self, "only_output_updated_columns", True)
        validate_large_message(
            "canal-json",
            option=self.large_message_handle_option,
            compression=self.large_message_handle_compression,
            storage_uri=self.claim_check_storage_uri,
            max_message_bytes=self.max_message_bytes,
            tidb_extension=self.enable_tidb_extension,
        )

    def __repr__(self) -> str:
        def shown(name: str) -> str:
            value = getattr(self, name)
            return repr(mask_uri(value) if name == "claim_check_storage_uri" and value else value)

        return f"CanalJsonConfig({', '.join(f'{f.name}={shown(f.name)}' for f in fields(self))})"

    __str__ = __repr__

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None = None) -> CanalJsonConfig:
        """Build from TiCDC option names (``enable-tidb-extension=true`` …); booleans and integers may be strings.

        Raises ConfigError naming unknown keys, a value of the wrong type, a bad large-message setting or a
        ``protocol`` other than ``canal-json``.
        """
        opts = {str(k).replace("_", "-"): v for k, v in (options or {}).items()}
        unknown = sorted(k for k in opts if k not in _KNOWN)
        if unknown:
            raise ConfigError(
                f"unknown canal-json option(s): {', '.join(unknown)}; use one of: {', '.join(sorted(_KNOWN))}"
            )
        protocol = opts.get("protocol")
        if protocol is not None and protocol != "canal-json":
            raise ConfigError(f"canal-json codec given protocol {protocol!r}; expected 'canal-json'")
        values: dict[str, Any] = {
            field: _parse_bool(name, opts[name]) for name, field in _BOOL_OPTIONS.items() if name in opts
        }
        if "terminator" in opts:
            terminator = opts["terminator"]
            if not isinstance(terminator, str):
                raise ConfigError(f"canal-json terminator must be a string, got {type(terminator).__name__}")
            values["terminator"] = terminator
        for name, field in _LOWER_OPTIONS.items():
            if name in opts:
                values[field] = _parse_str(name, opts[name]).strip().lower() or "none"  # TiCDC: empty = none
        if "claim-check-storage-uri" in opts:
            values["claim_check_storage_uri"] = _parse_str("claim-check-storage-uri", opts["claim-check-storage-uri"])
        if "max-message-bytes" in opts:
            values["max_message_bytes"] = _parse_int("max-message-bytes", opts["max-message-bytes"])
        return cls(**values)


def _parse_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(f"canal-json option {name} must be true or false, got {value!r}")


def _parse_str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"canal-json option {name} must be a string, got {value!r}")
    return value


def _parse_int(name: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    raise ConfigError(f"canal-json option {name} must be an integer, got {value!r}")
