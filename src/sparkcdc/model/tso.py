"""TiDB timestamp-oracle values: ``physical_ms << 18 | logical``.

Commit timestamps, table versions, checkpoints and watermarks are all TSOs. They exceed 2**53, so they
travel as Python ints and are written as plain decimal numbers.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

from sparkcdc.errors import ConfigError

LOGICAL_BITS = 18
MAX_LOGICAL = (1 << LOGICAL_BITS) - 1
MAX_TSO = (1 << 64) - 1


def compose(physical_ms: int, logical: int = 0) -> int:
    """Build a TSO; raises ConfigError when a part is out of range."""
    if physical_ms < 0 or logical < 0 or logical > MAX_LOGICAL:
        raise ConfigError(f"invalid TSO parts physical={physical_ms} logical={logical}")
    tso = (physical_ms << LOGICAL_BITS) | logical
    if tso > MAX_TSO:
        raise ConfigError(f"TSO physical time {physical_ms} ms does not fit in 64 bits")
    return tso


def physical(tso: int) -> int:
    """Milliseconds since the Unix epoch (canal-json's ``es``)."""
    return tso >> LOGICAL_BITS


def lag_seconds(tso: int, now_s: float) -> float:
    """How far ``tso`` trails the Unix time ``now_s``, in seconds (0 when it is ahead)."""
    return max(0.0, now_s - physical(tso) / 1000)


def logical(tso: int) -> int:
    return tso & MAX_LOGICAL


def split(tso: int) -> tuple[int, int]:
    return tso >> LOGICAL_BITS, tso & MAX_LOGICAL


def to_datetime(tso: int, tz: tzinfo = UTC) -> datetime:
    """Wall-clock time of a TSO (its physical part), in ``tz``."""
    return datetime.fromtimestamp(physical(tso) / 1000, tz=tz)


def from_datetime(when: datetime, logical_part: int = 0) -> int:
    """TSO of an aware datetime; a naive datetime is taken as UTC (never the machine's zone)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    millis = int(when.timestamp() * 1000)
    return compose(millis, logical_part)


def from_unix_ms(millis: int, logical_part: int = 0) -> int:
    return compose(millis, logical_part)


def parse(text: str) -> int:
    """Parse a user-given TSO (decimal). Raises ConfigError naming the text."""
    try:
        value = int(text.strip(), 10)
    except ValueError as e:
        raise ConfigError(f"invalid TSO {text!r}: expected a decimal integer such as 433305438660591626") from e
    if value < 0 or value > MAX_TSO:
        raise ConfigError(f"invalid TSO {text!r}: must be between 0 and {MAX_TSO}")
    return value
