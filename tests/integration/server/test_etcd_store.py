"""The changefeed store on a real etcd behaves as the SQLite one (the same checks run on both), and refuses a
deposed owner's writes."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.capture.position import BinlogPosition
from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.changefeed.info import ChangefeedInfo, ChangefeedStatus, FeedState
from sparkcdc.devtools.etcd import EtcdServer
from sparkcdc.server.capture_state import EtcdCaptureState
from sparkcdc.server.etcd_client import EtcdClient, created_at
from sparkcdc.server.etcd_store import EtcdStore, NotOwner
from sparkcdc.server.store import ChangefeedExists, ChangefeedNotFound, ChangefeedStore, MetaStore

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "etcd"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChangefeedStore]:
    if request.param == "sqlite":
        s: ChangefeedStore = MetaStore(tmp_path)
        yield s
        s.close()
        return
    server: EtcdServer = request.getfixturevalue("etcd")
    client = EtcdClient([server.endpoint])
    yield EtcdStore(client, f"test-{uuid.uuid4().hex[:8]}")
    client.close()


def info(cf: str, namespace: str = "default", **kw: Any) -> ChangefeedInfo:
    cfg = ReplicaConfig.from_toml({"filter": {"rules": ["a.*"]}})
    return ChangefeedInfo(id=cf, namespace=namespace, sink_uri="s3://b/p?protocol=csv&secret-access-key=S3CR3T",
                          config=cfg, **{"start_ts": 5, **kw})  # fmt: skip


def test_the_same_changes_read_back_the_same(store: ChangefeedStore) -> None:
    cf1 = info("cf1")
    store.create(cf1, ChangefeedStatus(5, 6))
    store.create(info("cf0", "other"), ChangefeedStatus(7, 7))
    store.create(info("cf2"), ChangefeedStatus(5, 5))
    with pytest.raises(ChangefeedExists):
        store.create(info("cf1", start_ts=9), ChangefeedStatus(9, 9))
    assert store.get("default", "cf1") == (cf1, ChangefeedStatus(5, 6))
    assert [i.id for i, _ in store.list("default")] == ["cf1", "cf2"]
    assert [(i.namespace, i.id) for i, _ in store.list(None)] == [("default", "cf1"), ("default", "cf2"),
                                                                  ("other", "cf0")]  # fmt: skip
    store.put_status("default", "cf1", ChangefeedStatus(8, 9))
    stopped = cf1.with_changes(state=FeedState.STOPPED)
    store.put_info(stopped)
    assert store.get("default", "cf1") == (stopped, ChangefeedStatus(8, 9))
    store.put(cf1, ChangefeedStatus(10, 11))
    assert store.get("default", "cf1") == (cf1, ChangefeedStatus(10, 11))
    missing = ChangefeedStatus(1, 1)
    for write in (lambda: store.put_info(info("nope")), lambda: store.put_status("default", "nope", missing),
                  lambda: store.put(info("nope"), missing), lambda: store.get("default", "nope")):  # fmt: skip
        with pytest.raises(ChangefeedNotFound):
            write()
    assert store.delete("default", "cf1") and not store.delete("default", "cf1")
    assert [i.id for i, _ in store.list("default")] == ["cf2"]


def owner_fence(client: EtcdClient) -> tuple[str, Callable[[], list[dict[str, Any]]]]:
    """An owner key this test holds, and the fence of writes made as that owner."""
    owner_key = f"/test/{uuid.uuid4().hex}/owner"
    client.put(owner_key, "me")
    kv = client.get(owner_key)
    assert kv is not None
    rev = kv.create_revision
    return owner_key, lambda: [created_at(owner_key, rev)]


def test_a_deposed_owner_cannot_write(etcd: EtcdServer) -> None:
    client = EtcdClient([etcd.endpoint])
    owner_key, fence = owner_fence(client)
    store = EtcdStore(client, f"test-{uuid.uuid4().hex[:8]}", fence=fence)
    store.create(info("cf"), ChangefeedStatus(5, 5))
    store.put_status("default", "cf", ChangefeedStatus(6, 6))
    client.delete(owner_key)
    client.put(owner_key, "someone else")  # the key is there again, but not the one this owner created
    with pytest.raises(NotOwner) as e:
        store.put_status("default", "cf", ChangefeedStatus(7, 7))
    assert "no longer the owner" in e.value.message
    assert store.get("default", "cf")[1] == ChangefeedStatus(6, 6)
    client.close()


def test_the_capture_state_keeps_the_anchor_and_the_reservations_after_it(etcd: EtcdServer) -> None:
    client = EtcdClient([etcd.endpoint])
    owner_key, fence = owner_fence(client)
    state = EtcdCaptureState(client, f"test-{uuid.uuid4().hex[:8]}", fence)
    assert state.anchor() is None and state.reservations() == {}
    state.set_anchor(BinlogPosition("bin.000002", 400, "0-1-7", 1000))
    for file, pos, ts in (("bin.000001", 900, 900), ("bin.000002", 300, 950), ("bin.000002", 500, 1100),
                          ("bin.000003", 4, 1200)):  # fmt: skip
        state.reserve(file, pos, ts)
    assert state.reservations()[("bin.000002", 500)] == 1100
    state.set_anchor(BinlogPosition("bin.000002", 450, "0-1-8", 1050))
    assert state.anchor() == BinlogPosition("bin.000002", 450, "0-1-8", 1050)
    assert state.reservations() == {("bin.000002", 500): 1100, ("bin.000003", 4): 1200}  # those before it go
    state.set_anchor(BinlogPosition("bin.000002", 420, "0-1-7", 1020))  # never back
    assert state.anchor() is not None and state.anchor().last_tso == 1050  # type: ignore[union-attr]
    client.delete(owner_key)
    with pytest.raises(NotOwner):
        state.reserve("bin.000003", 8, 1300)
    assert ("bin.000003", 8) not in state.reservations()
    client.close()


def test_the_published_position_never_moves_back_and_is_fenced(etcd: EtcdServer) -> None:
    client = EtcdClient([etcd.endpoint])
    owner_key, fence = owner_fence(client)
    cluster = f"test-{uuid.uuid4().hex[:8]}"
    state = EtcdCaptureState(client, cluster, fence)
    follower = EtcdCaptureState(client, cluster, lambda: [])
    assert follower.published() is None
    state.publish(BinlogPosition("bin.000002", 400, "0-1-7", 1000))
    assert follower.published() == BinlogPosition("bin.000002", 400, "0-1-7", 1000)
    # a new owner re-pulling from its own relay log's end publishes nothing until it passes the old position
    successor = EtcdCaptureState(client, cluster, fence)
    successor.publish(BinlogPosition("bin.000001", 900, "0-1-5", 900))
    assert follower.published() == BinlogPosition("bin.000002", 400, "0-1-7", 1000)
    successor.publish(BinlogPosition("bin.000003", 4, "0-1-9", 1200))
    assert follower.published() == BinlogPosition("bin.000003", 4, "0-1-9", 1200)
    client.delete(owner_key)
    with pytest.raises(NotOwner):
        successor.publish(BinlogPosition("bin.000003", 800, "0-1-10", 1300))
    assert follower.published() == BinlogPosition("bin.000003", 4, "0-1-9", 1200)
    client.close()


def test_a_changefeed_is_claimed_by_one_capture_at_a_time_and_lost_with_its_lease(etcd: EtcdServer) -> None:
    from sparkcdc.server.placement import EtcdPlacement

    client = EtcdClient([etcd.endpoint])
    cluster = f"test-{uuid.uuid4().hex[:8]}"
    lease_a, lease_b = client.grant(30), client.grant(30)
    a = EtcdPlacement(client, cluster, "capture-a", lambda: lease_a)
    b = EtcdPlacement(client, cluster, "capture-b", lambda: lease_b)
    assert a.claim("default", "cf1") is None
    assert a.claim("default", "cf1") is None  # again: still its own
    assert b.claim("default", "cf1") == "capture-a"
    b.release("default", "cf1")  # not b's to release
    assert b.holders() == {("default", "cf1"): "capture-a"}
    a.release("default", "cf1")
    assert b.claim("default", "cf1") is None
    assert a.claim("ns2", "cf2") is None
    assert a.holders() == {("default", "cf1"): "capture-b", ("ns2", "cf2"): "capture-a"}
    client.revoke(lease_a)  # capture a died: what it held is free
    assert b.holders() == {("default", "cf1"): "capture-b"}
    assert b.claim("ns2", "cf2") is None
    client.close()


def test_revoking_a_lease_that_already_expired_is_not_an_error(etcd: EtcdServer) -> None:
    client = EtcdClient([etcd.endpoint])
    lease = client.grant(30)
    client.revoke(lease)
    client.revoke(lease)  # gone already: a capture cut off from etcd for longer than its TTL does this
    assert client.keepalive(lease) == 0
    client.close()
