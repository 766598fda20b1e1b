"""The simple protocol's wire layout (``spec/simple.md`` §1-3) and checked access to decoded members.

JSON members are listed in Go's struct declaration order: the encoder builds dicts in exactly this order
and ``orjson`` keeps insertion order, so dict order is byte order. ``data``/``old`` are Go maps and are
therefore written with keys sorted byte-wise (code-point order of ``str`` is UTF-8 byte order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from sparkcdc.errors import DecodeError, EncodeError
from sparkcdc.model import TableInfo

PROTOCOL_VERSION: Final = 1

WATERMARK: Final = "WATERMARK"
BOOTSTRAP: Final = "BOOTSTRAP"
DML_TYPES: Final = ("INSERT", "UPDATE", "DELETE")
DDL_TYPES: Final = ("CREATE", "ALTER", "ERASE", "RENAME", "TRUNCATE", "CINDEX", "DINDEX", "QUERY")

# Top-level members in declaration order (``message`` struct of message.go).
MESSAGE_MEMBERS: Final = (
    "version",
    "database",
    "table",
    "tableID",
    "type",
    "sql",
    "commitTs",
    "buildTs",
    "schemaVersion",
    "claimCheckLocation",
    "handleKeyOnly",
    "checksum",
    "data",
    "old",
    "tableSchema",
    "preTableSchema",
)
TABLE_SCHEMA_MEMBERS: Final = ("schema", "table", "tableID", "version", "columns", "indexes")
COLUMN_MEMBERS: Final = ("name", "dataType", "nullable", "default")
DATA_TYPE_MEMBERS: Final = (
    "mysqlType",
    "charset",
    "collate",
    "length",
    "decimal",
    "elements",
    "unsigned",
    "zerofill",
)
INDEX_MEMBERS: Final = ("name", "unique", "primary", "nullable", "columns")
CHECKSUM_MEMBERS: Final = ("version", "corrupted", "current", "previous")
TIMESTAMP_MEMBERS: Final = ("location", "value")

UINT64_MAX: Final = (1 << 64) - 1
INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1
UINT32_MAX: Final = (1 << 32) - 1


@dataclass(frozen=True, slots=True)
class Checksum:
    """Row-level integrity checksum as TiCDC writes it (``checksum`` member)."""

    version: int
    corrupted: bool
    current: int
    previous: int


@dataclass(frozen=True, slots=True)
class SimpleMessage:
    """One decoded message before its rows are typed: both JSON and Avro parse into this.

    ``data``/``old`` hold the raw wire values (JSON strings/objects or Avro natives) keyed by column
    name; the decoder types them once the table schema is known.
    """

    type: str
    commit_ts: int
    build_ts: int
    database: str = ""
    table: str = ""
    table_id: int = 0
    sql: str = ""
    schema_version: int = 0
    claim_check_location: str = ""
    handle_key_only: bool = False
    checksum: Checksum | None = None
    data: Mapping[str, Any] | None = None
    old: Mapping[str, Any] | None = None
    table_schema: TableInfo | None = None
    pre_table_schema: TableInfo | None = None

    @property
    def is_dml(self) -> bool:
        """TiCDC's rule: a message is a row if it has ``data`` or ``old``."""
        return self.data is not None or self.old is not None


# --- Go encoding/json output -------------------------------------------------------------------------

_HTML_BYTES: Final = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def go_json_dumps(obj: Any) -> bytes:
    """Compact Go ``encoding/json`` bytes of ``obj`` (dict order = member order).

    orjson already writes Go's escapes for controls (``\\b``, ``\\f``, ``\\u00xx``); Go additionally escapes
    ``< > &`` and U+2028/U+2029. Those characters can only occur inside string literals, so replacing them
    on the output bytes is exact. Strings with lone surrogates (not valid UTF-8) are written with U+FFFD,
    as Go does for invalid UTF-8. Raises EncodeError for values JSON cannot carry (ints beyond 64 bits).
    """
    try:
        out = orjson.dumps(obj)
    except orjson.JSONEncodeError as e:
        if "surrogates" not in str(e):
            raise EncodeError(f"simple: cannot encode message as JSON: {e}") from e
        try:
            out = orjson.dumps(_replace_surrogates(obj))
        except orjson.JSONEncodeError as e2:
            raise EncodeError(f"simple: cannot encode message as JSON: {e2}") from e2
    return go_html_escape(out)


def go_html_escape(out: bytes) -> bytes:
    """orjson output with Go's escapes of ``< > &`` and U+2028/U+2029 (they occur only inside strings, so any
    span of orjson output, several messages included, can be escaped at once)."""
    if (
        b"<" in out
        or b">" in out
        or b"&" in out
        or (not out.isascii() and (b"\xe2\x80\xa8" in out or b"\xe2\x80\xa9" in out))
    ):
        for raw, escaped in _HTML_BYTES:
            out = out.replace(raw, escaped)
    return out


def _replace_surrogates(obj: Any) -> Any:
    if isinstance(obj, str):
        return obj.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(obj, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_replace_surrogates(v) for v in obj]
    return obj


def clean_text(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (what Go writes for invalid UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


# --- checked access to decoded members ---------------------------------------------------------------


def check_members(obj: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    """Raise DecodeError naming the first member of ``obj`` that the layout does not define."""
    for key in obj:
        if key not in allowed:
            raise DecodeError(f"simple: unknown member {where}.{key}" if where else f"simple: unknown member {key}")


def as_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DecodeError(f"simple: {where} must be an object, got {_kind(value)}")
    return value


def as_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise DecodeError(f"simple: {where} must be an array, got {_kind(value)}")
    return value


def as_str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise DecodeError(f"simple: {where} must be a string, got {_kind(value)}")
    return value


def as_bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise DecodeError(f"simple: {where} must be a boolean, got {_kind(value)}")
    return value


def as_int(value: Any, where: str, lo: int = INT64_MIN, hi: int = UINT64_MAX) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise DecodeError(f"simple: {where} must be an integer, got {_kind(value)}")
    if not lo <= value <= hi:
        raise DecodeError(f"simple: {where} is out of range: {value}")
    return value


def member(obj: Mapping[str, Any], key: str, where: str) -> Any:
    """A required member; raises DecodeError naming it when absent."""
    if key not in obj:
        raise DecodeError(f"simple: missing member {where}.{key}" if where else f"simple: missing member {key}")
    return obj[key]


def path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
