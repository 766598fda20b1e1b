"""Values inside an expression filter: their kinds, and the conversions TiDB applies between them.

An event's row values are typed as ``sparkcdc.model.column_type`` says (DECIMAL as ``Decimal``, temporal types as
TiDB's text, ENUM/SET as index/bitmask); an expression must see what TiDB would. Each compiled node has a static
*kind* (``INT``, ``DECIMAL``, ``FLOAT``, ``STRING``, ``BYTES``, ``DATE``, ``DATETIME``, ``TIME``, ``ENUM``, ``SET``,
``NULL``), decided when the expression is bound to a table, so that the conversion a comparison or function needs
is chosen once and the per-row work is one closure call per node.

TiDB's rules, as MySQL's (``expression.GetCmpTp4MinMax``/``getBaseCmpType``), for comparing two kinds:

* two string kinds compare as strings; ENUM and SET count as strings here and show their element names;
* a temporal value against a string or another temporal value compares as a date-time (or as a TIME);
* integers (ENUM index, SET bitmask, BIT, YEAR) compare as integers, integers and DECIMAL exactly;
* anything else, a string against a number in particular, compares as double-precision numbers, the string read
  as MySQL reads a number (its longest numeric prefix; none is 0).

Strings compare **binary** (by code point; trailing spaces count), whatever the column's collation: TiCDC runs
TiDB's expression engine with the new collation framework off (``cmd/cdc/main.go``), so ``utf8mb4_general_ci`` is
case-sensitive in its filters too, and so it is here.
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sparkcdc.filter.expr_errors import ExprEvalError
from sparkcdc.model.column_type import BLOB_TYPES, FLOAT_TYPES, INTEGER_TYPES
from sparkcdc.model.table import ColumnInfo

INT = "int"
DECIMAL = "decimal"
FLOAT = "float"
STRING = "string"
BYTES = "bytes"
DATE = "date"
DATETIME = "datetime"
TIME = "time"
ENUM = "enum"
SET = "set"
NULL = "null"

INT_LIKE = frozenset({INT, ENUM, SET})
NUMERIC = frozenset({INT, DECIMAL, FLOAT})
STRING_LIKE = frozenset({STRING, BYTES, ENUM, SET})
TEMPORAL = frozenset({DATE, DATETIME, TIME})

Row = tuple[Any, ...]
Eval = Callable[[Row], Any]

# MySQL DECIMAL has at most 65 digits; Python's default context rounds at 28.
DECIMAL_CONTEXT = decimal.Context(prec=96, rounding=decimal.ROUND_HALF_UP)
DIV_PRECISION_INCREMENT = 4  # MySQL's div_precision_increment: the scale a '/' adds
INT_MIN = -(1 << 63)
UINT_MAX = (1 << 64) - 1

_NUMBER_PREFIX = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_DATETIME_TEXT = re.compile(
    r"\s*(\d{1,4})[-/.:](\d{1,2})[-/.:](\d{1,2})"
    r"(?:[ T]+(\d{1,2})(?:[:.](\d{1,2})(?:[:.](\d{1,2})(?:\.(\d{0,6})\d*)?)?)?)?\s*$"
)
_DATETIME_DIGITS = re.compile(r"\s*(\d{8}|\d{14})(?:\.(\d{0,6})\d*)?\s*$")
_TIME_TEXT = re.compile(r"\s*(-)?(?:(\d+)\s+)?(\d+):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,6})\d*)?)?\s*$")
_TIME_DIGITS = re.compile(r"\s*(-)?(\d{1,7})(?:\.(\d{0,6})\d*)?\s*$")


@dataclass(frozen=True, slots=True)
class ColumnKind:
    """How a column's values enter an expression: their kind, and ENUM/SET element names."""

    kind: str
    elements: tuple[str, ...] = ()


def column_kind(col: ColumnInfo) -> ColumnKind:
    """The kind of a column's values (``sparkcdc.model.column_type``'s mapping)."""
    t = col.type
    if t in INTEGER_TYPES or t in ("year", "bit"):
        return ColumnKind(INT)
    if t == "decimal":
        return ColumnKind(DECIMAL)
    if t in FLOAT_TYPES:
        return ColumnKind(FLOAT)
    if t == "date":
        return ColumnKind(DATE)
    if t in ("datetime", "timestamp"):
        return ColumnKind(DATETIME)
    if t == "time":
        return ColumnKind(TIME)
    if t == "enum":
        return ColumnKind(ENUM, col.elements)
    if t == "set":
        return ColumnKind(SET, col.elements)
    if t in BLOB_TYPES or t == "geometry":
        return ColumnKind(BYTES)
    return ColumnKind(STRING)  # char, varchar, text, json (its text), vector (its text)


