# ruff: noqa: UP031  (printf-style formatting is the fastest option on this hot path)
"""Binlog value decoders for the types that need more than a struct: DECIMAL, temporal types, BIT.

Every function takes the whole event buffer and an offset and returns the Python value documented in
``model/column_type.py`` (temporal values as TiDB's strings, zero dates kept).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from decimal import Decimal

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def decimal_size(precision: int, scale: int) -> int:
    intg = precision - scale
    return (intg // 9) * 4 + _DIG2BYTES[intg % 9] + (scale // 9) * 4 + _DIG2BYTES[scale % 9]


def read_decimal(b: bytes, p: int, precision: int, scale: int, size: int) -> Decimal:
    """MySQL binary DECIMAL: big-endian groups of 9 digits, sign in the top bit, negatives inverted."""
    raw = bytearray(b[p : p + size])
    positive = bool(raw[0] & 0x80)
    raw[0] ^= 0x80
    if not positive:
        for i in range(size):
            raw[i] ^= 0xFF
    intg = precision - scale
    lead = intg % 9
    q = 0
    parts: list[str] = []
    n = _DIG2BYTES[lead]
    if n:
        parts.append(str(int.from_bytes(raw[q : q + n], "big")))
        q += n
    for _ in range(intg // 9):
        parts.append("%09d" % int.from_bytes(raw[q : q + 4], "big"))
        q += 4
    int_text = "".join(parts).lstrip("0") or "0"
    frac: list[str] = []
    for _ in range(scale // 9):
        frac.append("%09d" % int.from_bytes(raw[q : q + 4], "big"))
        q += 4
    tail = scale % 9
    if tail:
        frac.append(str(int.from_bytes(raw[q : q + _DIG2BYTES[tail]], "big")).zfill(tail))
    text = int_text + ("." + "".join(frac) if scale else "")
    if not positive and text.strip("0.") != "":
        text = "-" + text
    return Decimal(text)


def _frac(b: bytes, p: int, fsp: int) -> int:
    """Microseconds from the (fsp+1)//2 big-endian fraction bytes."""
    if fsp <= 0:
        return 0
    if fsp <= 2:
        return b[p] * 10000
    if fsp <= 4:
        return (b[p] << 8 | b[p + 1]) * 100
    return b[p] << 16 | b[p + 1] << 8 | b[p + 2]


def _frac_text(micro: int, fsp: int) -> str:
    return ("." + ("%06d" % micro)[:fsp]) if fsp > 0 else ""


def frac_bytes(fsp: int) -> int:
    return (fsp + 1) // 2


def read_datetime2(b: bytes, p: int, fsp: int) -> str:
    packed = int.from_bytes(b[p : p + 5], "big") - 0x8000000000
    ymd = packed >> 17
    ym = ymd >> 5
    hms = packed & 0x1FFFF
    return "%04d-%02d-%02d %02d:%02d:%02d%s" % (
        ym // 13,
        ym % 13,
        ymd & 31,
        hms >> 12,
        (hms >> 6) & 63,
        hms & 63,
        _frac_text(_frac(b, p + 5, fsp), fsp),
    )


def read_timestamp2(b: bytes, p: int, fsp: int, tz: tzinfo) -> str:
    sec = int.from_bytes(b[p : p + 4], "big")
    micro = _frac(b, p + 4, fsp)
    if sec == 0 and micro == 0:
        return "0000-00-00 00:00:00" + _frac_text(0, fsp)
    when = _EPOCH + timedelta(seconds=sec) if tz is UTC else datetime.fromtimestamp(sec, tz)
    return when.strftime("%Y-%m-%d %H:%M:%S") + _frac_text(micro, fsp)


def read_time2(b: bytes, p: int, fsp: int) -> str:
    fb = frac_bytes(fsp)
    v = int.from_bytes(b[p : p + 3 + fb], "big") - (0x800000 << (8 * fb))
    neg = v < 0
    a = -v if neg else v
    hms = a >> (8 * fb)
    frac_raw = a & ((1 << (8 * fb)) - 1)
    micro = frac_raw * (10000 if fb == 1 else 100 if fb == 2 else 1) if fb else 0
    return "%s%02d:%02d:%02d%s" % (
        "-" if neg else "",
        (hms >> 12) & 0x3FF,
        (hms >> 6) & 63,
        hms & 63,
        _frac_text(micro, fsp),
    )


def read_date(b: bytes, p: int) -> str:
    x = b[p] | b[p + 1] << 8 | b[p + 2] << 16
    return "%04d-%02d-%02d" % (x >> 9, (x >> 5) & 15, x & 31)


