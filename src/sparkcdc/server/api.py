"""TiCDC's Open API v2 over FastAPI: same paths, JSON shapes and error bodies as TiCDC.

Errors are ``{"error_msg": "[CDC:ErrX]message", "error_code": "CDC:ErrX"}`` with status 400 for bad requests
(invalid parameters, unknown changefeed, refused updates …) and 500 otherwise, as TiCDC's middleware does.
Handlers are plain ``def`` so FastAPI runs them in its thread pool (runner start/stop may block).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError
from starlette.exceptions import HTTPException as StarletteHTTPException

from sparkcdc import __version__
from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.changefeed.info import DEFAULT_NAMESPACE, ERR_API_INVALID_PARAM, RUNNING
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.model import tso
from sparkcdc.server import api_model, dashboard
from sparkcdc.server.changefeed import ChangefeedManager, CreateRequest, states_needed
from sparkcdc.server.cluster import Membership, SingleNode
from sparkcdc.server.cluster_runner import ClusterRunner
from sparkcdc.server.executor import Executor
from sparkcdc.server.internal_api import add_internal_routes
from sparkcdc.server.metrics import CONTENT_TYPE

log = logging.getLogger(__name__)

_BAD_REQUEST_CODES = frozenset(
    {
        "CDC:ErrAPIInvalidParam",
        "CDC:ErrSinkURIInvalid",
        "CDC:ErrStartTsBeforeGC",
        "CDC:ErrChangeFeedNotExists",
        "CDC:ErrTargetTsBeforeStartTs",
        "CDC:ErrTableIneligible",
        "CDC:ErrFilterRuleInvalid",
        "CDC:ErrChangefeedUpdateRefused",
        "CDC:ErrMySQLConnectionError",
        "CDC:ErrMySQLInvalidConfig",
        "CDC:ErrCaptureNotExist",
        "CDC:ErrSchedulerRequestFailed",
    }
)

U64 = Field(default=0, ge=0, le=(1 << 64) - 1)
ERR_OWNER_NOT_FOUND = "CDC:ErrOwnerNotFound"
# served by the owner (forwarded from other captures)
_OWNER_PATHS = ("/api/v2/changefeeds", "/api/v2/verify_table", "/api/v2/owner", "/api/v2/processors", "/dashboard")
_FORWARDED = "x-sparkcdc-forwarded-by"


async def forward(request: Request, address: str, capture_id: str) -> Response:
    """``request`` sent on to the owner at ``address``, its answer returned as it is."""
    import httpx

    headers = {k: v for k, v in request.headers.items() if k.lower() in ("content-type", "accept")}
    headers[_FORWARDED] = capture_id
    try:
        async with httpx.AsyncClient(timeout=60.0) as client:
            r = await client.request(request.method, f"http://{address}{request.url.path}",
                                     params=request.query_params, content=await request.body(),
                                     headers=headers)  # fmt: skip
    except httpx.HTTPError as e:
        return JSONResponse(error_body(ERR_OWNER_NOT_FOUND, f"the owner at {address} did not answer: {e}"),
                            status_code=503)  # fmt: skip
    return Response(r.content, status_code=r.status_code, media_type=r.headers.get("content-type"))


class ChangefeedConfigBody(BaseModel):
    """Body of create/update (TiCDC's ``ChangefeedConfig``; PD/TLS fields are accepted and ignored).

    JSON may carry a lone UTF-16 surrogate (``"\\ud800"``), which is no Unicode text: stored, it could never be
    shown back (every answer naming it would fail to encode). It is refused here, naming the field."""

    model_config = ConfigDict(extra="ignore")
    namespace: str = ""
    changefeed_id: str = ""
    start_ts: int = U64
    target_ts: int = U64
    sink_uri: str = ""
    replica_config: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _unicode_only(cls, data: Any) -> Any:
        where = _surrogate_at(data, "")
        if where is not None:
            raise PydanticCustomError("unicode", "{field} holds a lone UTF-16 surrogate, which is not Unicode text; "
                                      "send valid UTF-8", {"field": where or "the body"})  # fmt: skip
        return data


def _surrogate_at(value: Any, path: str) -> str | None:
    """The path of the first string (or key) in ``value`` with a lone surrogate, or None."""
    if isinstance(value, str):
        return path if any("\ud800" <= c <= "\udfff" for c in value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _surrogate_at(key, path) if isinstance(key, str) else None
            found = found if found is not None else _surrogate_at(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _surrogate_at(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


class ResumeBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    overwrite_checkpoint_ts: int = U64


def error_body(code: str, message: str) -> dict[str, str]:
    # an error may quote what the user sent: never let a lone surrogate in it make the answer itself fail
    text = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return {"error_msg": f"[{code}]{text}", "error_code": code}


def _invalid_parameter(errors: Sequence[Any]) -> JSONResponse:
    parts = []
    for e in errors:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        parts.append(f"{where}: {e.get('msg', 'invalid')}" if where else str(e.get("msg", "invalid")))
    return JSONResponse(error_body(ERR_API_INVALID_PARAM, "invalid api parameter: " + "; ".join(parts)),
                        status_code=400)  # fmt: skip


def _status_for(err: SparkcdcError) -> int:
    return 400 if err.code in _BAD_REQUEST_CODES or isinstance(err, ConfigError) else 500


def create_app(manager: ChangefeedManager, membership: Membership | None = None, executor: Executor | None = None,
               scheduler: ClusterRunner | None = None) -> FastAPI:  # fmt: skip
    """The Open API application serving ``manager`` as a capture of ``membership`` (one node by default).

    On a capture that is not the owner, changefeed and owner requests are forwarded to the owner (as TiCDC's
    API does), so every node answers them alike. In a cluster (``executor`` and ``scheduler``), the owner
    places the changefeeds on the captures, and each capture serves the internal API that runs its share."""
    app = FastAPI(title="sparkcdc Open API", version="v2", docs_url=None, redoc_url=None, openapi_url=None)
    cluster: Membership = membership or SingleNode(manager.addr)

    @app.middleware("http")
    async def _to_owner(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        path = request.url.path
        owners = path.startswith(_OWNER_PATHS) or (request.method == "POST" and path.startswith("/api/v2/captures/"))
        if cluster.is_owner() or not owners:
            return await call_next(request)
        owner = cluster.owner()
        if owner is None or request.headers.get(_FORWARDED):
            return JSONResponse(error_body(ERR_OWNER_NOT_FOUND, "no owner is elected yet; retry in a few seconds"),
                                status_code=503)  # fmt: skip
        return await forward(request, owner.address, cluster.capture_id)

    @app.exception_handler(SparkcdcError)
    def _on_error(_: Request, exc: SparkcdcError) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.message), status_code=_status_for(exc))

    @app.exception_handler(RequestValidationError)
    def _on_invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _invalid_parameter(exc.errors())

    @app.exception_handler(ValidationError)
    def _on_model_error(_: Request, exc: ValidationError) -> JSONResponse:
        # a model built from user input inside a handler: the same 400 as a malformed request body
        return _invalid_parameter(exc.errors())

    @app.exception_handler(StarletteHTTPException)
    def _on_http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = "CDC:ErrAPIInvalidParam" if exc.status_code < 500 else "CDC:ErrInternal"
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(Exception)
    def _on_unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error in the Open API")
        return JSONResponse(error_body("CDC:ErrInternal", f"internal error: {type(exc).__name__}"), status_code=500)

    manager.metrics.bind(lambda: manager.list(None), cluster.is_owner, manager.runner.capture_stats)

    @app.get("/dashboard", response_class=HTMLResponse)
    def status_page() -> str:
        """The status page (``sparkcdc.server.dashboard``), served by the owner (it polls the changefeeds)."""
        feeds = [dashboard.FeedRow(info, st, manager.history.rows_per_second(name), manager.history.samples(name))
                 for info, st in manager.list(None) for name in [f"{info.namespace}/{info.id}"]]  # fmt: skip
        return dashboard.render(cluster.cluster_id, feeds, cluster.captures(), manager.clock())

    @app.get("/metrics")
    def metrics() -> Response:
        """Prometheus text format (``sparkcdc.server.metrics``); each server its own, never forwarded."""
        return Response(manager.metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/api/v2/health")
    def health() -> dict[str, Any]:
        return {}

    @app.get("/api/v2/status")
    def status() -> dict[str, Any]:
        return {
            "version": __version__,
            "git_hash": "",
            "id": cluster.capture_id,
            "cluster_id": cluster.cluster_id,
            "pid": os.getpid(),
            "is_owner": cluster.is_owner(),
            "liveness": 0,
            "ready": manager.runner.ready(),
        }

    @app.get("/api/v2/captures")
    def captures() -> dict[str, Any]:
        items = [c.to_api() for c in cluster.captures()]
        return {"total": len(items), "items": items}

    @app.post("/api/v2/captures/{capture_id}/drain")
    def drain(capture_id: str) -> dict[str, Any]:
        """TiCDC's drain: move the capture's changefeeds to the others; ``current_table_count`` is how many it
        still runs (call again until 0). Draining the owner also hands ownership to another capture."""
        captures = {c.id: c for c in cluster.captures()}
        if capture_id not in captures:
            raise ConfigError(f"capture {capture_id} does not exist", code="CDC:ErrCaptureNotExist")
        if len(captures) == 1 or scheduler is None:  # a server without --pd is a cluster of one
            raise ConfigError("cannot drain the only capture of the cluster; start another cdc server first",
                              code="CDC:ErrSchedulerRequestFailed")  # fmt: skip
        remaining = scheduler.drain(capture_id)
        if captures[capture_id].is_owner:
            cluster.resign()
        return {"current_table_count": remaining}

    @app.get("/api/v2/processors")
    def processors() -> dict[str, Any]:
        """TiCDC's processor list: which capture runs each changefeed."""
        own = cluster.owner()
        placed = scheduler.placements() if scheduler is not None else {
            (info.namespace, info.id): own.id if own else None
            for info, _ in manager.list(None) if info.state in RUNNING}  # fmt: skip
        items = [{"namespace": ns, "changefeed_id": cf, "capture_id": capture or ""}
                 for (ns, cf), capture in sorted(placed.items())]  # fmt: skip
        return {"total": len(items), "items": items}

    if executor is not None:
        add_internal_routes(app, executor)

    @app.post("/api/v2/owner/resign")
    def resign() -> dict[str, Any]:
        cluster.resign()
        return {}

    @app.post("/api/v2/tso")
    def query_tso() -> dict[str, Any]:
        physical, logical = tso.split(manager.current_tso())
        return {"timestamp": physical, "logic_time": logical}

    @app.post("/api/v2/changefeeds")
    def create(body: ChangefeedConfigBody) -> dict[str, Any]:
        req = CreateRequest(
            changefeed_id=body.changefeed_id,
            namespace=body.namespace or DEFAULT_NAMESPACE,
            sink_uri=body.sink_uri,
            start_ts=body.start_ts,
            target_ts=body.target_ts,
            config=ReplicaConfig.from_api(body.replica_config),
        )
        info, st = manager.create(req)
        return api_model.changefeed_info(info, st)

    @app.post("/api/v2/verify_table")
    def verify_table(body: ChangefeedConfigBody) -> dict[str, Any]:
        """TiCDC's verify_table: the tables the replica config matches that cannot be replicated (no handle key)."""
        tables = manager.ineligible_tables(ReplicaConfig.from_api(body.replica_config), body.start_ts)
        return {"ineligible_tables": [{"database_name": t.schema, "table_name": t.table} for t in tables]}

    @app.get("/api/v2/changefeeds")
    def list_changefeeds(namespace: str = DEFAULT_NAMESPACE, state: str = "") -> dict[str, Any]:
        wanted = states_needed(state)
        items = [
            api_model.changefeed_common_info(info, st)
            for info, st in manager.list(namespace or DEFAULT_NAMESPACE)
            if wanted is None or info.state in wanted
        ]
        return {"total": len(items), "items": items}

    @app.get("/api/v2/changefeeds/{changefeed_id}")
    def get(changefeed_id: str, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        info, st = manager.get(namespace, changefeed_id)
        return api_model.changefeed_info(info, st, manager.snapshot(namespace, changefeed_id))

    @app.put("/api/v2/changefeeds/{changefeed_id}")
    def update(changefeed_id: str, body: ChangefeedConfigBody, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        config = ReplicaConfig.from_api(body.replica_config) if body.replica_config is not None else None
        info, st = manager.update(
            body.namespace or namespace,
            changefeed_id,
            target_ts=body.target_ts,
            sink_uri=body.sink_uri,
            config=config,
        )
        return api_model.changefeed_info(info, st)

    @app.delete("/api/v2/changefeeds/{changefeed_id}")
    def delete(changefeed_id: str, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        manager.remove(namespace, changefeed_id)
        return {}

    @app.post("/api/v2/changefeeds/{changefeed_id}/pause")
    def pause(changefeed_id: str, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        manager.pause(namespace, changefeed_id)
        return {}

    @app.post("/api/v2/changefeeds/{changefeed_id}/resume")
    def resume(
        changefeed_id: str, body: ResumeBody | None = None, namespace: str = DEFAULT_NAMESPACE
    ) -> dict[str, Any]:
        manager.resume(namespace, changefeed_id, body.overwrite_checkpoint_ts if body else 0)
        return {}

    @app.get("/api/v2/changefeeds/{changefeed_id}/synced")
    def synced(changefeed_id: str, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        info, st = manager.get(namespace, changefeed_id)
        totals = manager.metrics.totals().get((namespace, changefeed_id))
        last = totals.last_synced_ts if totals and totals.last_synced_ts else info.start_ts  # none since its start
        return api_model.synced_status(info.config, st, last, int(manager.clock() * 1000))

    @app.get("/api/v2/changefeeds/{changefeed_id}/status")
    def cf_status(changefeed_id: str, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        info, st = manager.get(namespace, changefeed_id)
        return api_model.changefeed_status(info, st, manager.snapshot(namespace, changefeed_id))

    return app
