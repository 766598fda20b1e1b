"""The value types of TiCDC's changefeed configuration tables, checked as TiCDC's strict TOML and JSON decoding does.

TiCDC decodes the changefeed TOML (and the Open API's JSON) into typed Go structs (``pkg/config``): a string where
an integer belongs (``partition-num = '3'``, ``"partition_num": "3"``) fails the decoding, whichever sink the
changefeed has. The sinks' own configs read only their keys, so without this check a mistyped key of another sink,
or of a section we keep without acting on it, would be stored and shown back as if it were valid. The ``[sink]``
keys' types are the sinks' one list of their keys (:mod:`~sparkcdc.changefeed.sink_keys`), the kept sections' are
here (``SECTIONS``); unknown keys are refused by the callers (``ReplicaConfig.from_toml`` and each sink's config),
which also check values beyond their type (ranges, choices).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sparkcdc.changefeed.sink_keys import Schema
from sparkcdc.errors import ConfigError
from sparkcdc.masking import MASK, is_secret_param

ERR_REPLICA_CONFIG: Final = "CDC:ErrInvalidReplicaConfig"

# Go integer types by their range.
_RANGES: Final = {
    "int": (-(1 << 63), (1 << 63) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint": (0, (1 << 64) - 1),
    "uint64": (0, (1 << 64) - 1),
}
# The sections kept without effect (ReplicaConfig.sections).
SECTIONS: Final[Mapping[str, Schema]] = {
    "consistent": {
        "level": "string", "max-log-size": "int64", "flush-interval": "int64", "meta-flush-interval": "int64",
        "encoding-worker-num": "int", "flush-worker-num": "int", "storage": "string", "use-file-backend": "bool",
        "compression": "string", "flush-concurrency": "int",
        "memory-usage": {"memory-quota-percentage": "uint64", "event-cache-percentage": "uint64"},
    },
    "scheduler": {"enable-table-across-nodes": "bool", "region-threshold": "int", "write-key-threshold": "int"},
    "integrity": {"integrity-check-level": "string", "corruption-handle-level": "string"},
    "synced-status": {"synced-check-interval": "int64", "checkpoint-interval": "int64"},
}  # fmt: skip


def check_types(table: Mapping[str, Any], schema: Schema, where: str) -> None:
    """Check every key of ``table`` that ``schema`` knows (``where`` names the table: ``sink`` or
    ``sink.kafka-config``). Raises ConfigError (``CDC:ErrInvalidReplicaConfig``) naming the key, the table, what
    TiCDC expects and what was given (a secret's value masked)."""
    for key, value in table.items():
        kind = schema.get(key)
        if kind is None or value is None:
            continue
        if isinstance(kind, Mapping):
            if not isinstance(value, Mapping):
                raise _wrong(key, where, value, "must be a table")
            check_types(value, kind, f"{where}.{key}")
        elif isinstance(kind, list):
            if not isinstance(value, list | tuple) or not all(isinstance(v, Mapping) for v in value):
                raise _wrong(key, where, value, "must be an array of tables")
            for i, item in enumerate(value):
                check_types(item, kind[0], f"{where}.{key}[{i}]")
        elif kind == "bool":
            if not isinstance(value, bool):
                hint = "; write it without quotes" if str(value).lower() in ("true", "false") else ""
                raise _wrong(key, where, value, "must be a boolean (true or false)" + hint)
        elif kind == "string":
            if not isinstance(value, str):
                raise _wrong(key, where, value, "must be a string")
        elif kind == "[]string":
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise _wrong(key, where, value, "must be an array of strings")
        else:
            low, high = _RANGES[kind]
            if isinstance(value, bool) or not isinstance(value, int):
                digits = str(value).strip().lstrip("+-")
                hint = "; write it without quotes" if isinstance(value, str) and digits.isdigit() else ""
                raise _wrong(key, where, value, "must be an integer" + hint)
            if not low <= value <= high:
                raise _wrong(key, where, value, f"out of range for TiCDC's {kind} [{low}, {high}]")


def _wrong(key: str, where: str, value: Any, reason: str) -> ConfigError:
    if isinstance(value, Mapping):
        shown = "(a table)"
    elif isinstance(value, list | tuple):
        shown = "(an array)"
    elif is_secret_param(key):
        shown = repr(MASK)
    elif isinstance(value, bool):
        shown = str(value).lower()
    else:
        shown = repr(value) if isinstance(value, str) else str(value)
    return ConfigError(f"invalid {key} {shown} in [{where}] of the changefeed config: {reason}",
                       code=ERR_REPLICA_CONFIG)  # fmt: skip
