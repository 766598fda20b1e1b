"""A codec's settings from one flat mapping of TiCDC's option names, read by a table ``key -> (attribute, kind)``.

Values may be strings (the sink URI's query) or typed (TOML), so each kind takes both forms: ``bool`` (a bool, or
``true``/``false`` in any case), ``int`` (an int, or decimal digits), ``str``, ``lower`` (a string, trimmed and
lower-cased) and ``mode`` (a string; an empty one keeps the config's default, as TiCDC's ``Apply`` does). Each codec
says an unknown key in its own words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from sparkcdc.errors import ConfigError

# option key -> (attribute of the codec's config, kind)
OptionTable = Mapping[str, tuple[str, str]]
_INT: Final = re.compile(r"\s*[+-]?\d+\s*")


def read_options(
    where: str,
    keys: OptionTable,
    options: Mapping[str, Any],
    code: str | None = None,
    unknown: Callable[[str], ConfigError] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for the config: each option of ``options`` as its attribute, converted to its kind, in the
    options' order. Raises ConfigError (``code``) naming ``where`` (``avro protocol``), the key and the value, or
    ``unknown(key)`` for the first key not in ``keys`` (without ``unknown``, the caller has checked there is none)."""
    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        if unknown is not None and key not in keys:
            raise unknown(key)
        attr, kind = keys[key]
        converted = _convert(where, key, value, kind, code)
        if not (kind == "mode" and converted == ""):
            kwargs[attr] = converted
    return kwargs


def _convert(where: str, key: str, value: Any, kind: str, code: str | None) -> Any:
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ConfigError(f"{where}: {key} must be true or false, got {value!r}", code=code)
    if kind == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and _INT.fullmatch(value):
            return int(value)
        raise ConfigError(f"{where}: {key} must be an integer, got {value!r}", code=code)
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string, got {value!r}", code=code)
    return value.strip().lower() if kind == "lower" else value
