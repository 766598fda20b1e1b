"""canal-json options, named as TiCDC names them (``spec/canal-json.md``, ``storage-layout.md`` §9)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkcdc.errors import ConfigError

DEFAULT_TERMINATOR = "\r\n"

# option name -> dataclass field; underscores are accepted as well as TiCDC's dashes.
_BOOL_OPTIONS = {
    "enable-tidb-extension": "enable_tidb_extension",
    "content-compatible": "content_compatible",
    "only-output-updated-columns": "only_output_updated_columns",
    "delete-only-output-handle-key-columns": "delete_only_output_handle_key_columns",
}
_KNOWN = (*_BOOL_OPTIONS, "terminator", "protocol")


@dataclass(frozen=True, slots=True)
class CanalJsonConfig:
    """Frozen canal-json settings.

    ``content_compatible`` writes TiDB's full column type in ``mysqlType`` and implies
    ``only_output_updated_columns`` (TiCDC does the same). ``terminator`` ends every line of a storage
    data file; the message-queue forms do not use it.
    """

    enable_tidb_extension: bool = False
    content_compatible: bool = False
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False
    terminator: str = DEFAULT_TERMINATOR

    def __post_init__(self) -> None:
        if not self.terminator:
            raise ConfigError("canal-json terminator must not be empty; use \\r\\n (default) or \\n")
        if self.content_compatible and not self.only_output_updated_columns:
            object.__setattr__(self, "only_output_updated_columns", True)

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None = None) -> CanalJsonConfig:
        """Build from TiCDC option names (``enable-tidb-extension=true`` …); booleans may be strings.

        Raises ConfigError naming unknown keys, a non-boolean value or a ``protocol`` other than
        ``canal-json``.
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
        return cls(**values)


def _parse_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(f"canal-json option {name} must be true or false, got {value!r}")
