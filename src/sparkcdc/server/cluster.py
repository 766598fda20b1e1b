"""Which ``cdc server`` processes (captures) form the cluster, and which one is the owner.

``SingleNode`` is the embedded default: one capture, always the owner. ``EtcdMembership`` (``cdc server --pd``)
works as TiCDC's captures do on PD's etcd:

- each server registers ``/tidb/cdc/<cluster>/__cdc_meta__/capture/<id>`` (its id, address and version) under a
  lease of ``ttl`` seconds that a thread keeps alive; a server that dies stops refreshing it, and etcd removes
  its keys when the lease expires;
- the owner election is etcd's: every capture puts ``.../owner/<lease id>`` under its lease, and the key with the
  lowest create revision wins, so candidates queue in arrival order and the next one takes over as soon as
  the owner's key is gone (lease expired, or resigned);
- a capture whose lease expired (etcd unreachable for longer than ``ttl``) gives up ownership at once, and
  registers again with a new lease when etcd answers;
- each capture looks at the cluster about once a second and, through an etcd watch on the owner keys, at once
  when one of them goes: the next capture in line takes over as soon as etcd expires the owner's lease;
- ``fence()`` gives the compare that holds only while this capture's owner key stands: the store conditions the
  owner's writes on it, so a deposed owner that has not noticed yet cannot overwrite its successor's.

``on_owner(True/False)`` is called on the membership's thread when this capture becomes or stops being the owner.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from sparkcdc import __version__
from sparkcdc.errors import SparkcdcError
from sparkcdc.server.etcd_client import EtcdClient, absent, created_at, op_put
from sparkcdc.server.etcd_store import CDC_ROOT, META

log = logging.getLogger(__name__)

DEFAULT_TTL = 10  # seconds: TiCDC's capture session TTL
TICK_MAX_S = 1.0  # the longest time between two looks at the cluster (and session refreshes)


def request_timeout(ttl: int) -> float:
    """etcd request timeout for a session of ``ttl`` seconds: short enough that a capture cut off from etcd
    notices and gives up ownership (after ttl/2) well before its lease expires."""
    return max(0.5, min(5.0, ttl / 4))


@dataclass(frozen=True)
class CaptureInfo:
    id: str
    address: str
    is_owner: bool
    cluster_id: str = "default"
    version: str = __version__

    def to_api(self) -> dict[str, Any]:
        """``GET /api/v2/captures`` item (TiCDC's ``Capture``)."""
        return {"id": self.id, "is_owner": self.is_owner, "address": self.address, "cluster_id": self.cluster_id}


class Membership(Protocol):
    capture_id: str
    cluster_id: str

    def is_owner(self) -> bool: ...
    def owner(self) -> CaptureInfo | None: ...
    def captures(self) -> list[CaptureInfo]: ...
    def resign(self) -> None: ...
    def close(self) -> None: ...


class SingleNode:
    """One server, its own owner (the SQLite store's cluster)."""

    def __init__(self, address: str, on_owner: Callable[[bool], None] | None = None, capture_id: str = "") -> None:
        self.capture_id = capture_id or str(uuid.uuid4())
        self.cluster_id = "default"
        self._me = CaptureInfo(self.capture_id, address, True)
        if on_owner is not None:
            on_owner(True)

    def is_owner(self) -> bool:
        return True

    def owner(self) -> CaptureInfo:
        return self._me

    def captures(self) -> list[CaptureInfo]:
        return [self._me]

    def resign(self) -> None:
        """The only capture is elected again at once, as a lone TiCDC capture is."""

    def close(self) -> None:
        pass


class EtcdMembership:
    """This server's capture in an etcd cluster. ``start`` registers and campaigns; ``close`` leaves."""

    def __init__(self, client: EtcdClient, address: str, *, cluster_id: str = "default", ttl: int = DEFAULT_TTL,
                 on_owner: Callable[[bool], None] | None = None) -> None:  # fmt: skip
        self.client = client
        self.address = address
        self.cluster_id = cluster_id
        self.ttl = ttl
        self.capture_id = str(uuid.uuid4())
        self.on_owner = on_owner or (lambda _owner: None)
        # called when this capture may lose its session (cut off from etcd, or its lease expired): whatever runs
        # under the session's keys must stop before etcd can hand it to another capture
        self.on_cut_off: Callable[[], None] = lambda: None
        self._cut_off_told = False
        self.meta = f"{CDC_ROOT}/{cluster_id}/{META}"
        self._lease = 0
        self._refreshed = time.monotonic()
        self._owner_key = ""
        self._owner_rev = 0
        self._owner: CaptureInfo | None = None
        self._is_owner = False
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._owner_changed = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------
    def start(self) -> EtcdMembership:
        """Register and campaign (raises EtcdError when etcd is unreachable), then keep both up on a thread."""
        self._register()
        self.tick()
        self._thread = threading.Thread(target=self._loop, name="capture-session", daemon=True)
        self._thread.start()
        threading.Thread(target=self._watch_owners, name="capture-owner-watch", daemon=True).start()
        return self

    def close(self) -> None:
        """Leave the cluster: stop being owner, revoke the lease (etcd drops this capture's keys at once)."""
        self._stop.set()
        self._owner_changed.set()
        if self._thread is not None:
            self._thread.join(10)
        self._set_owner(False)
        try:
            if self._lease:
                self.client.revoke(self._lease)
        except SparkcdcError as e:
            log.warning("leaving the cluster: %s (the capture's keys expire with their lease)", e)

    def _register(self) -> None:
        lease = self.client.grant(self.ttl)
        info = {"id": self.capture_id, "address": self.address, "version": __version__, "git-hash": "",
                "deploy-path": "", "start-timestamp": int(time.time())}  # fmt: skip
        self.client.put(f"{self.meta}/capture/{self.capture_id}", json.dumps(info), lease)
        with self._lock:
            self._lease = lease
            self._refreshed = time.monotonic()
            self._owner_key = f"{self.meta}/owner/{lease:x}"
        self._campaign()
        log.info("capture %s registered at %s (lease %x, ttl %ds)", self.capture_id, self.address, lease, self.ttl)

    def _campaign(self) -> None:
        self.client.txn([absent(self._owner_key)], [op_put(self._owner_key, self.capture_id, self._lease)])
        kv = self.client.get(self._owner_key)
        self._owner_rev = kv.create_revision if kv else 0

    def _period(self) -> float:
        return max(0.2, min(TICK_MAX_S, self.ttl / 4))

    def _watch_owners(self) -> None:
        """Wake the session loop whenever an owner key changes (the watch ends with the session loop; it is not
        joined: a pending watch returns within a period)."""
        while not self._stop.is_set():
            try:
                if self.client.wait_for_change(f"{self.meta}/owner/", self._period()):
                    self._owner_changed.set()
            except (SparkcdcError, RuntimeError):  # etcd away (the session loop says so), or its client closed
                self._stop.wait(self._period())

    def _loop(self) -> None:
        period = self._period()
        refresh_at = time.monotonic() + period
        while not self._stop.is_set():
            changed = self._owner_changed.wait(max(0.0, refresh_at - time.monotonic()))
            if self._stop.is_set():
                return
            # an owner key changed: look now and refresh as planned (a capture cut off from etcd starts a new
            # session first, at its next refresh)
            if changed and not self._cut_off_told and time.monotonic() < refresh_at:
                self._owner_changed.clear()
                try:
                    self.tick()
                except SparkcdcError as e:
                    log.debug("capture %s: looking at the owners: %s", self.capture_id, e)
                continue
            self._owner_changed.clear()
            refresh_at = time.monotonic() + period
            try:
                if self._cut_off_told:
                    # it stopped what ran under its session while cut off: a new session drops the old keys (its
                    # changefeeds' placements) at once, instead of leaving them to a lease that is still alive
                    self.client.revoke(self._lease)
                    log.info("capture %s: etcd answers again; starting a new session", self.capture_id)
                    self._register()
                    self._cut_off_told = False
                elif self.client.keepalive(self._lease) <= 0:
                    log.warning("capture %s: its etcd session expired; giving up ownership and registering again",
                                self.capture_id)  # fmt: skip
                    self._set_owner(False)
                    self._tell_cut_off()
                    self._register()
                    self._cut_off_told = False
                self._refreshed = time.monotonic()
                self.tick()
            except SparkcdcError as e:
                log.warning("capture %s: etcd: %s", self.capture_id, e)
                if self._cut_off():
                    # etcd may let the lease go and elect another owner, or place this capture's changefeeds
                    # elsewhere: stop before that can start
                    if self._is_owner:
                        log.warning("capture %s: etcd unreachable for %.1fs; giving up ownership", self.capture_id,
                                    time.monotonic() - self._refreshed)  # fmt: skip
                        self._set_owner(False)
                    self._tell_cut_off()

    def _tell_cut_off(self) -> None:
        if not self._cut_off_told:
            self._cut_off_told = True
            self.on_cut_off()

    @property
    def lease(self) -> int:
        """The lease of this capture's current session (its keys live and die with it)."""
        return self._lease

    def _cut_off(self) -> bool:
        """No session refresh for half the TTL: the lease may expire before the next one gets through (requests
        time out after a quarter of the TTL, see ``request_timeout``)."""
        return time.monotonic() - self._refreshed >= self.ttl / 2

    def tick(self) -> None:
        """Read who is the owner and which captures are alive; act on a change of this capture's ownership."""
        owners = sorted(self.client.get_prefix(f"{self.meta}/owner/"), key=lambda kv: kv.create_revision)
        owner_id = owners[0].value.decode() if owners else None
        by_id = {c.id: c for c in self._read_captures(owner_id)}
        with self._lock:
            self._owner = by_id.get(owner_id) if owner_id else None
        self._set_owner(owner_id == self.capture_id and owners[0].key == self._owner_key)

    def _set_owner(self, owner: bool) -> None:
        with self._lock:
            if owner == self._is_owner:
                return
            self._is_owner = owner
        log.info("capture %s %s the owner", self.capture_id, "is now" if owner else "is no longer")
        self.on_owner(owner)

    # -- queries -----------------------------------------------------------------------------------------
    def is_owner(self) -> bool:
        return self._is_owner and not self._cut_off()

    def owner(self) -> CaptureInfo | None:
        """The owner as last seen (at most a second old)."""
        return self._owner

    def captures(self) -> list[CaptureInfo]:
        owner = self._owner
        return self._read_captures(owner.id if owner else None)

    def _read_captures(self, owner_id: str | None) -> list[CaptureInfo]:
        out = []
        for kv in self.client.get_prefix(f"{self.meta}/capture/"):
            try:
                doc = json.loads(kv.value)
                out.append(CaptureInfo(str(doc["id"]), str(doc["address"]), doc["id"] == owner_id, self.cluster_id,
                                       str(doc.get("version", ""))))  # fmt: skip
            except (ValueError, KeyError, TypeError):
                log.warning("ignoring an unreadable capture record at %s", kv.key)
        return sorted(out, key=lambda c: (not c.is_owner, c.id))

    # -- owner duties --------------------------------------------------------------------------------------
    def resign(self) -> None:
        """Step down (``POST /api/v2/owner/resign``): the next capture in line becomes the owner; this one queues
        again behind it."""
        with self._lock:
            if not self._is_owner:
                return
            self._set_owner(False)
            self.client.delete(self._owner_key)
            self._campaign()

    def fence(self) -> list[dict[str, Any]]:
        """The compare under which this capture's writes as owner are valid."""
        return [created_at(self._owner_key, self._owner_rev)]
