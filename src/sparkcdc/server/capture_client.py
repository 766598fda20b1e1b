"""Calls from the owner to another capture's internal API (``sparkcdc.server.internal_api``): start, stop and
read the status of a changefeed that capture runs."""

from __future__ import annotations

from typing import Any

import httpx

from sparkcdc.changefeed.info import ChangefeedInfo
from sparkcdc.changefeed.runner import RunnerStatus
from sparkcdc.errors import SparkcdcError

PREFIX = "/api/v2/internal/changefeeds"


class CaptureUnreachable(SparkcdcError):
    default_code = "CDC:ErrCaptureNotExist"


def _call(method: str, address: str, path: str, timeout: float, body: dict[str, Any] | None = None) -> Any:
    try:
        r = httpx.request(method, f"http://{address}{PREFIX}{path}", json=body, timeout=timeout)
    except httpx.HTTPError as e:
        raise CaptureUnreachable(f"capture at {address} did not answer: {e}", retryable=True) from e
    if r.status_code == 404:
        return None
    if r.status_code >= 400:
        try:
            message = r.json().get("error_msg", r.text)
        except ValueError:
            message = r.text
        raise SparkcdcError(f"capture at {address}: {message}", retryable=True)
    return r.json()


def start(address: str, info: ChangefeedInfo, checkpoint_ts: int) -> None:
    _call("POST", address, "/start", 30.0, {"info": info.to_record(), "checkpoint_ts": checkpoint_ts})


def stop(address: str, namespace: str, changefeed_id: str) -> None:
    """Returns once the changefeed's query stopped between micro-batches there (up to a few minutes)."""
    _call("POST", address, f"/{namespace}/{changefeed_id}/stop", 300.0)


def status(address: str, namespace: str, changefeed_id: str) -> RunnerStatus | None:
    """None: that capture does not run the changefeed."""
    rec = _call("GET", address, f"/{namespace}/{changefeed_id}/status", 2.0)
    return RunnerStatus.from_record(rec) if rec is not None else None


def remove(address: str, info: ChangefeedInfo) -> None:
    """Delete what that capture keeps of a removed changefeed."""
    _call("POST", address, "/remove", 30.0, {"info": info.to_record()})