# -- numbers ------------------------------------------------------------------------------------------------
def text_to_float(s: str) -> float:
    """MySQL's string-to-double: the longest numeric prefix after leading spaces, 0 when there is none."""
    m = _NUMBER_PREFIX.match(s)
    if m is None:
        return 0.0
    try:
        return float(m.group(1))
    except OverflowError:  # pragma: no cover - float() saturates to inf rather than raising
        return math.inf


def text_to_decimal(s: str) -> Decimal:
    m = _NUMBER_PREFIX.match(s)
    return Decimal(m.group(1)) if m is not None else Decimal(0)


def float_text(f: float) -> str:
    """A double as MySQL prints it in a string context: ``1`` for 1.0, ``1.5``, ``1e20``."""
    if f.is_integer() and abs(f) < 1e15:
        return str(int(f))
    text = repr(f)
    return text.replace("e+", "e")


def decimal_text(d: Decimal) -> str:
    return format(d, "f")


def check_int(v: int) -> int:
    """An integer result inside MySQL's BIGINT / BIGINT UNSIGNED range; ExprEvalError otherwise (TiDB's
    ``BIGINT value is out of range``)."""
    if INT_MIN <= v <= UINT_MAX:
        return v
    raise ExprEvalError(f"BIGINT value is out of range in an expression filter ({v})")


def round_half_away(d: Decimal, places: int = 0) -> Decimal:
    return d.quantize(Decimal(1).scaleb(-places), rounding=decimal.ROUND_HALF_UP, context=DECIMAL_CONTEXT)


# -- temporal text -------------------------------------------------------------------------------------------
def _two_digit_year(y: str) -> int:
    n = int(y)
    if len(y) <= 2:
        return n + (2000 if n < 70 else 1900)
    return n


def parse_datetime_key(s: str) -> str | None:
    """Any date or date-time text MySQL accepts (``2024-1-2``, ``2024/01/02 3:04:05.6``, ``20240102``) as the
    fixed-width key ``YYYY-MM-DD HH:MM:SS.ffffff``, whose string order is time order; None when it is not one."""
    m = _DATETIME_TEXT.match(s)
    if m is not None:
        y, mo, d, h, mi, sec, frac = m.groups()
        year = _two_digit_year(y)
    else:
        m = _DATETIME_DIGITS.match(s)
        if m is None:
            return None
        digits, frac = m.groups()
        year, mo, d = int(digits[0:4]), digits[4:6], digits[6:8]
        h, mi, sec = (digits[8:10], digits[10:12], digits[12:14]) if len(digits) == 14 else (None, None, None)
    hh, mm, ss = int(h or 0), int(mi or 0), int(sec or 0)
    month, day = int(mo), int(d)
    if month > 12 or day > 31 or hh > 23 or mm > 59 or ss > 59:
        return None
    return f"{year:04d}-{month:02d}-{day:02d} {hh:02d}:{mm:02d}:{ss:02d}.{(frac or '').ljust(6, '0')}"


def column_datetime_key(v: str) -> str:
    """The key of a DATE/DATETIME/TIMESTAMP value as the capture renders it (already canonical text)."""
    n = len(v)
    if n == 10:
        return v + " 00:00:00.000000"
    if n == 19:
        return v + ".000000"
    return v.ljust(26, "0")


def parse_time_micros(s: str) -> int | None:
    """TIME text (``[-][D ]HH:MM[:SS[.f]]`` or ``[-]HHMMSS[.f]``) as signed microseconds; None when it is not."""
    m = _TIME_TEXT.match(s)
    if m is not None:
        neg, days, h, mi, sec, frac = m.groups()
        hours = int(h) + 24 * int(days or 0)
    else:
        m = _TIME_DIGITS.match(s)
        if m is None:
            return None
        neg, digits, frac = m.groups()
        digits = digits.rjust(6, "0")
        hours, mi, sec = int(digits[:-4]), digits[-4:-2], digits[-2:]
    minutes, seconds = int(mi), int(sec or 0)
    if minutes > 59 or seconds > 59:
        return None
    micros = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + int((frac or "").ljust(6, "0"))
    return -micros if neg else micros


