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
ERR_SINK_INVALID_CONFIG: Final = "CDC:ErrSinkInvalidConfig"

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
_BOOL_FIELDS: Final = frozenset(_KEYS[k] for k in _BOOL_KEYS)


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
            ConfigError: ``CDC:ErrSinkInvalidConfig`` for an unknown key, or a value outside what the key allows;
                the message names both.
        """
        values: dict[str, Any] = {}
        for raw_key, value in (options or {}).items():
            key = str(raw_key).strip().lower().replace("_", "-")
            if key not in _KEYS:
                raise _invalid(f"unknown csv option {raw_key!r}; use one of: {', '.join(sorted(_KEYS))}")
            if key in _BOOL_KEYS:
                value = _parse_bool(key, value)
            elif not isinstance(value, str):
                raise _invalid(f"csv config {key} must be a string, got {type(value).__name__} {value!r}")
            values[_KEYS[key]] = value
        if "binary_encoding_method" in values:
            values["binary_encoding_method"] = values["binary_encoding_method"].strip().lower()
        cfg = cls(**values)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        """Check the settings (called by ``from_options``).

        TiCDC's rules, with TiCDC's messages and code: quote is empty or one byte, not CR/LF; delimiter is 1-3
        bytes without CR/LF and shares no character with the quote; binary-encoding-method is base64 or hex.
        Added here because the output would be unreadable: in escape mode the delimiter must not contain a
        backslash, and the null string must not contain CR, LF, the delimiter or the quote.

        Raises:
            ConfigError: ``CDC:ErrSinkInvalidConfig``, naming the option and the value given.
        """
        for f in fields(self):
            value = getattr(self, f.name)
            expected = bool if f.name in _BOOL_FIELDS else str
            if not isinstance(value, expected):
                name = f.name.replace("_", "-")
                kind = "a string" if expected is str else "true or false"
                raise _invalid(f"csv config {name} must be {kind}, got {type(value).__name__} {value!r}")
        if len(self.quote.encode("utf-8")) > 1:
            raise _invalid(f"csv config quote contains more than one character (quote {self.quote!r})")
        if self.quote in ("\r", "\n"):
            raise _invalid(f"csv config quote cannot be line break character (quote {self.quote!r})")
        delim_len = len(self.delimiter.encode("utf-8"))
        if delim_len == 0:
            raise _invalid("csv config delimiter cannot be empty")
        if delim_len > 3:
            raise _invalid(
                "csv config delimiter contains more than three characters, note that escape sequences can only be "
                f"used in double quotes in toml configuration items. (delimiter {self.delimiter!r})"
            )
        if "\r" in self.delimiter or "\n" in self.delimiter:
            raise _invalid(f"csv config delimiter contains line break characters (delimiter {self.delimiter!r})")
        if self.quote and self.quote in self.delimiter:
            raise _invalid(
                "csv config quote and delimiter has common characters which is not allowed "
                f"(delimiter {self.delimiter!r}, quote {self.quote!r})"
            )
        if not self.quote and "\\" in self.delimiter:
            raise _invalid(
                f"csv config delimiter {self.delimiter!r} must not contain a backslash when quote is empty "
                "(escape mode)"
            )
        if self.binary_encoding_method not in BINARY_ENCODING_METHODS:
            raise _invalid(
                "csv config binary-encoding-method can only be hex or base64 "
                f"(binary-encoding-method {self.binary_encoding_method!r})"
            )
        if (
            "\r" in self.null
            or "\n" in self.null
            or self.delimiter in self.null
            or (self.quote and self.quote in self.null)
        ):
            raise _invalid(f"csv config null {self.null!r} must not contain CR, LF, the delimiter or the quote")


def _invalid(message: str) -> ConfigError:
    return ConfigError(message, code=ERR_SINK_INVALID_CONFIG)


def _parse_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _invalid(f"csv config {key} must be true or false, got {type(value).__name__} {value!r}")
