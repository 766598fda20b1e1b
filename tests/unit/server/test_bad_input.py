"""Bad input at create and update over the Open API (in-process): every case of ``tests.fixtures.bad_input`` is one
400 answer with TiCDC's error code, naming the key and where it came from, no secret, nothing logged as an error and
nothing created or changed (issue 26, item 5)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.server.api import create_app
from sparkcdc.server.changefeed import ChangefeedManager
from sparkcdc.server.cluster import SingleNode
from sparkcdc.server.store import MetaStore
from tests.fixtures.bad_input import BAD_INPUT, SECRETS, Bad, prepare
from tests.unit.server.fakes import FakeRunner
from tests.unit.server.test_api import ASGIClient


@pytest.fixture
def client(tmp_path: Path) -> Iterator[ASGIClient]:
    mgr = ChangefeedManager(MetaStore(tmp_path / "data"), FakeRunner())
    mgr.start(poll=False)
    yield ASGIClient(create_app(mgr, SingleNode("127.0.0.1:8300", capture_id="cap-1")))
    mgr.close()


def body_of(case: Bad, directory: str) -> dict[str, Any]:
    """What ``cdc cli changefeed create`` sends for the case (or the raw body)."""
    if case.body is not None:
        return case.body
    config = ReplicaConfig.from_toml_text(case.toml, "cf.toml").to_api() if case.toml else None
    return {"sink_uri": case.uri(directory), "replica_config": config}


def send(client: ASGIClient, method: str, path: str, body: dict[str, Any]) -> httpx.Response:
    """JSON as any client may send it: ASCII with \\u escapes, which can spell a lone surrogate."""

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=client.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            return await c.request(method, path, content=json.dumps(body),
                                   headers={"content-type": "application/json"})  # fmt: skip

    return asyncio.run(go())


def refused_once(r: Any, case: Bad) -> None:
    assert 400 <= r.status_code < 500, (case.id, r.status_code, r.text)
    err = r.json()
    assert list(err) == ["error_msg", "error_code"] and err["error_code"] == case.code, (case.id, err)
    assert err["error_msg"].startswith(f"[{case.code}]") and "\n" not in err["error_msg"], err
    assert case.fragment in err["error_msg"], (case.id, err["error_msg"])
    assert not [s for s in SECRETS if s in r.text], r.text


@pytest.mark.parametrize("case", BAD_INPUT, ids=[c.id for c in BAD_INPUT])
def test_bad_input_is_one_400_line_at_create_and_update(
    client: ASGIClient, case: Bad, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    prepare(str(tmp_path))
    body = body_of(case, str(tmp_path))
    base = {"changefeed_id": "base", "sink_uri": f"file://{tmp_path}/base?protocol=csv"}
    assert client.post("/api/v2/changefeeds", json=base).status_code == 200
    assert client.post("/api/v2/changefeeds/base/pause").status_code == 200
    before = client.get("/api/v2/changefeeds/base").json()
    with caplog.at_level(logging.DEBUG):
        refused_once(send(client, "POST", "/api/v2/changefeeds", {**body, "changefeed_id": "bad"}), case)
        refused_once(send(client, "PUT", "/api/v2/changefeeds/base", body), case)
    assert [cf["id"] for cf in client.get("/api/v2/changefeeds", params={"state": "all"}).json()["items"]] == ["base"]
    assert client.get("/api/v2/changefeeds/base").json() == before
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], caplog.text
    assert not [s for s in SECRETS if s in caplog.text], caplog.text