def temporal_number(v: str, kind: str) -> Decimal | int:
    """A temporal value in a numeric context: ``YYYYMMDD``, ``YYYYMMDDHHMMSS[.f]`` or ``[-]HHMMSS[.f]``."""
    if kind == TIME:
        neg = v.startswith("-")
        body = v.lstrip("-")
        hms, _, frac = body.partition(".")
        h, m, s = hms.split(":")
        text = f"{'-' if neg else ''}{h}{m}{s}" + (f".{frac}" if frac else "")
    else:
        text = v.replace("-", "").replace(" ", "").replace(":", "")
    return Decimal(text) if "." in text else int(text)


def date_parts(v: str, kind: str) -> tuple[int, int, int] | None:
    """(year, month, day) of a DATE/DATETIME value or of date text; None when it has no date."""
    if kind in (DATE, DATETIME):
        return int(v[0:4]), int(v[5:7]), int(v[8:10])
    key = parse_datetime_key(v)
    if key is None:
        return None
    return int(key[0:4]), int(key[5:7]), int(key[8:10])


def time_parts(v: str, kind: str) -> tuple[int, int, int, int] | None:
    """(hours, minutes, seconds, microseconds), all non-negative, of a DATETIME/TIME value or of text."""
    key = column_datetime_key(v) if kind == DATETIME else parse_datetime_key(v) if len(v) > 10 else None
    if key is not None:  # text longer than a date that reads as a date-time; a shorter one is a TIME
        return int(key[11:13]), int(key[14:16]), int(key[17:19]), int(key[20:26])
    if kind == DATE:
        return 0, 0, 0, 0
    micros = parse_time_micros(v)
    if micros is None:
        return None
    micros = abs(micros)
    seconds, frac = divmod(micros, 1_000_000)
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return hours, minute, sec, frac


# -- conversions between kinds --------------------------------------------------------------------------------
def converter(kind: str, target: str, elements: tuple[str, ...] = ()) -> Callable[[Any], Any] | None:
    """A function turning a non-NULL value of ``kind`` into ``target`` (None when no conversion is needed).

    ``target`` is a comparison/operation kind: INT, DECIMAL, FLOAT, STRING, BYTES, DATETIME (the fixed-width key),
    TIME (microseconds). The function returns None where MySQL would get NULL (text that is no date).
    """
    if kind == target and kind not in (DATETIME, TIME, ENUM, SET):
        return None
    if target == STRING:
        return _to_string(kind, elements)
    if target == BYTES:
        if kind == BYTES:
            return None
        as_text = _to_string(kind, elements)
        return (lambda v: as_text(v).encode()) if as_text is not None else (lambda v: v.encode())
    if target == DATETIME:
        if kind in (DATE, DATETIME):
            return column_datetime_key
        return lambda v: parse_datetime_key(_text(v))
    if target == TIME:
        return lambda v: parse_time_micros(_text(v))
    if target == INT:
        if kind in INT_LIKE:
            return None
        if kind in TEMPORAL:
            return lambda v: int(temporal_number(v, kind))
        if kind in (STRING, BYTES):
            return lambda v: int(text_to_decimal(_text(v)).to_integral_value(decimal.ROUND_HALF_UP))
        return lambda v: int(round_half_away(Decimal(repr(v)) if isinstance(v, float) else v))
    if target == DECIMAL:
        if kind in INT_LIKE or kind == DECIMAL:
            return None  # Python compares and adds int and Decimal exactly
        if kind == FLOAT:
            return lambda v: Decimal(repr(v))
        if kind in TEMPORAL:
            return lambda v: Decimal(temporal_number(v, kind))
        return lambda v: text_to_decimal(_text(v))
    if target == FLOAT:
        if kind in INT_LIKE or kind == DECIMAL:
            return float
        if kind in TEMPORAL:
            return lambda v: float(temporal_number(v, kind))
        return lambda v: text_to_float(_text(v))
    raise ValueError(f"no conversion to {target}")  # a bug: targets are the kinds above


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _to_string(kind: str, elements: tuple[str, ...]) -> Callable[[Any], Any] | None:
    if kind in (STRING, DATE, DATETIME, TIME):
        return None
    if kind == ENUM:
        names = ("", *elements)
        return lambda v: names[v] if 0 <= v < len(names) else ""
    if kind == SET:
        return lambda v: ",".join(e for i, e in enumerate(elements) if v >> i & 1)
    if kind == BYTES:
        return lambda v: v.decode("utf-8", "replace")
    if kind == FLOAT:
        return float_text
    if kind == DECIMAL:
        return decimal_text
    return str


