"""HTTP client of the Open API v2 used by ``cdc cli``; server errors come back as SparkcdcError."""

from __future__ import annotations

import json
from typing import Any

import httpx

from sparkcdc.changefeed.info import validate_changefeed_id
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.masking import mask_uri

DEFAULT_SERVER = "http://127.0.0.1:8300"


class APIError(SparkcdcError):
    """An error answered by the server (``error_code`` kept as ``code``)."""


def _message(code: str, text: str) -> str:
    prefix = f"[{code}]"
    return text[len(prefix) :] if text.startswith(prefix) else text


def server_url(server: str) -> str:
    """The base URL of ``--server`` (``host:port`` means ``http://host:port``), checked before any request, so a
    malformed value is one line instead of httpx's traceback. Raises ConfigError."""
    text = server.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        url = httpx.URL(text)
        if url.scheme not in ("http", "https"):
            raise ValueError(f"unsupported scheme {url.scheme!r}")
        if not url.host:
            raise ValueError("no host")
        if url.port is not None and not 0 < url.port <= 65535:
            raise ValueError(f"port {url.port} is out of range")
        try:
            url.host.encode("idna")  # what the resolver does with it: a label of 64+ characters fails there
        except UnicodeError as e:
            raise ValueError(f"invalid host name {url.host!r}") from e
    except (httpx.InvalidURL, ValueError) as e:
        raise ConfigError(
            f"invalid --server {mask_uri(server)!r}: {str(e).rstrip('.')}; use the URL of a cdc server's Open API, "
            f"such as {DEFAULT_SERVER}",
            code="CDC:ErrInvalidServerOption",
        ) from e
    return str(url).rstrip("/")


def _changefeed_path(changefeed_id: str, suffix: str = "") -> str:
    """``/changefeeds/<id><suffix>``; the id is checked first (TiCDC's rule and message), since a path built
    from ``a/b``, ``a?x`` or control characters would name another resource or fail inside httpx."""
    validate_changefeed_id(changefeed_id)
    return f"/changefeeds/{changefeed_id}{suffix}"


class APIClient:
    def __init__(self, server: str = DEFAULT_SERVER, timeout: float = 60.0) -> None:
        """Raises ConfigError for a malformed ``server``."""
        self.server = server_url(server)
        self.shown = mask_uri(self.server)  # for messages: a password in --server is never printed
        self._http = httpx.Client(base_url=self.server + "/api/v2", timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> APIClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _call(self, method: str, path: str, *, body: Any = None, params: dict[str, str] | None = None) -> Any:
        # ASCII JSON with \u escapes, as json.dumps writes it: an argument that is no UTF-8 (decoded to a lone
        # surrogate) still goes out, and the server names it, instead of the encoding failing here
        content = None if body is None else json.dumps(body)
        headers = None if body is None else {"content-type": "application/json"}
        try:
            resp = self._http.request(method, path, content=content, headers=headers, params=params)
        except httpx.HTTPError as e:
            raise SparkcdcError(
                f"cannot reach the cdc server at {self.shown}: {e}; check --server and that `cdc server` runs",
                code="CDC:ErrCliServerUnavailable",
                retryable=True,
            ) from e
        try:
            data = resp.json() if resp.content else {}
        except json.JSONDecodeError as e:
            raise SparkcdcError(
                f"the server at {self.shown} answered {resp.status_code} with a non-JSON body",
                code="CDC:ErrCliInvalidResponse",
            ) from e
        if resp.status_code >= 400:
            if isinstance(data, dict) and "error_code" in data:
                code = str(data["error_code"]) or "CDC:ErrInternal"
                raise APIError(_message(code, str(data.get("error_msg", ""))), code=code)
            raise APIError(f"the server answered {resp.status_code}", code="CDC:ErrInternal")
        if not isinstance(data, dict):  # every Open API v2 answer is an object
            raise SparkcdcError(
                f"the server at {self.shown} answered {method} {path} with JSON that is not an Open API v2 "
                "object; check that --server names a cdc server",
                code="CDC:ErrCliInvalidResponse",
            )
        return data

    # -- Open API v2 ----------------------------------------------------------------------------------------
    def tso(self) -> int:
        data = self._call("POST", "/tso", body={})
        return (int(data["timestamp"]) << 18) | int(data["logic_time"])

    def captures(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/captures").get("items") or [])

    def processors(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/processors").get("items") or [])

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/changefeeds", body=body)
        return result

    def verify_table(self, body: dict[str, Any]) -> list[str]:
        """The tables (``db.table``) a changefeed of ``body`` would leave out for want of a handle key."""
        data = self._call("POST", "/verify_table", body=body)
        return [f"{t['database_name']}.{t['table_name']}" for t in data.get("ineligible_tables") or []]

    def list(self, namespace: str, state: str = "all") -> list[dict[str, Any]]:
        data = self._call("GET", "/changefeeds", params={"namespace": namespace, "state": state})
        return list(data.get("items") or [])

    def get(self, namespace: str, changefeed_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", _changefeed_path(changefeed_id), params={"namespace": namespace})
        return result

    def update(self, namespace: str, changefeed_id: str, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "PUT", _changefeed_path(changefeed_id), body=body, params={"namespace": namespace}
        )
        return result

    def delete(self, namespace: str, changefeed_id: str) -> None:
        self._call("DELETE", _changefeed_path(changefeed_id), params={"namespace": namespace})

    def pause(self, namespace: str, changefeed_id: str) -> None:
        self._call("POST", _changefeed_path(changefeed_id, "/pause"), params={"namespace": namespace})

    def resume(self, namespace: str, changefeed_id: str, overwrite_checkpoint_ts: int = 0) -> None:
        self._call(
            "POST",
            _changefeed_path(changefeed_id, "/resume"),
            body={"overwrite_checkpoint_ts": overwrite_checkpoint_ts},
            params={"namespace": namespace},
        )

    def status(self, namespace: str, changefeed_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "GET", _changefeed_path(changefeed_id, "/status"), params={"namespace": namespace}
        )
        return result
