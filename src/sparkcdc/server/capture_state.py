"""The cluster's shared capture state in etcd (``changefeed.runner.SharedCaptureState``).

Keys under ``/tidb/cdc/<cluster>/__cdc_meta__/capture-state/``: ``anchor`` (JSON: binlog file, position, GTID
state and the commit-ts of the transaction ending there) and ``reservation/<file>/<pos>`` (a heartbeat's TSO
reserved at that position). With both, a new owner's capture re-pulls the binlog from the anchor and gives every
transaction the commit-ts the previous owner gave it. ``published`` (JSON like the anchor) is where the owner's
relay log is durable: the other servers' follower captures commit up to there and no further. Writes are fenced
on the owner's election key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sparkcdc.capture.position import BinlogPosition, file_seq
from sparkcdc.server.etcd_client import EtcdClient, op_put
from sparkcdc.server.etcd_store import CDC_ROOT, META, NotOwner


class EtcdCaptureState:
    def __init__(self, client: EtcdClient, cluster_id: str, fence: Callable[[], list[dict[str, Any]]]) -> None:
        self.client = client
        self.fence = fence
        self.root = f"{CDC_ROOT}/{cluster_id}/{META}/capture-state"
        self._published: BinlogPosition | None = None  # what this server last published or read

    def anchor(self) -> BinlogPosition | None:
        return self._position("anchor")

    def set_anchor(self, position: BinlogPosition) -> None:
        """Move the anchor (never below where it is), then drop the reservations before it."""
        current = self.anchor()
        if current is not None and current.last_tso >= position.last_tso:
            return
        self._fenced(op_put(f"{self.root}/anchor", _encode(position)), "move the capture anchor")
        limit = (file_seq(position.file), position.pos)
        for (file, pos), _ in self.reservations().items():
            if (file_seq(file), pos) < limit:
                self.client.delete(self._reservation_key(file, pos))

    def reservations(self) -> dict[tuple[str, int], int]:
        out = {}
        for kv in self.client.get_prefix(f"{self.root}/reservation/"):
            file, _, pos = kv.key[len(self.root) + len("/reservation/") :].partition("/")
            out[(file, int(pos))] = int(kv.value)
        return out

    def reserve(self, file: str, pos: int, tso: int) -> None:
        self._fenced(op_put(self._reservation_key(file, pos), str(tso)), "reserve a TSO")

    def published(self) -> BinlogPosition | None:
        self._published = self._position("published")
        return self._published

    def publish(self, position: BinlogPosition) -> None:
        """Publish the owner's durable position, unless it is not past what is published: a new owner re-pulling
        from its own relay log's end must not hold the followers back where the previous owner had been."""
        if self._published is None:
            self.published()
        if self._published is not None and self._published.key() >= position.key():
            return
        self._fenced(op_put(f"{self.root}/published", _encode(position)), "publish the capture position")
        self._published = position

    def _position(self, name: str) -> BinlogPosition | None:
        kv = self.client.get(f"{self.root}/{name}")
        if kv is None:
            return None
        doc = json.loads(kv.value)
        return BinlogPosition(str(doc["file"]), int(doc["pos"]), str(doc["gtid_state"]), int(doc["last_tso"]))

    def _reservation_key(self, file: str, pos: int) -> str:
        return f"{self.root}/reservation/{file}/{pos}"

    def _fenced(self, op: dict[str, Any], what: str) -> None:
        ok, _ = self.client.txn(self.fence(), [op])
        if not ok:
            raise NotOwner(f"cannot {what}: this server is no longer the owner", retryable=False)


def _encode(position: BinlogPosition) -> str:
    return json.dumps({"file": position.file, "pos": position.pos, "gtid_state": position.gtid_state,
                       "last_tso": position.last_tso})  # fmt: skip
