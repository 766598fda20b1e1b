"""The service GC safepoint: how far back the captured upstream data must be kept (TiCDC's owner GC manager).

TiCDC keeps a service GC safepoint in PD at the minimum checkpoint of the changefeeds that still need data,
so TiKV keeps every version they may read. Here the data is the runner's relay log, and the safepoint is:

* the minimum checkpoint-ts over changefeeds in ``normal``/``warning``/``pending``, and over ``stopped``/``failed``
  ones stopped for at most ``gc-ttl`` (a changefeed stopped longer no longer holds data back; resuming it is
  refused with ``CDC:ErrStartTsBeforeGC``, as TiCDC refuses a checkpoint behind the GC safepoint);
* never later than the current TSO minus ``gc life time`` (TiDB's ``tidb_gc_life_time``, 10 minutes), so a
  changefeed created with a recent start-ts works even when no changefeed holds data back.

``finished`` changefeeds need nothing. Pure functions: the manager supplies the records, the clock and the TSO.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sparkcdc.changefeed.info import ChangefeedInfo, ChangefeedStatus, FeedState
from sparkcdc.errors import ConfigError
from sparkcdc.model import tso

DEFAULT_GC_TTL_S = 86400  # TiCDC's `cdc server --gc-ttl`
DEFAULT_LIFE_TIME_S = 600.0  # TiDB's tidb_gc_life_time
DEFAULT_INTERVAL_S = 60.0  # TiCDC updates its service safepoint once a minute

_HOLDING = frozenset({FeedState.NORMAL, FeedState.WARNING, FeedState.PENDING})
_STOPPED = frozenset({FeedState.STOPPED, FeedState.FAILED})


@dataclass(frozen=True)
class GcPolicy:
    """``ttl_s``: how long a stopped/failed changefeed keeps holding data; ``life_time_s``: the window behind the
    current TSO never collected; ``interval_s``: seconds between safepoint updates."""

    ttl_s: float = DEFAULT_GC_TTL_S
    life_time_s: float = DEFAULT_LIFE_TIME_S
    interval_s: float = DEFAULT_INTERVAL_S

    def __post_init__(self) -> None:
        for name in ("ttl_s", "life_time_s"):
            if getattr(self, name) < 0:
                raise ConfigError(f"gc: {name} must not be negative, got {getattr(self, name)}")
        if self.interval_s <= 0:
            raise ConfigError(f"gc: interval_s must be positive, got {self.interval_s}")


def stopped_since(info: ChangefeedInfo, status: ChangefeedStatus) -> float:
    """Unix seconds since when a stopped/failed changefeed has been stopped. Records written before the stop
    time was kept fall back to the checkpoint's physical time (TiCDC measures the checkpoint lag)."""
    if info.stopped_at:
        return info.stopped_at
    return tso.physical(status.checkpoint_ts) / 1000


def gc_ttl_exceeded(info: ChangefeedInfo, status: ChangefeedStatus, now_s: float, policy: GcPolicy) -> bool:
    """True when a stopped/failed changefeed has been stopped longer than gc-ttl (its data may be gone)."""
    return info.state in _STOPPED and now_s - stopped_since(info, status) > policy.ttl_s


def safepoint(
    feeds: Iterable[tuple[ChangefeedInfo, ChangefeedStatus]], current_ts: int, now_s: float, policy: GcPolicy
) -> int:
    """Data with commit-ts below the returned TSO may be deleted (module doc). ``current_ts`` is the upstream's
    current TSO, ``now_s`` the wall clock in Unix seconds."""
    bound = tso.compose(max(tso.physical(current_ts) - int(policy.life_time_s * 1000), 0))
    for info, status in feeds:
        holds = info.state in _HOLDING or (info.state in _STOPPED and not gc_ttl_exceeded(info, status, now_s, policy))
        if holds:
            bound = min(bound, status.checkpoint_ts)
    return bound


__all__ = ["GcPolicy", "gc_ttl_exceeded", "safepoint", "stopped_since"]
