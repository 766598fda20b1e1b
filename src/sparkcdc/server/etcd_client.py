"""A small etcd v3 client over etcd's JSON gateway (``/v3/...``) with httpx.

Why not a gRPC client: PyPI's ``etcd3`` is unmaintained and fails at import with the protobuf our other
dependencies need (``../shared/ENVIRONMENT.md`` section 8); the gateway is part of every etcd v3 server and needs
nothing but HTTP. Its quirks are handled here: keys and values are base64, int64s come back as strings, and
fields with default values are left out (a failed txn has no ``succeeded``, an empty range no ``kvs``).

Endpoints are tried in order; a request that reaches none raises MetaStoreError (retryable): etcd is down.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import httpx

from sparkcdc.errors import ConfigError, SparkcdcError


class EtcdError(SparkcdcError):
    default_code = "CDC:ErrPDEtcdAPIError"


@dataclass(frozen=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    lease: int


def _b64(s: str | bytes) -> str:
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


def prefix_end(prefix: str) -> str:
    """The ``range_end`` that makes a range cover every key starting with ``prefix``."""
    raw = prefix.encode()
    return _b64(raw[:-1] + bytes([raw[-1] + 1]))


def parse_endpoints(pd: str) -> list[str]:
    """``--pd http://127.0.0.1:2379,http://h2:2379`` -> base URLs. Raises ConfigError."""
    out = []
    for part in (p.strip() for p in pd.split(",") if p.strip()):
        try:
            url = httpx.URL(part if "://" in part else f"http://{part}")
            port = url.port or 0
            ok = url.scheme in ("http", "https") and bool(url.host) and 0 < port < 65536 and url.path in ("", "/")
        except (httpx.InvalidURL, ValueError):
            ok = False
        if not ok:
            raise ConfigError(f"invalid --pd endpoint {part!r}; use http://host:port, comma-separated")
        out.append(f"{url.scheme}://{url.host}:{url.port}")
    if not out:
        raise ConfigError("--pd names no endpoint; use http://host:port, comma-separated")
    return out


