"""Changefeed info and status in etcd, shared by every ``cdc server --pd`` of a cluster.

Keys follow TiCDC's layout (``/tidb/cdc/<cluster>/<namespace>/changefeed/info|status/<id>``), so an operator's
``etcdctl get --prefix /tidb/cdc/`` finds them where TiCDC keeps its own; the values are this project's records
(the same JSON as the SQLite store), not TiCDC's. Every change is one etcd transaction conditioned on the info
key (create: absent; update/delete: present), and, for the status the owner writes, on ``fence``: compares
that hold only while this node is the owner, so a deposed owner cannot overwrite its successor's progress.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.changefeed.info import ChangefeedInfo, ChangefeedStatus
from sparkcdc.server.etcd_client import EtcdClient, EtcdError, absent, op_delete, op_put, present
from sparkcdc.server.store import ChangefeedExists, ChangefeedNotFound, decode_record

CDC_ROOT = "/tidb/cdc"
META = "__cdc_meta__"  # TiCDC's namespace-like segment for captures and the owner


class NotOwner(EtcdError):
    default_code = "CDC:ErrNotOwner"


class EtcdStore:
    """The ``MetaStore`` protocol over etcd. ``fence`` gives the compares a status write must pass."""

    def __init__(self, client: EtcdClient, cluster_id: str = "default",
                 fence: Callable[[], list[dict[str, Any]]] | None = None) -> None:  # fmt: skip
        self.client = client
        self.root = f"{CDC_ROOT}/{cluster_id}"
        self.fence = fence

    def close(self) -> None:
        """The client belongs to the server (captures and election use it too)."""

    def _key(self, kind: str, namespace: str, changefeed_id: str) -> str:
        return f"{self.root}/{namespace}/changefeed/{kind}/{changefeed_id}"

    def create(self, info: ChangefeedInfo, status: ChangefeedStatus) -> None:
        """Raises ChangefeedExists (nothing written) when the id is taken."""
        key = self._key("info", info.namespace, info.id)
        ok, _ = self.client.txn([absent(key)], [op_put(key, _record(info)),
                                                op_put(self._key("status", info.namespace, info.id), _record(status))])
        if not ok:
            raise ChangefeedExists(f"changefeed already exists, {info.id}")

    def get(self, namespace: str, changefeed_id: str) -> tuple[ChangefeedInfo, ChangefeedStatus]:
        """Raises ChangefeedNotFound."""
        info = self.client.get(self._key("info", namespace, changefeed_id))
        status = self.client.get(self._key("status", namespace, changefeed_id))
        if info is None or status is None:
            raise ChangefeedNotFound(f"changefeed not exists, {changefeed_id}")
        return decode_record(info.value.decode(), status.value.decode())

    def list(self, namespace: str | None = None) -> list[tuple[ChangefeedInfo, ChangefeedStatus]]:
        """All changefeeds (of one namespace when given), ordered by namespace and id."""
        prefix = f"{self.root}/{namespace}/changefeed/" if namespace is not None else f"{self.root}/"
        found: dict[tuple[str, str], dict[str, str]] = {}
        for kv in self.client.get_prefix(prefix):
            parts = kv.key[len(self.root) + 1 :].split("/")
            if len(parts) == 4 and parts[0] != META and parts[1] == "changefeed" and parts[2] in ("info", "status"):
                found.setdefault((parts[0], parts[3]), {})[parts[2]] = kv.value.decode()
        return [decode_record(v["info"], v["status"]) for _, v in sorted(found.items()) if len(v) == 2]

    def put_info(self, info: ChangefeedInfo) -> None:
        """Replace the info of an existing changefeed; raises ChangefeedNotFound."""
        self._update(info.namespace, info.id, [op_put(self._key("info", info.namespace, info.id), _record(info))])

    def put_status(self, namespace: str, changefeed_id: str, status: ChangefeedStatus) -> None:
        """Replace the status; raises ChangefeedNotFound, NotOwner (fenced out)."""
        self._update(namespace, changefeed_id, [op_put(self._key("status", namespace, changefeed_id),
                                                       _record(status))])  # fmt: skip

    def put(self, info: ChangefeedInfo, status: ChangefeedStatus) -> None:
        """Replace info and status together (one transaction); raises ChangefeedNotFound, NotOwner."""
        self._update(info.namespace, info.id, [op_put(self._key("info", info.namespace, info.id), _record(info)),
                                               op_put(self._key("status", info.namespace, info.id), _record(status))])

    def delete(self, namespace: str, changefeed_id: str) -> bool:
        """Remove a changefeed; False when it did not exist."""
        info = self._key("info", namespace, changefeed_id)
        ok, _ = self.client.txn([present(info)], [op_delete(info),
                                                  op_delete(self._key("status", namespace, changefeed_id))])
        return ok

    def _update(self, namespace: str, changefeed_id: str, ops: Sequence[dict[str, Any]]) -> None:
        info = self._key("info", namespace, changefeed_id)
        fence = self.fence() if self.fence else []
        ok, _ = self.client.txn([present(info), *fence], [*ops])
        if ok:
            return
        if self.client.get(info) is None:
            raise ChangefeedNotFound(f"changefeed not exists, {changefeed_id}")
        raise NotOwner(f"changefeed {changefeed_id}: this server is no longer the owner; its write was refused",
                       retryable=False)  # fmt: skip


def _record(value: ChangefeedInfo | ChangefeedStatus) -> str:
    return json.dumps(value.to_record())
