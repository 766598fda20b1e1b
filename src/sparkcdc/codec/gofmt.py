"""Go's text formatting, reproduced exactly: TiCDC writes floats and JSON strings with Go's rules, and
byte compatibility with real TiCDC output depends on them (``spec/tso-and-types.md`` §5)."""

from __future__ import annotations

import math
import struct

import orjson

_F32 = struct.Struct("<f")


def float32(value: float) -> float:
    """Round a Python float to the nearest float32, as TiDB stores FLOAT."""
    return _F32.unpack(_F32.pack(value))[0]  # type: ignore[no-any-return]


def _shortest(value: float, bits: int) -> tuple[str, int]:
    """Shortest round-trip digits (no leading/trailing zeros) and the decimal exponent of the first one."""
    text = repr(value)
    if bits == 32:
        for precision in range(9):
            candidate = f"{value:.{precision}e}"
            try:
                if float32(float(candidate)) == value:
                    text = candidate
                    break
            except OverflowError:
                continue
    mantissa, _, exp_text = text.partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    all_digits = int_part + frac_part
    stripped = all_digits.lstrip("0")
    exp = len(int_part) - 1 - (len(all_digits) - len(stripped)) + (int(exp_text) if exp_text else 0)
    return stripped.rstrip("0") or "0", exp


def _special(value: float) -> str | None:
    """Go's text for zeros (keeping the sign), NaN and infinities; None for every other value."""
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return None


def go_float_v(value: float, bits: int = 64) -> str:
    """Go ``fmt`` ``%v`` of a float32 (``bits=32``) or float64: CSV's float rendering."""
    special = _special(value)
    if special is not None:
        return special
    sign = "-" if value < 0 else ""
    digits, exp = _shortest(abs(value), bits)
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + _positional(digits, exp)


def go_float_f(value: float, bits: int = 64) -> str:
    """Go ``strconv.FormatFloat(v, 'f', -1, bits)``: canal-json and simple float rendering."""
    special = _special(value)
    if special is not None:
        return special
    sign = "-" if value < 0 else ""
    digits, exp = _shortest(abs(value), bits)
    return sign + _positional(digits, exp)


def go_json_float(value: float) -> str:
    """Go ``encoding/json`` float64: positional unless |x| < 1e-6 or |x| >= 1e21, exponent ``e-7``."""
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    digits, exp = _shortest(abs(value), 64)
    sign = "-" if value < 0 else ""
    if abs(value) < 1e-6 or abs(value) >= 1e21:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp)}"
    return sign + _positional(digits, exp)


def _positional(digits: str, exp: int) -> str:
    point = exp + 1  # digits before the decimal point
    if point <= 0:
        return "0." + "0" * (-point) + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


_HTML_UNSAFE = ("<", ">", "&", "\u2028", "\u2029")
_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def go_json_string(text: str, *, short_bf: bool = True) -> str:
    """A Go JSON string literal (with quotes) for ``text``.

    ``short_bf`` picks Go 1.22+ ``encoding/json`` (``\\b``, ``\\f``); easyjson (canal-json) writes
    ``\\u0008``/``\\u000c`` instead. Invalid UTF-8 must already be U+FFFD (decode with ``"replace"``).
    """
    out: str = orjson.dumps(text).decode()
    if any(ch in text for ch in _HTML_UNSAFE):
        out = "".join(_HTML_ESCAPES.get(ch, ch) for ch in out)
    if not short_bf and ("\b" in text or "\f" in text):
        out = _long_bf(out)
    return out


def _long_bf(literal: str) -> str:
    parts = []
    i = 0
    while i < len(literal):
        ch = literal[i]
        if ch == "\\" and i + 1 < len(literal):
            nxt = literal[i + 1]
            parts.append({"b": "\\u0008", "f": "\\u000c"}.get(nxt, ch + nxt))
            i += 2
            continue
        parts.append(ch)
        i += 1
    return "".join(parts)
