"""CSV codec configuration (``[sink.csv]`` plus ``[sink] terminator``), validated once.

Validation follows TiCDC's ``CSVConfig.validateAndAdjust`` (``pkg/config/sink.go``) and adds a few checks for
settings whose output no parser can read back (see ``from_options``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from sparkcdc.errors import ConfigError

BINARY_ENCODING_METHODS: Final = ("base64", "hex")

# TiCDC option name -> dataclass field. Underscored spellings are accepted too (``include_commit_ts``).
_KEYS: Final = {
    "delimiter": "delimiter",
    "quote": "quote",
    "null": "null",
    "terminator": "terminator",
    "include-commit-ts": "include_commit_ts",
    "binary-encoding-method": "binary_encoding_method",
    "output-old-value": "output_old_value",
    "output-handle-key": "output_handle_key",
    "output-field-header": "output_field_header",
}
_BOOL_KEYS: Final = frozenset({"include-commit-ts", "output-old-value", "output-handle-key", "output-field-header"})


@dataclass(frozen=True, slots=True)
class CsvConfig:
    """Effective CSV settings (``spec/csv.md`` §1). Build it with ``from_options``; the defaults are TiCDC's.

    ``quote`` empty selects escape mode. ``terminator`` empty means: write nothing after a row, and when
    decoding accept any of CRLF, LF and CR (TiDB Lightning's behaviour for an unset terminator).
    """

    delimiter: str = ","
    quote: str = '"'
    null: str = "\\N"
    terminator: str = "\r\n"
    include_commit_ts: bool = False
    binary_encoding_method: str = "base64"
    output_old_value: bool = False
    output_handle_key: bool = False
    output_field_header: bool = False

    @property
    def escape_mode(self) -> bool:
        return not self.quote

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None = None) -> CsvConfig:
        """Build and validate a config from TiCDC option names (``include-commit-ts`` …).

        Booleans may be given as bool or as the strings ``true``/``false`` (URI and TOML style).

        Raises:
            ConfigError: an unknown key, or a value outside what the key allows; the message names both.
        """
        values: dict[str, Any] = {}
        for raw_key, value in (options or {}).items():
            key = str(raw_key).strip().lower().replace("_", "-")
            if key not in _KEYS:
                raise ConfigError(f"unknown csv option {raw_key!r}; use one of: {', '.join(sorted(_KEYS))}")
            if key in _BOOL_KEYS:
                value = _parse_bool(key, value)
            elif not isinstance(value, str):
                raise ConfigError(f"csv option {key!r} must be a string, got {type(value).__name__}")
            values[_KEYS[key]] = value
        if "binary_encoding_method" in values:
            values["binary_encoding_method"] = values["binary_encoding_method"].strip().lower()
        cfg = cls(**values)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        """Check the settings (called by ``from_options``).

        TiCDC's rules: quote is empty or one byte, not CR/LF; delimiter is 1-3 bytes without CR/LF and shares
        no character with the quote; binary-encoding-method is base64 or hex. Added here because the output
        would be unreadable: in escape mode the delimiter must not contain a backslash, and the null string
        must not contain CR, LF, the delimiter or the quote.

        Raises:
            ConfigError: naming the key and what it accepts.
        """
        quote_len = len(self.quote.encode("utf-8"))
        if quote_len > 1:
            raise ConfigError(f"csv option 'quote' must be empty or a single byte, got {self.quote!r}")
        if self.quote in ("\r", "\n"):
            raise ConfigError("csv option 'quote' must not be CR or LF")
        delim_len = len(self.delimiter.encode("utf-8"))
        if not 1 <= delim_len <= 3:
            raise ConfigError(f"csv option 'delimiter' must be 1 to 3 bytes, got {self.delimiter!r}")
        if "\r" in self.delimiter or "\n" in self.delimiter:
            raise ConfigError("csv option 'delimiter' must not contain CR or LF")
        if self.quote and self.quote in self.delimiter:
            raise ConfigError(
                f"csv options 'delimiter' ({self.delimiter!r}) and 'quote' ({self.quote!r}) share a character"
            )
        if not self.quote and "\\" in self.delimiter:
            raise ConfigError("csv option 'delimiter' must not contain a backslash when 'quote' is empty")
        if self.binary_encoding_method not in BINARY_ENCODING_METHODS:
            raise ConfigError(
                f"csv option 'binary-encoding-method' is {self.binary_encoding_method!r}; "
                f"use one of: {', '.join(BINARY_ENCODING_METHODS)}"
            )
        if (
            "\r" in self.null
            or "\n" in self.null
            or self.delimiter in self.null
            or (self.quote and self.quote in self.null)
        ):
            raise ConfigError(f"csv option 'null' ({self.null!r}) must not contain CR, LF, the delimiter or the quote")
        for f in fields(self):
            value = getattr(self, f.name)
            expected = bool if f.name in {_KEYS[k] for k in _BOOL_KEYS} else str
            if not isinstance(value, expected):
                raise ConfigError(f"csv option {f.name.replace('_', '-')!r} must be {expected.__name__}")


def _parse_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(f"csv option {key!r} must be true or false, got {value!r}")
