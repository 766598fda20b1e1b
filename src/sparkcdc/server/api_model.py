"""TiCDC Open API v2 JSON shapes, key order as TiCDC's Go structs (dict order is output order).

Sink URIs and the config's secrets are masked in every shape built here. Times: ``create_time`` is RFC 3339 (Go
``time.Time``); ``checkpoint_time`` is TiCDC's ``JSONTime`` (``2006-01-02 15:04:05.000`` in the server's local zone).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.changefeed.info import ChangefeedInfo, ChangefeedStatus, FeedState, RunningError
from sparkcdc.changefeed.snapshot import SnapshotProgress
from sparkcdc.masking import mask_config, mask_uri
from sparkcdc.model import tso


def json_time(ts: int) -> str:
    """TiCDC's JSONTime of a TSO's physical part, local time with milliseconds."""
    when = datetime.fromtimestamp(tso.physical(ts) / 1000).astimezone()
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d}"


def running_error(err: RunningError | None) -> dict[str, Any] | None:
    if err is None:
        return None
    out: dict[str, Any] = {}
    if err.time:
        out["time"] = err.time
    out.update({"addr": err.addr, "code": err.code, "message": err.message})
    return out


def _shown_state(state: FeedState) -> str:
    return FeedState.WARNING.value if state == FeedState.PENDING else state.value


def changefeed_info(
    info: ChangefeedInfo, status: ChangefeedStatus, snapshot: SnapshotProgress | None = None
) -> dict[str, Any]:
    """``ChangeFeedInfo`` (GET /changefeeds/{id}, create, update): Go ``omitempty`` fields dropped when zero;
    ``snapshot`` (ours: TiCDC has no initial snapshot) while the run has one."""
    out: dict[str, Any] = {}
    if info.upstream_id:
        out["upstream_id"] = info.upstream_id
    if info.namespace:
        out["namespace"] = info.namespace
    out["id"] = info.id
    out["sink_uri"] = mask_uri(info.sink_uri)
    out["create_time"] = info.create_time
    if info.start_ts:
        out["start_ts"] = info.start_ts
    if info.target_ts:
        out["target_ts"] = info.target_ts
    out["config"] = mask_config(info.config.to_api())
    out["state"] = _shown_state(info.state)
    if info.error is not None:
        out["error"] = running_error(info.error)
    if info.creator_version:
        out["creator_version"] = info.creator_version
    out["resolved_ts"] = status.resolved_ts
    out["checkpoint_ts"] = status.checkpoint_ts
    out["checkpoint_time"] = json_time(status.checkpoint_ts)
    if snapshot is not None:
        out["snapshot"] = snapshot.to_api()
    return out


def changefeed_common_info(info: ChangefeedInfo, status: ChangefeedStatus) -> dict[str, Any]:
    """``ChangefeedCommonInfo`` (items of GET /changefeeds, and so ``changefeed list`` and ``query -s``): ``error``
    is the error, else the last warning, so a ``warning`` changefeed says why; none while ``normal`` (TiCDC's rule:
    a changefeed that is retrying again shows no stale error)."""
    shown = None if info.state == FeedState.NORMAL else info.error or status.last_warning
    return {
        "upstream_id": info.upstream_id,
        "namespace": info.namespace,
        "id": info.id,
        "state": _shown_state(info.state),
        "checkpoint_tso": status.checkpoint_ts,
        "checkpoint_time": json_time(status.checkpoint_ts),
        "error": running_error(shown),
    }


def changefeed_status(
    info: ChangefeedInfo, status: ChangefeedStatus, snapshot: SnapshotProgress | None = None
) -> dict[str, Any]:
    """``ChangefeedStatus`` (GET /changefeeds/{id}/status), plus ``snapshot`` as in :func:`changefeed_info`."""
    out: dict[str, Any] = {
        "state": _shown_state(info.state),
        "resolved_ts": status.resolved_ts,
        "checkpoint_ts": status.checkpoint_ts,
    }
    if info.error is not None:
        out["last_error"] = running_error(info.error)
    if status.last_warning is not None:
        out["last_warning"] = running_error(status.last_warning)
    if snapshot is not None:
        out["snapshot"] = snapshot.to_api()
    return out


SYNCED_CHECK_INTERVAL_S = 300  # TiCDC's [synced-status] defaults
CHECKPOINT_INTERVAL_S = 15
_UNSURE = ("Please check whether the upstream is online and its binlog is being captured. If it is not, the data "
           "syncing process is complete. Otherwise, if the gap between resolved ts and checkpoint ts is small and "
           "the upstream is online, the data syncing is incomplete, so please wait")


def synced_status(config: ReplicaConfig, status: ChangefeedStatus, last_synced_ts: int, now_ms: int) -> dict[str, Any]:
    """``GET /api/v2/changefeeds/{id}/synced`` (TiCDC's ``SyncedStatus``): synced once no row change arrived for
    ``synced-check-interval`` seconds and the checkpoint is within ``checkpoint-interval`` seconds of now."""
    section = config.sections.get("synced-status", {})
    quiet_s = int(section.get("synced-check-interval", SYNCED_CHECK_INTERVAL_S))
    close_s = int(section.get("checkpoint-interval", CHECKPOINT_INTERVAL_S))
    checkpoint_ms, resolved_ms = tso.physical(status.checkpoint_ts), tso.physical(status.resolved_ts)
    quiet = now_ms - tso.physical(last_synced_ts) > quiet_s * 1000
    if quiet and now_ms - checkpoint_ms < close_s * 1000:
        synced, info = True, "Data syncing is finished"
    elif quiet and resolved_ms - checkpoint_ms < close_s * 1000:
        synced, info = False, _UNSURE  # the upstream's resolved ts is not advancing either
    else:
        synced, info = False, "The data syncing is not finished, please wait"
    when = datetime.fromtimestamp(now_ms // 1000).astimezone()
    return {"synced": synced, "sink_checkpoint_ts": json_time(status.checkpoint_ts),
            "puller_resolved_ts": json_time(status.resolved_ts), "last_synced_ts": json_time(last_synced_ts),
            "now_ts": when.strftime("%Y-%m-%d %H:%M:%S.000"), "info": info}  # fmt: skip
