"""The internal API every capture of a cluster serves to the owner (``sparkcdc.server.capture_client``): run,
stop and report the changefeeds placed on it. Never forwarded to the owner."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from sparkcdc.changefeed.info import ChangefeedInfo
from sparkcdc.server.capture_client import PREFIX
from sparkcdc.server.executor import Executor


class StartBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    info: dict[str, Any]
    checkpoint_ts: int = 0


class RemoveBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    info: dict[str, Any]


def add_internal_routes(app: FastAPI, executor: Executor) -> None:
    @app.post(f"{PREFIX}/start")
    def start(body: StartBody) -> dict[str, Any]:
        executor.start(ChangefeedInfo.from_record(body.info), body.checkpoint_ts)
        return {}

    @app.post(f"{PREFIX}/remove")
    def remove(body: RemoveBody) -> dict[str, Any]:
        executor.runner.remove(ChangefeedInfo.from_record(body.info))
        return {}

    @app.post(f"{PREFIX}/{{namespace}}/{{changefeed_id}}/stop")
    def stop(namespace: str, changefeed_id: str) -> dict[str, Any]:
        executor.stop(namespace, changefeed_id)
        return {}

    @app.get(f"{PREFIX}/{{namespace}}/{{changefeed_id}}/status", response_model=None)
    def status(namespace: str, changefeed_id: str) -> dict[str, Any] | JSONResponse:
        st = executor.status(namespace, changefeed_id)
        if st is None:
            return JSONResponse({"error_msg": "not running on this capture", "error_code": ""}, status_code=404)
        return st.to_record()
