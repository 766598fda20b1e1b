"""Go ``time.Duration`` text: TiCDC's ``flush-interval`` is parsed and printed with Go's rules.

Durations are carried as integer nanoseconds so ``format_duration(parse_duration(s))`` is exact.
"""

from __future__ import annotations

import re

from sparkcdc.errors import ConfigError

NANOSECOND = 1
MICROSECOND = 1000
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS = {"ns": 1, "us": MICROSECOND, "µs": MICROSECOND, "μs": MICROSECOND, "ms": MILLISECOND,
          "s": SECOND, "m": MINUTE, "h": HOUR}  # fmt: skip
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str, *, key: str = "duration") -> int:
    """Nanoseconds of a Go duration string (``2s``, ``1m30s``, ``-10s``, ``1.5h``, ``0``).

    Raises ConfigError naming ``key`` when the text is not a Go duration.
    """
    s = text
    sign = 1
    if s[:1] in ("+", "-"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ConfigError(f"invalid {key} {text!r}: not a Go duration (use e.g. 5s, 1m30s, 500ms)")
    total = 0
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ConfigError(f"invalid {key} {text!r}: not a Go duration (use e.g. 5s, 1m30s, 500ms)")
        number, unit = m.group(1), m.group(2)
        whole, _, frac = number.partition(".")
        scale = _UNITS[unit]
        total += int(whole or "0") * scale
        if frac:
            total += int(frac) * scale // 10 ** len(frac)
        pos = m.end()
    if total >= 1 << 63:
        raise ConfigError(f"invalid {key} {text!r}: duration overflows")
    return sign * total


def format_duration(ns: int) -> str:
    """Go ``Duration.String()``: ``10m0s``, ``2s``, ``1h2m3.5s``, ``500ms``, ``0s``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < SECOND:
        for unit, scale in (("ms", MILLISECOND), ("µs", MICROSECOND), ("ns", NANOSECOND)):
            if u >= scale:
                return sign + _fraction(u, scale) + unit
    hours, rest = divmod(u, HOUR)
    minutes, rest = divmod(rest, MINUTE)
    out = sign
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return out + _fraction(rest, SECOND) + "s"


def _fraction(value: int, scale: int) -> str:
    whole, frac = divmod(value, scale)
    if not frac:
        return str(whole)
    digits = len(str(scale)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")
