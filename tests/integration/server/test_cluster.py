"""Captures and the owner election on a real etcd: registration, one owner, resign, failover when the owner's
session expires, and etcd unreachable for longer than the session."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from sparkcdc.devtools.etcd import EtcdServer
from sparkcdc.server import cluster
from sparkcdc.server.cluster import EtcdMembership, request_timeout
from sparkcdc.server.etcd_client import EtcdClient
from tests.support import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]  # owner hand-overs timed against the TTL

TTL = 2


class Node:
    """A membership plus the ownership changes it reported."""

    def __init__(self, server: EtcdServer, cluster: str, port: int, ttl: int = TTL) -> None:
        self.client = EtcdClient([server.endpoint], timeout=request_timeout(ttl))
        self.changes: list[bool] = []
        self.m = EtcdMembership(self.client, f"127.0.0.1:{port}", cluster_id=cluster, ttl=ttl,
                                on_owner=self.changes.append)  # fmt: skip

    def die(self) -> None:
        """kill -9: stop refreshing the session without leaving."""
        self.m._stop.set()
        if self.m._thread is not None:
            self.m._thread.join(5)


@pytest.fixture
def nodes(etcd: EtcdServer) -> Iterator[list[Node]]:
    cluster = f"c{uuid.uuid4().hex[:8]}"
    made = [Node(etcd, cluster, 8300 + i) for i in range(3)]
    yield made
    for n in made:
        n.m.close()
        n.client.close()


def owners(nodes: list[Node]) -> list[int]:
    return [i for i, n in enumerate(nodes) if n.m.is_owner()]


def test_one_owner_in_arrival_order_and_resign_passes_it_on(nodes: list[Node]) -> None:
    for n in nodes:
        n.m.start()
    assert owners(nodes) == [0] and nodes[0].changes == [True]
    listed = nodes[2].m.captures()
    assert listed[0].id == nodes[0].m.capture_id and listed[0].is_owner
    assert {c.id for c in listed} == {n.m.capture_id for n in nodes} and sum(c.is_owner for c in listed) == 1
    assert {c.address for c in listed} == {"127.0.0.1:8300", "127.0.0.1:8301", "127.0.0.1:8302"}
    nodes[0].m.resign()
    wait_for(lambda: owners(nodes) == [1], 5, "the next capture in line to take over")
    assert nodes[0].changes == [True, False] and nodes[1].changes == [True]
    nodes[1].m.close()  # leaving revokes the lease: the owner key goes at once
    left = time.monotonic()
    wait_for(lambda: owners(nodes) == [2], 5, "the third capture to take over")
    took = time.monotonic() - left
    assert took < TTL  # no need to wait for a lease to expire
    wait_for(lambda: all(len(n.m.captures()) == 2 for n in (nodes[0], nodes[2])), 5, "the left capture to be gone")


def test_a_dead_owner_is_replaced_after_its_session_expires(nodes: list[Node]) -> None:
    for n in nodes[:2]:
        n.m.start()
    assert owners(nodes) == [0]
    nodes[0].die()
    died = time.monotonic()
    wait_for(lambda: nodes[1].m.is_owner(), TTL + 5, "a new owner")
    took = time.monotonic() - died
    assert took <= TTL + 2
    assert [c.id for c in nodes[1].m.captures()] == [nodes[1].m.capture_id]  # the dead one's key expired


def test_the_next_capture_takes_over_as_soon_as_the_owner_key_goes(
    etcd: EtcdServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not at its next look at the cluster: an etcd watch on the owner keys wakes it (here no periodic look
    comes within the test: without the watch, the takeover waits up to 120 s)."""
    monkeypatch.setattr(cluster, "TICK_MAX_S", 120.0)
    name = f"c{uuid.uuid4().hex[:8]}"
    first, second = Node(etcd, name, 8300, ttl=600), Node(etcd, name, 8301, ttl=600)
    try:
        first.m.start()
        second.m.start()
        assert first.m.is_owner() and not second.m.is_owner()
        first.die()
        first.client.revoke(first.m.lease)  # what etcd does when the dead owner's lease expires
        wait_for(second.m.is_owner, 5, "the next capture to take over")
    finally:
        for n in (first, second):
            n.m.close()
            n.client.close()


def test_an_owner_cut_off_from_etcd_steps_down_before_another_is_elected(etcd: EtcdServer, nodes: list[Node]) -> None:
    nodes[0].m.start()
    assert nodes[0].m.is_owner()
    stepped_down = threading.Event()
    nodes[0].m.on_owner = lambda owner: stepped_down.set() if not owner else None
    etcd.pause()
    try:
        assert stepped_down.wait(TTL), "the owner kept ownership while its lease could expire"
        assert not nodes[0].m.is_owner()
    finally:
        etcd.resume()
    # back: its session expired meanwhile, so it registers again and, alone, is elected again
    wait_for(nodes[0].m.is_owner, 15, "the capture to be owner again")
    assert len(nodes[0].m.captures()) == 1
