"""Three `cdc server --pd` processes on one real etcd (the noop runner: control plane only): one owner, every
node answers alike (non-owners forward to the owner), kill -9 of the owner hands its changefeeds to a new owner
within the session TTL, resign passes ownership on, and a restarted node joins again."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkcdc.devtools.etcd import EtcdServer
from tests.e2e.test_cli_changefeed import CDC, CdcServer, sink

pytestmark = [pytest.mark.e2e, pytest.mark.exclusive]  # hand-overs timed against the session TTL

TTL = 3


def owner_of(servers: list[CdcServer]) -> CdcServer:
    """The one live server every live node names as owner (waits for an election, and for a dead owner's session
    to expire)."""
    deadline = time.monotonic() + TTL + 10
    seen: Any = None
    while time.monotonic() < deadline:
        try:
            views = [s.api("/captures")["items"] for s in servers if s.proc is not None]
        except (httpx.HTTPError, KeyError) as e:
            seen = e
            time.sleep(0.1)
            continue
        owners = {c["address"] for items in views for c in items if c["is_owner"]}
        live = {f"127.0.0.1:{s.port}": s for s in servers if s.proc is not None}
        if len(owners) == 1 and owners <= set(live) and all(sum(c["is_owner"] for c in items) == 1 for items in views):
            return live[owners.pop()]
        seen = views
        time.sleep(0.1)
    raise AssertionError(f"no single owner: {seen}")


def wait_owner(servers: list[CdcServer], expected: CdcServer, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while (got := owner_of(servers)) is not expected:
        assert time.monotonic() < deadline, f"owner is still {got.url}, not {expected.url}"
        time.sleep(0.1)


@pytest.fixture
def servers(etcd: EtcdServer, tmp_path: Path) -> Iterator[list[CdcServer]]:
    cluster = tmp_path.name.replace("_", "-")[-30:]
    made = [CdcServer(tmp_path / f"node{i}", "--pd", etcd.endpoint, "--cluster-id", cluster,
                      "--session-ttl", str(TTL)) for i in range(3)]  # fmt: skip
    for s in made:
        s.start()
    yield made
    for s in made:
        s.stop()


def test_three_nodes_one_owner_failover_resign_and_rejoin(servers: list[CdcServer], tmp_path: Path) -> None:
    owner = owner_of(servers)
    others = [s for s in servers if s is not owner]
    listed = json.loads(subprocess.run([CDC, "cli", "capture", "list", "--server", others[0].url],
                                       capture_output=True, text=True, timeout=60, check=True).stdout)  # fmt: skip
    assert len(listed) == 3 and [c["is-owner"] for c in listed].count(True) == 1, listed
    assert {c["address"] for c in listed} == {f"127.0.0.1:{s.port}" for s in servers}
    assert set(listed[0]) == {"id", "is-owner", "address", "cluster-id"}

    # a non-owner forwards: the changefeed is created (and runs) on the owner, and every node shows it
    r = others[0].cli("create", "-c", "cf-a", "--sink-uri", sink(tmp_path))
    assert r.returncode == 0, r.stderr
    for s in servers:
        assert s.wait_state("cf-a", "normal")["id"] == "cf-a"
    assert others[1].cli("pause", "-c", "cf-a").returncode == 0
    owner.wait_state("cf-a", "stopped")
    assert others[0].cli("resume", "-c", "cf-a", "--no-confirm").returncode == 0
    checkpoint = owner.wait_state("cf-a", "normal")["checkpoint_ts"]

    # kill -9 the owner: another node takes over within the session TTL and resumes the changefeed
    owner.kill9()
    killed_at = time.monotonic()
    new_owner = owner_of(servers)
    took = time.monotonic() - killed_at
    assert new_owner is not owner and took <= TTL + 3, took
    info = new_owner.wait_state("cf-a", "normal")
    assert info["checkpoint_ts"] >= checkpoint
    log = (new_owner.root / "server.log").read_text()
    assert "is now the owner" in log and "resuming changefeed=cf-a" in log

    # resign: ownership moves to the remaining node; the changefeed moves with it
    survivor = next(s for s in servers if s.proc is not None and s is not new_owner)
    assert httpx.post(survivor.url + "/api/v2/owner/resign", timeout=30).json() == {}  # forwarded to the owner
    wait_owner(servers, survivor)
    survivor.wait_state("cf-a", "normal")
    assert "is no longer the owner" in (new_owner.root / "server.log").read_text()

    # the killed node comes back as a capture, not as a second owner
    owner.start()
    wait_owner(servers, survivor)
    # drain (TiCDC's API, asked of any node): a non-owner hands its changefeeds on; the owner also hands on ownership
    ids = {c["address"]: c["id"] for c in survivor.api("/captures")["items"]}
    back, kept = ids[f"127.0.0.1:{owner.port}"], ids[f"127.0.0.1:{survivor.port}"]
    drain_until_empty(owner.url, back)
    where = placed(survivor)["cf-a"]
    assert where not in ("", back), where
    drained = httpx.post(f"{owner.url}/api/v2/captures/{kept}/drain", timeout=30)
    assert drained.json() == {"current_table_count": int(where == kept)}, drained.text
    new = owner_of(servers)
    deadline = time.monotonic() + 30  # a bound, not a wait: generous for a slow machine
    while new is survivor and time.monotonic() < deadline:
        time.sleep(0.1)
        new = owner_of(servers)
    assert new is not survivor
    new.wait_state("cf-a", "normal")
    assert len(owner.api("/captures")["items"]) == 3
    assert owner.api("/changefeeds/cf-a")["state"] == "normal"  # forwarded


def placed(server: CdcServer) -> dict[str, str]:
    """changefeed -> capture id, from TiCDC's ``GET /api/v2/processors`` (asked of any node)."""
    return {p["changefeed_id"]: p["capture_id"] for p in server.api("/processors")["items"]}