def truth(kind: str) -> Callable[[Any], bool]:
    """MySQL's truth of a non-NULL value of ``kind`` (a string is true when its number is not 0)."""
    if kind in INT_LIKE or kind in (DECIMAL, FLOAT):
        return bool
    if kind in TEMPORAL:
        return lambda v: temporal_number(v, kind) != 0
    return lambda v: text_to_float(_text(v)) != 0


def compare_kind(left: str, right: str) -> str:
    """The kind two operands are compared as (see the module docstring); NULL when either is NULL."""
    if NULL in (left, right):
        return NULL
    if left in STRING_LIKE and right in STRING_LIKE:
        return BYTES if BYTES in (left, right) else STRING
    if left in TEMPORAL or right in TEMPORAL:
        other = right if left in TEMPORAL else left
        if other in (STRING, BYTES, DATE, DATETIME, TIME):
            if TIME in (left, right):
                return TIME if other in (STRING, BYTES, TIME) else FLOAT
            return DATETIME
        return FLOAT
    if left in INT_LIKE and right in INT_LIKE:
        return INT
    if left in (INT, ENUM, SET, DECIMAL) and right in (INT, ENUM, SET, DECIMAL):
        return DECIMAL
    return FLOAT


def result_kind(kinds: list[str]) -> str:
    """The kind of IF/CASE/COALESCE/GREATEST over branches of ``kinds`` (NULL branches left out): the common
    numeric kind when all are numbers, the common temporal kind when all are the same, else STRING."""
    ks = [k for k in kinds if k != NULL]
    if not ks:
        return NULL
    kset = {STRING if k in (ENUM, SET) else k for k in ks}
    if len(kset) == 1:
        return next(iter(kset))
    if kset <= NUMERIC:
        return FLOAT if FLOAT in kset else DECIMAL
    if kset <= {DATE, DATETIME}:
        return DATETIME
    return BYTES if BYTES in kset else STRING


# -- compiled nodes ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Node:
    """A compiled (sub-)expression: ``fn(row)`` gives its value (None for NULL) of static ``kind``; ``const`` when
    it does not read the row (then folded to its value once); ``elements`` name an ENUM/SET column's values."""

    fn: Eval
    kind: str
    const: bool = False
    elements: tuple[str, ...] = ()


def constant(value: Any, kind: str) -> Node:
    return Node(lambda _row: value, NULL if value is None else kind, True)


def make_node(fn: Eval, kind: str, *children: Node) -> Node:
    """A node over ``children``, folded to a constant when none of them reads the row."""
    if all(c.const for c in children):
        return constant(fn(()), kind)
    return Node(fn, kind)


def coerced(node: Node, target: str) -> Eval:
    """``node``'s value as ``target`` (NULL stays None)."""
    conv = converter(node.kind, target, node.elements) if node.kind != NULL else None
    if conv is None:
        return node.fn
    f = node.fn

    def run(row: Row) -> Any:
        v = f(row)
        return None if v is None else conv(v)

    return run


def truth_of(node: Node) -> Callable[[Row], Any]:
    """``node``'s truth per row as a value whose Python truth is the SQL one, None for NULL: a number as it is
    (no call added on the hot path: comparisons give 1/0/None), anything else as True/False."""
    if node.kind == NULL:
        return lambda _row: None
    if node.kind in INT_LIKE or node.kind in (DECIMAL, FLOAT):
        return node.fn
    is_true = truth(node.kind)
    f = node.fn

    def run(row: Row) -> bool | None:
        v = f(row)
        return None if v is None else is_true(v)

    return run


def as_result(node: Node, kind: str) -> Eval:
    """``node``'s value as a branch of an IF/CASE/COALESCE of result ``kind`` (temporal text stays text)."""
    if node.kind == kind or kind == NULL or (kind in TEMPORAL and node.kind in TEMPORAL):
        return node.fn
    return coerced(node, kind)
