"""Which capture runs each changefeed, in etcd: ``/tidb/cdc/<cluster>/__cdc_meta__/running/<namespace>/<id>``
holds the id of the capture running it, put under that capture's lease.

The key is the fence that keeps a changefeed on one capture at a time: a capture claims it (only when absent)
before it starts the changefeed's query, and deletes it after the query stopped. A capture that dies, or is cut off
from etcd for its lease's TTL, loses the key with its lease (it stops its changefeeds before that can happen).
"""

from __future__ import annotations

from collections.abc import Callable

from sparkcdc.server.etcd_client import EtcdClient, absent, op_delete, op_put, value_is
from sparkcdc.server.etcd_store import CDC_ROOT, META

Key = tuple[str, str]


class EtcdPlacement:
    def __init__(self, client: EtcdClient, cluster_id: str, capture_id: str, lease: Callable[[], int]) -> None:
        self.client = client
        self.capture_id = capture_id
        self.lease = lease
        self.root = f"{CDC_ROOT}/{cluster_id}/{META}/running"

    def _key(self, namespace: str, changefeed_id: str) -> str:
        return f"{self.root}/{namespace}/{changefeed_id}"

    def claim(self, namespace: str, changefeed_id: str) -> str | None:
        """Claim the changefeed for this capture; returns None when claimed (or already this capture's), else the
        capture that holds it."""
        key = self._key(namespace, changefeed_id)
        ok, _ = self.client.txn([absent(key)], [op_put(key, self.capture_id, self.lease())])
        if ok:
            return None
        kv = self.client.get(key)
        if kv is None:  # released in between: the caller may try again
            return "another capture"
        holder = kv.value.decode()
        return None if holder == self.capture_id else holder

    def release(self, namespace: str, changefeed_id: str) -> None:
        key = self._key(namespace, changefeed_id)
        self.client.txn([value_is(key, self.capture_id)], [op_delete(key)])

    def holders(self) -> dict[Key, str]:
        out = {}
        for kv in self.client.get_prefix(f"{self.root}/"):
            namespace, _, changefeed_id = kv.key[len(self.root) + 1 :].partition("/")
            out[(namespace, changefeed_id)] = kv.value.decode()
        return out
