"""Column values <-> canal-json value strings (``spec/canal-json.md`` §3, ``tso-and-types.md`` §4).

Every non-NULL canal-json value is a JSON string. The encoder side returns the Python ``str`` that goes into
the JSON document (JSON escaping happens later, once per line); the decoder side parses those strings back
into the Python types of ``model/column_type.py``.

Two converters exist per column on the encode side: a *fast* one (``None`` when the value is already the
right ``str``) used in the hot loop, and a *strict* one that checks the Python type and reproduces Go's
handling of invalid UTF-8; the encoder falls back to the strict path only when the fast path fails.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import orjson

from sparkcdc.codec.gofmt import go_float_f
from sparkcdc.errors import DecodeError, EncodeError
from sparkcdc.model import ColumnInfo
from sparkcdc.model.column_type import BLOB_TYPES, INTEGER_TYPES

Converter = Callable[[Any], str]
Parser = Callable[[str], Any]

_F32 = struct.Struct("<f")
_dumps = orjson.dumps
_INT_LIKE: Final = INTEGER_TYPES | {"year", "bit", "enum", "set"}
_F32_PRECISIONS: Final = ("%.6g", "%.7g", "%.8g", "%.9g")


def is_binary_column_type(type_name: str) -> bool:
    """Values are bytes rendered as ISO-8859-1 text (charset ``binary``)."""
    return type_name in BLOB_TYPES or type_name == "geometry"


def f64_text(value: float) -> str:
    """Go ``FormatFloat(v, 'f', -1, 64)``.

    orjson prints the shortest round-trip digits (ryu) ten times faster than ``repr``; when it chooses an
    exponent (or writes ``null`` for NaN/Inf) the generic Go formatter takes over. Raises TypeError for a
    non-float so callers fall back to their checked path.
    """
    if value.__class__ is not float:
        raise TypeError(f"{type(value).__name__} is not a float")
    text = _dumps(value).decode()
    if "e" in text or "l" in text:
        return go_float_f(value, 64)
    return text[:-2] if text.endswith(".0") else text


def f32_text(value: float) -> str:
    """Go ``FormatFloat(float32(v), 'f', -1, 32)``.

    Rounding a float32 to 6 significant digits yields the shortest round-trip digits whenever fewer than 7
    suffice (half a float32 ulp is far below half a unit in the 6th digit), so only 6..9 are tried.
    """
    if value.__class__ is not float:
        raise TypeError(f"{type(value).__name__} is not a float")
    try:
        value = _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        value = float("inf") if value > 0 else float("-inf")
    for fmt in _F32_PRECISIONS:
        text = fmt % value
        if "e" in text or "n" in text:
            return go_float_f(value, 32)
        if _F32.unpack(_F32.pack(float(text)))[0] == value:
            return text
    return go_float_f(value, 32)  # pragma: no cover - 9 digits always round-trip a float32


def _decimal_text(value: Any) -> str:
    if value.__class__ is str:
        return value
    return format(value, "f")


def _latin1(value: Any) -> str:
    return value.decode("latin-1")  # type: ignore[no-any-return]


def go_utf8_text(value: str) -> str:
    """A ``str`` as Go would write it: lone surrogates (bytes smuggled in by ``surrogateescape``) become one
    U+FFFD per byte, as Go writes one U+FFFD per invalid UTF-8 byte."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(_fix_char(ch) for ch in value)
    return value


def _fix_char(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return "\ufffd"
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd\ufffd\ufffd"  # its 3-byte encoding is 3 invalid bytes for Go
    return ch


def fast_converter(column: ColumnInfo) -> Converter | None:
    """Hot-path value -> text for a column; ``None`` means the value is already its text (str types)."""
    kind = column.type
    if kind in _INT_LIKE:
        return int.__repr__  # also renders bool as 1/0
    if kind == "double":
        return f64_text
    if kind == "float":
        return f32_text
    if kind == "decimal":
        return _decimal_text
    if is_binary_column_type(kind):
        return _latin1
    return None


def strict_converter(column: ColumnInfo, where: str) -> Converter:
    """Value -> text with type checks; raises EncodeError naming ``where`` (``db.table.column``)."""
    kind = column.type

    def fail(value: Any) -> EncodeError:
        return EncodeError(
            f"{where}: a {type(value).__name__} value ({value!r:.60}) cannot be written for a {kind} column"
        )

    if kind in _INT_LIKE:

        def to_int(value: Any) -> str:
            if not isinstance(value, int):
                raise fail(value)
            return int.__repr__(value)

        return to_int
    if kind in ("float", "double"):
        render = f32_text if kind == "float" else f64_text

        def to_float(value: Any) -> str:
            if not isinstance(value, (int, float)):
                raise fail(value)
            return render(float(value))

        return to_float
    if kind == "decimal":

        def to_decimal(value: Any) -> str:
            if isinstance(value, Decimal):
                if not value.is_finite():
                    raise fail(value)
                return format(value, "f")
            if isinstance(value, int) and not isinstance(value, bool):
                return str(value)
            if isinstance(value, str):
                return value
            raise fail(value)

        return to_decimal
    if is_binary_column_type(kind):

        def to_latin1(value: Any) -> str:
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise fail(value)
            return bytes(value).decode("latin-1")

        return to_latin1

    def to_text(value: Any) -> str:
        if isinstance(value, str):
            return go_utf8_text(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return go_utf8_text(bytes(value).decode("utf-8", "surrogateescape"))
        raise fail(value)

    return to_text


# ---- decoding -----------------------------------------------------------------------------------------

_INT_RE = re.compile(r"-?[0-9]+\Z")


def parser_for(type_name: str, where: str) -> Parser | None:
    """Text -> Python value for a column type; ``None`` when the text is the value (strings, temporals).

    Every returned parser raises DecodeError (prefixed with ``where``) on malformed text.
    """
    if type_name in _INT_LIKE:

        def parse_int(text: str) -> int:
            if _INT_RE.match(text) is None:
                raise DecodeError(f"{where}: {text!r:.60} is not an integer")
            return int(text)

        return parse_int
    if type_name in ("float", "double"):
        bits32 = type_name == "float"

        def parse_float(text: str) -> float:
            try:
                value = float(text)
            except ValueError:
                raise DecodeError(f"{where}: {text!r:.60} is not a number") from None
            if bits32:
                try:
                    value = _F32.unpack(_F32.pack(value))[0]
                except OverflowError:
                    raise DecodeError(f"{where}: {text!r:.60} is out of FLOAT range") from None
            return value

        return parse_float
    if type_name == "decimal":

        def parse_decimal(text: str) -> Decimal:
            try:
                value = Decimal(text)
            except InvalidOperation:
                raise DecodeError(f"{where}: {text!r:.60} is not a decimal") from None
            if not value.is_finite():
                raise DecodeError(f"{where}: {text!r:.60} is not a finite decimal")
            return value

        return parse_decimal
    if is_binary_column_type(type_name):

        def parse_binary(text: str) -> bytes:
            try:
                return text.encode("latin-1")
            except UnicodeEncodeError:
                raise DecodeError(
                    f"{where}: binary value has a character above U+00FF; expected ISO-8859-1 text"
                ) from None

        return parse_binary
    return None
