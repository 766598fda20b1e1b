"""SQL literals for the model's Python values (``model/column_type.py``), rendered exactly.

Pure functions; the applier builds multi-row statements from them. Rendering by Python type is enough
because the model fixes one Python type per MySQL type:

* ``int`` (integers, YEAR, BIT as an unsigned number, ENUM index, SET bitmask) -> decimal literal; MySQL
  stores a number into BIT/ENUM/SET as the bit pattern / index / bitmask, exactly what the model carries.
* ``float`` -> ``repr`` (shortest round-trip text; a FLOAT column rounds it back to the same float32).
* ``Decimal`` -> its exact positional text (``str`` would write ``1.5E-7`` below 1e-6, which MySQL reads as
  an approximate DOUBLE literal: a DECIMAL(65,30) column would store it rounded, with no warning).
* ``str`` (temporal, text, JSON, ENUM/SET names) -> a quoted, escaped string. ``bytes`` -> a hex literal
  ``X'…'`` (binary-exact, no charset conversion). ``None`` -> NULL.

The session must not use ``NO_BACKSLASH_ESCAPES`` (``downstream.connect_for_writes`` sets its own
``sql_mode``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

from sparkcdc.errors import EncodeError
from sparkcdc.model import TableInfo
from sparkcdc.model.column_type import BLOB_TYPES, FLOAT_TYPES, INTEGER_TYPES

_ESCAPES = str.maketrans({"\\": "\\\\", "'": "\\'", "\0": "\\0", "\n": "\\n", "\r": "\\r", "\x1a": "\\Z", '"': '\\"'})


def _text(value: str) -> str:
    return "'" + value.translate(_ESCAPES) + "'"


def _bytes(value: bytes | bytearray | memoryview) -> str:
    if not value:
        return "''"
    return "X'" + bytes(value).hex() + "'"


def _float(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        raise EncodeError(f"float value {value!r} cannot be stored in MySQL")
    return repr(value)


def _bool(value: bool) -> str:
    return "1" if value else "0"


def _decimal(value: Decimal) -> str:
    return format(value, "f")


_RENDER: dict[type, Callable[[Any], str]] = {
    int: str,
    str: _text,
    bytes: _bytes,
    bytearray: _bytes,
    memoryview: _bytes,
    float: _float,
    Decimal: _decimal,
    bool: _bool,
}


def literal(value: Any) -> str:
    """One SQL literal. Raises EncodeError for a value the model never produces."""
    if value is None:
        return "NULL"
    render = _RENDER.get(type(value))
    if render is None:
        for base, fn in _RENDER.items():
            if isinstance(value, base):
                return fn(value)
        raise EncodeError(f"cannot render a {type(value).__name__} value as SQL")
    return render(value)


_ROW_RENDER: dict[type, Callable[[Any], str]] = {**_RENDER, type(None): lambda _v: "NULL"}


def row_tuple(values: Iterable[Any]) -> str:
    """``(v1,v2,…)`` for a VALUES list (hot path: one dict lookup per value)."""
    render = _ROW_RENDER
    try:
        return "(" + ",".join([render[type(v)](v) for v in values]) + ")"
    except KeyError:
        return "(" + ",".join([literal(v) for v in values]) + ")"


# The one form a column's values take in a row the MySQL sink renders (``native/src/sql.rs`` takes a column only
# when its values have its kind's Python type): integers, YEAR, BIT, ENUM index and SET bitmask as digits; FLOAT and
# DOUBLE as ``repr``; DECIMAL as its text; text, temporal and JSON values as quoted strings; binary strings, blobs
# and geometry as ``X'…'`` (``''`` when empty).
KIND_INT, KIND_FLOAT, KIND_DECIMAL, KIND_TEXT, KIND_BYTES = range(5)
_KIND_TYPES: tuple[tuple[type, ...], ...] = ((int,), (float,), (Decimal,), (str,), (bytes, bytearray, memoryview))


def value_kinds(table: TableInfo) -> list[int]:
    """Each column's kind (``KIND_*``)."""
    out = []
    for c in table.columns:
        t = c.type
        out.append(KIND_INT if t in INTEGER_TYPES or t in ("year", "bit", "enum", "set") else
                   KIND_FLOAT if t in FLOAT_TYPES else KIND_DECIMAL if t == "decimal" else
                   KIND_BYTES if t in BLOB_TYPES or t == "geometry" else KIND_TEXT)  # fmt: skip
    return out


def of_kinds(values: Sequence[Any], kinds: Sequence[int]) -> bool:
    """Whether every value is NULL or of its column's kind (the Python reference renders by a value's type, the
    kernel by its column's kind: they agree exactly when this holds)."""
    return all(v is None or isinstance(v, _KIND_TYPES[k]) for v, k in zip(values, kinds, strict=True))
