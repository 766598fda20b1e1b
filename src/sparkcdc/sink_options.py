"""Reading one sink setting from where TiCDC looks for it (Kafka, MySQL), with TiCDC's precedence and value syntax.

A setting may come from the sink URI (always a string) or from a TOML table (typed). The URI beats the TOML,
as in TiCDC's ``mergeConfig``. Values follow Go's syntax: booleans are ``strconv.ParseBool``'s words, integers
are decimal and must fit the Go type TiCDC declares, durations are Go durations. Every error is one
ConfigError line naming the key, where it came from and what is allowed, with secret values masked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri, mask_value
from sparkcdc.storage.duration import parse_duration

ERR_KAFKA_CONFIG: Final = "CDC:ErrKafkaInvalidConfig"
ERR_REPLICA: Final = "CDC:ErrInvalidReplicaConfig"
_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})
INT16: Final = (-(1 << 15), (1 << 15) - 1)
INT32: Final = (-(1 << 31), (1 << 31) - 1)
INT64: Final = (-(1 << 63), (1 << 63) - 1)
URI: Final = "sink URI"


@dataclass(frozen=True, slots=True)
class Setting:
    """A value and where it came from (``sink URI`` or a TOML table such as ``[sink.kafka-config]``)."""

    key: str
    value: Any
    where: str

    @property
    def from_uri(self) -> bool:
        """A URI parameter is text; a TOML value has its TOML type (``'3'`` is no integer there, as for TiCDC)."""
        return self.where == URI

    @property
    def shown(self) -> str:
        """The value as an error may show it: secrets masked, URIs with their passwords masked."""
        text = str(self.value)
        if "://" in text:
            text = mask_uri(text)
        return mask_value(self.key, text)

    def fail(self, reason: str, code: str = ERR_KAFKA_CONFIG) -> ConfigError:
        return ConfigError(f"invalid {self.key} {self.shown!r} in {self.where}: {reason}", code=code)


class Sources:
    """The URI's parameters and the TOML tables a changefeed may set Kafka options in."""

    def __init__(self, uri_params: Mapping[str, str], tables: Mapping[str, Mapping[str, Any]]) -> None:
        self.uri = uri_params
        self.tables = tables

    def pick(self, key: str, *tables: str, toml_key: str | None = None) -> Setting | None:
        """The URI's ``key`` if given, else the first of ``tables`` holding ``toml_key`` (default ``key``)."""
        if key in self.uri:
            return Setting(key, self.uri[key], URI)
        name = toml_key or key
        for table in tables:
            values = self.tables.get(table, {})
            if name in values and values[name] is not None:
                return Setting(name, values[name], table)
        return None

    def toml(self, table: str, key: str) -> Setting | None:
        """A key that only the TOML table ``table`` may hold."""
        values = self.tables.get(table, {})
        if key in values and values[key] is not None:
            return Setting(key, values[key], table)
        return None


def as_bool(setting: Setting | None, default: bool, code: str = ERR_KAFKA_CONFIG) -> bool:
    if setting is None:
        return default
    value = setting.value
    if isinstance(value, bool):
        return value
    word = isinstance(value, str) and (value in _TRUE or value in _FALSE)
    if word and setting.from_uri:
        return value in _TRUE
    raise setting.fail("use true or false" + _unquote_hint(word), code)


def as_int(
    setting: Setting | None,
    default: int,
    bounds: tuple[int, int] = INT64,
    code: str = ERR_KAFKA_CONFIG,
) -> int:
    """A decimal integer within ``bounds`` (the Go type's range); TOML integers or URI digits."""
    if setting is None:
        return default
    value = setting.value
    number: int | None = None
    decimal = False
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        digits = value[1:] if value[:1] in "+-" else value
        decimal = digits.isascii() and digits.isdigit()
        if decimal and setting.from_uri:
            number = int(value)
    if number is None:
        raise setting.fail("must be an integer" + _unquote_hint(decimal), code)
    if not bounds[0] <= number <= bounds[1]:
        raise setting.fail(f"out of range [{bounds[0]}, {bounds[1]}]", code)
    return number


def _unquote_hint(quoted_value: bool) -> str:
    """For a TOML string holding what belongs there unquoted (``partition-num = '3'``)."""
    return "; write it without quotes" if quoted_value else ""


def as_str(setting: Setting | None, default: str, code: str = ERR_KAFKA_CONFIG) -> str:
    if setting is None:
        return default
    if not isinstance(setting.value, str):
        raise setting.fail("must be a string", code)
    return setting.value


def as_strings(setting: Setting | None, code: str = ERR_KAFKA_CONFIG) -> tuple[str, ...]:
    if setting is None:
        return ()
    value = setting.value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise setting.fail("must be an array of strings", code)


def as_duration_ns(setting: Setting | None, default_ns: int, code: str = ERR_KAFKA_CONFIG) -> int:
    """A positive Go duration (``10s``, ``1m30s``, ``500ms``) in nanoseconds; an empty string keeps the default,
    as TiCDC does."""
    if setting is None or setting.value == "":
        return default_ns
    if not isinstance(setting.value, str):
        raise setting.fail("use a Go duration such as 10s", code)
    try:
        ns = parse_duration(setting.value, key=setting.key)
    except ConfigError:
        raise setting.fail("not a Go duration (use e.g. 10s, 1m30s, 500ms)", code) from None
    if ns <= 0:
        raise setting.fail("must be greater than 0", code)
    return ns


def as_choice(setting: Setting | None, default: str, choices: tuple[str, ...], code: str = ERR_KAFKA_CONFIG) -> str:
    """A case-insensitive word from ``choices`` (returned lower-case, surrounding spaces trimmed)."""
    if setting is None:
        return default
    if isinstance(setting.value, str) and setting.value.strip().lower() in choices:
        return setting.value.strip().lower()
    raise setting.fail(f"use one of: {', '.join(choices)}", code)


def table(parent: Mapping[str, Any], key: str, where: str, allowed: frozenset[str]) -> Mapping[str, Any]:
    """The TOML sub-table ``key`` of ``parent`` (``where`` names the parent in errors), every key in ``allowed``."""
    value = parent.get(key, {})
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} key {key!r} must be a table, got {type(value).__name__}", code=ERR_REPLICA)
    name = f"[{key}]" if where == "the changefeed config" else f"{where[:-1]}.{key}]"
    for k in value:
        if k not in allowed:
            raise ConfigError(f"unknown key {k!r} in {name}; allowed: {', '.join(sorted(allowed))}", code=ERR_REPLICA)
    return value