def read_old_datetime(b: bytes, p: int) -> str:
    v = int.from_bytes(b[p : p + 8], "little")
    d, t = divmod(v, 1000000)
    return "%04d-%02d-%02d %02d:%02d:%02d" % (d // 10000, d // 100 % 100, d % 100, t // 10000, t // 100 % 100, t % 100)


def read_old_time(b: bytes, p: int) -> str:
    v = int.from_bytes(b[p : p + 3], "little", signed=True)
    neg = v < 0
    v = abs(v)
    return "%s%02d:%02d:%02d" % ("-" if neg else "", v // 10000, v // 100 % 100, v % 100)


def read_old_timestamp(b: bytes, p: int, tz: tzinfo) -> str:
    sec = int.from_bytes(b[p : p + 4], "little")
    if sec == 0:
        return "0000-00-00 00:00:00"
    return datetime.fromtimestamp(sec, tz).strftime("%Y-%m-%d %H:%M:%S")


def make_decimal_reader(precision: int, scale: int) -> Callable[[bytes, int], Decimal]:
    """A reader specialised for DECIMAL(precision, scale): one big-endian int read, then digit groups are
    peeled off with shifts and the unscaled integer is handed to Decimal as ``<digits>e-<scale>`` (which
    keeps exactly ``scale`` fraction digits)."""
    size = decimal_size(precision, scale)
    intg = precision - scale
    groups: list[tuple[int, int]] = []  # (bytes, digits) from the most significant
    if intg % 9:
        groups.append((_DIG2BYTES[intg % 9], intg % 9))
    groups += [(4, 9)] * (intg // 9) + [(4, 9)] * (scale // 9)
    if scale % 9:
        groups.append((_DIG2BYTES[scale % 9], scale % 9))
    shifts = []
    shift = size * 8
    for nbytes, digits in groups:
        shift -= nbytes * 8
        shifts.append((shift, (1 << (nbytes * 8)) - 1, 10**digits))
    sign_bit = 1 << (size * 8 - 1)
    mask = (1 << (size * 8)) - 1
    suffix = f"e-{scale}" if scale else ""

    def read(b: bytes, p: int) -> Decimal:
        raw = int.from_bytes(b[p : p + size], "big")
        negative = not raw & sign_bit
        raw = (raw ^ mask if negative else raw) & ~sign_bit
        unscaled = 0
        for sh, m, mul in shifts:
            unscaled = unscaled * mul + ((raw >> sh) & m)
        if negative and unscaled:
            return Decimal(f"-{unscaled}{suffix}")
        return Decimal(f"{unscaled}{suffix}")

    return read


class _DateCache(dict[int, str]):
    def __missing__(self, ymd: int) -> str:
        ym = ymd >> 5
        text = "%04d-%02d-%02d " % (ym // 13, ym % 13, ymd & 31)
        if len(self) < 200_000:
            self[ymd] = text
        return text


class _TimeCache(dict[int, str]):
    def __missing__(self, hms: int) -> str:
        text = "%02d:%02d:%02d" % (hms >> 12, (hms >> 6) & 63, hms & 63)
        self[hms] = text
        return text


DATE_PREFIX = _DateCache()
HMS = _TimeCache()


def make_datetime2_reader(fsp: int) -> Callable[[bytes, int], str]:
    """DATETIME2(fsp) reader with cached date and time-of-day strings (most rows share them)."""
    fb = frac_bytes(fsp)
    size = 5 + fb
    date, hms = DATE_PREFIX, HMS
    if fsp == 0:

        def read0(b: bytes, p: int) -> str:
            x = int.from_bytes(b[p : p + 5], "big") - 0x8000000000
            return date[x >> 17] + hms[x & 0x1FFFF]

        return read0
    scale = 10000 if fb == 1 else 100 if fb == 2 else 1
    div = 10 ** (6 - fsp)
    fmt = f".%0{fsp}d"

    def read(b: bytes, p: int) -> str:
        x = int.from_bytes(b[p : p + size], "big")
        packed = (x >> (8 * fb)) - 0x8000000000
        micro = (x & ((1 << (8 * fb)) - 1)) * scale
        frac: str = fmt % (micro // div)
        return date[packed >> 17] + hms[packed & 0x1FFFF] + frac

    return read


def decimal_plan(precision: int, scale: int) -> tuple[int, str]:
    """(size, expression over ``r``) giving the unscaled integer of a DECIMAL whose sign bit was cleared and
    whose bytes were un-inverted; used by the row decoder's code generator to inline DECIMAL columns."""
    size = decimal_size(precision, scale)
    intg = precision - scale
    groups: list[tuple[int, int]] = []
    if intg % 9:
        groups.append((_DIG2BYTES[intg % 9], intg % 9))
    groups += [(4, 9)] * (intg // 9) + [(4, 9)] * (scale // 9)
    if scale % 9:
        groups.append((_DIG2BYTES[scale % 9], scale % 9))
    terms = []
    shift = size * 8
    digits_after = sum(d for _, d in groups)
    for nbytes, digits in groups:
        shift -= nbytes * 8
        digits_after -= digits
        part = f"(r >> {shift})" if shift else "r"
        if shift + nbytes * 8 < size * 8:  # not the leading group: mask off the groups before it
            part = f"({part} & {(1 << (nbytes * 8)) - 1})"
        terms.append(f"{part} * {10**digits_after}" if digits_after else part)
    return size, " + ".join(terms) or "0"