class EtcdClient:
    """Thread-safe (httpx.Client is). ``timeout``: seconds per request."""

    def __init__(self, endpoints: list[str], timeout: float = 5.0) -> None:
        self.endpoints = list(endpoints)
        self.timeout = timeout
        self._http = httpx.Client(timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        last: Exception | None = None
        for i, base in enumerate(self.endpoints):
            try:
                r = self._http.post(f"{base}/v3/{path}", json=body)
            except httpx.HTTPError as e:
                last = e
                continue
            if r.status_code != 200:
                raise EtcdError(f"etcd {path}: HTTP {r.status_code}: {r.text[:200]}", retryable=True)
            if i:  # remember the endpoint that answered
                self.endpoints = self.endpoints[i:] + self.endpoints[:i]
            doc = r.json()
            return doc if isinstance(doc, dict) else {}
        raise EtcdError(f"etcd is unreachable at {', '.join(self.endpoints)}: {last}", retryable=True)

    # -- kv ---------------------------------------------------------------------------------------------
    def put(self, key: str, value: bytes | str, lease: int = 0) -> None:
        body: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
        if lease:
            body["lease"] = str(lease)
        self._call("kv/put", body)

    def get(self, key: str) -> KeyValue | None:
        kvs = self._range({"key": _b64(key)})
        return kvs[0] if kvs else None

    def get_prefix(self, prefix: str) -> list[KeyValue]:
        """Every key under ``prefix``, in key order."""
        return self._range({"key": _b64(prefix), "range_end": prefix_end(prefix)})

    def _range(self, body: dict[str, Any]) -> list[KeyValue]:
        return [_kv(kv) for kv in self._call("kv/range", body).get("kvs", [])]

    def delete(self, key: str) -> bool:
        return int(self._call("kv/deleterange", {"key": _b64(key)}).get("deleted", 0)) > 0

    def txn(self, compare: list[dict[str, Any]], success: list[dict[str, Any]],
            failure: list[dict[str, Any]] | None = None) -> tuple[bool, list[dict[str, Any]]]:  # fmt: skip
        """An etcd transaction in the gateway's JSON (keys already base64, see ``op_*``): (succeeded, responses)."""
        doc = self._call("kv/txn", {"compare": compare, "success": success, "failure": failure or []})
        return bool(doc.get("succeeded", False)), list(doc.get("responses", []))

    # -- watch --------------------------------------------------------------------------------------------
    def wait_for_change(self, prefix: str, timeout: float) -> bool:
        """Wait until a key under ``prefix`` is put or deleted (True) or ``timeout`` seconds pass (False). Changes
        made before the call are not seen: the caller reads the state after it returns either way. Raises
        EtcdError (retryable) when no endpoint answers."""
        body = {"create_request": {"key": _b64(prefix), "range_end": prefix_end(prefix)}}
        limits = httpx.Timeout(self.timeout, read=timeout)
        last: Exception | None = None
        for base in self.endpoints:
            try:
                with self._http.stream("POST", f"{base}/v3/watch", json=body, timeout=limits) as r:
                    if r.status_code != 200:
                        raise EtcdError(f"etcd watch: HTTP {r.status_code}", retryable=True)
                    for line in r.iter_lines():  # {"result": {...}} per line: the watch's creation, then events
                        if line.strip() and json.loads(line).get("result", {}).get("events"):
                            return True
                raise EtcdError("etcd ended the watch", retryable=True)
            except httpx.ReadTimeout:
                return False
            except (httpx.HTTPError, ValueError) as e:  # ValueError: a line that is no JSON
                last = e
        raise EtcdError(f"etcd is unreachable at {', '.join(self.endpoints)}: {last}", retryable=True)

    # -- leases -------------------------------------------------------------------------------------------
    def grant(self, ttl: int) -> int:
        return int(self._call("lease/grant", {"TTL": str(ttl)})["ID"])

    def keepalive(self, lease: int) -> int:
        """Refresh ``lease``; its remaining TTL in seconds, 0 when it has expired."""
        doc = self._call("lease/keepalive", {"ID": str(lease)})
        return int(doc.get("result", {}).get("TTL", 0))

    def revoke(self, lease: int) -> None:
        """Drop ``lease`` and its keys; a lease that already expired is what was wanted, not an error."""
        try:
            self._call("lease/revoke", {"ID": str(lease)})
        except EtcdError as e:
            if "lease not found" not in e.message:
                raise


def _kv(kv: dict[str, Any]) -> KeyValue:
    return KeyValue(
        base64.b64decode(kv["key"]).decode(),
        base64.b64decode(kv.get("value", "")),
        int(kv.get("create_revision", 0)),
        int(kv.get("mod_revision", 0)),
        int(kv.get("lease", 0)),
    )


# -- txn building blocks (the gateway's JSON) ------------------------------------------------------------
def absent(key: str) -> dict[str, Any]:
    """Compare: ``key`` does not exist."""
    return {"key": _b64(key), "result": "EQUAL", "target": "CREATE", "create_revision": "0"}


def present(key: str) -> dict[str, Any]:
    """Compare: ``key`` exists."""
    return {"key": _b64(key), "result": "GREATER", "target": "CREATE", "create_revision": "0"}


def created_at(key: str, revision: int) -> dict[str, Any]:
    """Compare: ``key`` is the one created at ``revision`` (not deleted and put again since)."""
    return {"key": _b64(key), "result": "EQUAL", "target": "CREATE", "create_revision": str(revision)}


def op_put(key: str, value: bytes | str, lease: int = 0) -> dict[str, Any]:
    req: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
    if lease:
        req["lease"] = str(lease)
    return {"request_put": req}


def op_delete(key: str) -> dict[str, Any]:
    return {"request_delete_range": {"key": _b64(key)}}


def value_is(key: str, value: str) -> dict[str, Any]:
    """Compare: ``key`` holds ``value``."""
    return {"key": _b64(key), "result": "EQUAL", "target": "VALUE", "value": _b64(value)}