def drain_until_empty(url: str, capture_id: str, timeout: float = 90) -> None:
    """TiCDC's drain, asked again until the capture runs no changefeed."""
    deadline = time.monotonic() + timeout
    while True:
        r = httpx.post(f"{url}/api/v2/captures/{capture_id}/drain", timeout=60)
        assert r.status_code == 200, r.text
        if r.json()["current_table_count"] == 0:
            return
        assert time.monotonic() < deadline, r.text
        time.sleep(0.5)


def wait_counts(server: CdcServer, want: dict[str, int], timeout: float = 30) -> dict[str, str]:
    """Wait until the changefeeds are spread as ``want`` (capture id -> count; others have none)."""
    deadline = time.monotonic() + timeout
    while True:
        got = placed(server)
        counts = {c: list(got.values()).count(c) for c in set(got.values())}
        if counts == {c: n for c, n in want.items() if n}:
            return got
        assert time.monotonic() < deadline, (counts, want)
        time.sleep(0.3)


def test_changefeeds_spread_by_count_drain_moves_them_and_a_new_node_gets_its_share(
    servers: list[CdcServer], tmp_path: Path
) -> None:
    owner = owner_of(servers)
    ids = {c["address"]: c["id"] for c in owner.api("/captures")["items"]}
    cid = {s: ids[f"127.0.0.1:{s.port}"] for s in servers}
    drained, victim = (s for s in servers if s is not owner)
    for i in range(6):
        r = victim.cli("create", "-c", f"cf-{i}", "--sink-uri", sink(tmp_path / str(i)))
        assert r.returncode == 0, r.stderr
    wait_counts(owner, {cid[s]: 2 for s in servers})

    # drain: its two go to the others, and it gets none back while it stays
    drain_until_empty(victim.url, cid[drained])
    wait_counts(owner, {cid[owner]: 3, cid[victim]: 3, cid[drained]: 0})

    # kill -9 a capture: its changefeeds restart on the only capture left that takes any, once its lease is gone
    victim.kill9()
    killed = time.monotonic()
    wait_counts(owner, {cid[owner]: 6}, timeout=TTL + 20)
    moved_in = time.monotonic() - killed
    assert moved_in <= TTL + 10, moved_in

    # the node comes back (a new capture): balance by count gives it its share
    victim.start()
    back = next(c["id"] for c in owner.api("/captures")["items"] if c["address"] == f"127.0.0.1:{victim.port}")
    wait_counts(owner, {cid[owner]: 3, back: 3})
    for i in range(6):
        assert owner.api(f"/changefeeds/cf-{i}")["state"] == "normal"
    log = (victim.root / "server.log").read_text()
    assert "runs on this capture" in log
