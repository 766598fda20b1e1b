"""Open API v2 paths, JSON shapes and TiCDC-like error bodies (in-process, scripted runner)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.model.table import ColumnInfo, TableInfo
from sparkcdc.server.api import create_app
from sparkcdc.server.changefeed import ChangefeedManager
from sparkcdc.server.cluster import SingleNode
from sparkcdc.server.store import MetaStore
from tests.fixtures.replica_configs import REFUSED, REPRESENTATIVE_TOML, Refused
from tests.unit.server.fakes import NOW, FakeRunner, object_stores_answer

SECRET_SINK = "s3://bucket/prefix?protocol=canal-json&access-key=AKIA&secret-access-key=TOPSECRET"


class ASGIClient:
    """Synchronous calls into the ASGI app (starlette's ASGIClient warns about httpx)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def request(self, method: str, path: str, json: Any = None, params: Any = None) -> httpx.Response:
        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
                return await c.request(method, path, json=json, params=params)

        return asyncio.run(go())

    def get(self, path: str, params: Any = None) -> httpx.Response:
        return self.request("GET", path, params=params)

    def post(self, path: str, json: Any = None) -> httpx.Response:
        return self.request("POST", path, json=json)

    def put(self, path: str, json: Any = None) -> httpx.Response:
        return self.request("PUT", path, json=json)

    def delete(self, path: str) -> httpx.Response:
        return self.request("DELETE", path)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[ASGIClient]:
    mgr = ChangefeedManager(MetaStore(tmp_path), FakeRunner())
    mgr.start(poll=False)
    yield ASGIClient(create_app(mgr, SingleNode("127.0.0.1:8300", capture_id="cap-1")))
    mgr.close()


def test_health_status_tso(client: ASGIClient) -> None:
    assert client.get("/api/v2/health").json() == {}
    st = client.get("/api/v2/status").json()
    assert list(st) == ["version", "git_hash", "id", "cluster_id", "pid", "is_owner", "liveness", "ready"]
    assert st["id"] == "cap-1" and st["is_owner"] is True and st["ready"] is True
    # one server is a cluster of one capture, its own owner (TiCDC's shapes)
    assert client.get("/api/v2/captures").json() == {
        "total": 1, "items": [{"id": "cap-1", "is_owner": True, "address": "127.0.0.1:8300", "cluster_id": "default"}]}
    assert client.post("/api/v2/owner/resign").json() == {}
    only = client.post("/api/v2/captures/cap-1/drain")
    assert only.status_code == 400 and only.json()["error_code"] == "CDC:ErrSchedulerRequestFailed"
    unknown = client.post("/api/v2/captures/nope/drain")
    assert unknown.status_code == 400 and unknown.json()["error_code"] == "CDC:ErrCaptureNotExist"
    assert client.get("/api/v2/status").json()["is_owner"] is True
    t = client.post("/api/v2/tso").json()
    assert (t["timestamp"] << 18) | t["logic_time"] == NOW


def test_status_says_whether_the_runner_is_ready(tmp_path: Path) -> None:
    runner = FakeRunner()
    runner.engine_ready = False  # the Spark session still starting
    mgr = ChangefeedManager(MetaStore(tmp_path), runner)
    client = ASGIClient(create_app(mgr, SingleNode("127.0.0.1:8300")))
    assert client.get("/api/v2/status").json()["ready"] is False
    runner.engine_ready = True
    assert client.get("/api/v2/status").json()["ready"] is True
    mgr.close()


def test_create_get_list_status_with_masking(client: ASGIClient, monkeypatch: pytest.MonkeyPatch) -> None:
    assert object_stores_answer(monkeypatch) == []
    body = {
        "changefeed_id": "cf1",
        "sink_uri": SECRET_SINK,
        "start_ts": NOW - 5,
        "replica_config": {"case_sensitive": True},
    }
    r = client.post("/api/v2/changefeeds", json=body)
    assert r.status_code == 200, r.text
    info = r.json()
    assert list(info)[:6] == ["namespace", "id", "sink_uri", "create_time", "start_ts", "config"]
    assert info["sink_uri"] == "s3://bucket/prefix?protocol=canal-json&access-key=xxxxx&secret-access-key=xxxxx"
    assert info["config"]["case_sensitive"] is True
    assert info["config"]["sink"]["protocol"] == "canal-json"
    assert info["state"] == "normal" and info["checkpoint_ts"] == NOW - 5 and "target_ts" not in info
    for path in ("/api/v2/changefeeds", "/api/v2/changefeeds/cf1", "/api/v2/changefeeds/cf1/status"):
        text = client.get(path).text
        assert "TOPSECRET" not in text and "AKIA" not in text
    lst = client.get("/api/v2/changefeeds").json()
    assert lst["total"] == 1
    assert list(lst["items"][0]) == [
        "upstream_id",
        "namespace",
        "id",
        "state",
        "checkpoint_tso",
        "checkpoint_time",
        "error",
    ]
    st = client.get("/api/v2/changefeeds/cf1/status").json()
    assert st == {"state": "normal", "resolved_ts": NOW - 5, "checkpoint_ts": NOW - 5}


def test_pause_resume_update_delete(client: ASGIClient) -> None:
    client.post("/api/v2/changefeeds", json={"changefeed_id": "cf1", "sink_uri": "file:///tmp/s?protocol=csv"})
    assert client.post("/api/v2/changefeeds/cf1/pause").json() == {}
    assert client.get("/api/v2/changefeeds/cf1").json()["state"] == "stopped"
    assert client.get("/api/v2/changefeeds", params={"state": "normal"}).json()["total"] == 0
    r = client.put("/api/v2/changefeeds/cf1", json={"target_ts": NOW + 100})
    assert r.status_code == 200 and r.json()["target_ts"] == NOW + 100
    assert client.post("/api/v2/changefeeds/cf1/resume", json={}).json() == {}
    assert client.get("/api/v2/changefeeds/cf1").json()["state"] == "normal"
    r = client.put("/api/v2/changefeeds/cf1", json={"target_ts": NOW + 200})
    assert r.status_code == 400 and r.json()["error_code"] == "CDC:ErrChangefeedUpdateRefused"
    assert client.delete("/api/v2/changefeeds/cf1").json() == {}
    assert client.delete("/api/v2/changefeeds/cf1").json() == {}  # idempotent, as TiCDC
    assert client.get("/api/v2/changefeeds").json() == {"total": 0, "items": []}


@pytest.mark.parametrize(
    ("method", "path", "body", "code"),
    [
        ("GET", "/api/v2/changefeeds/nope", None, "CDC:ErrChangeFeedNotExists"),
        ("POST", "/api/v2/changefeeds/nope/pause", None, "CDC:ErrChangeFeedNotExists"),
        ("GET", "/api/v2/changefeeds/bad_id", None, "CDC:ErrAPIInvalidParam"),
        (
            "POST",
            "/api/v2/changefeeds",
            {"changefeed_id": "a_b", "sink_uri": "file:///x?protocol=csv"},
            "CDC:ErrAPIInvalidParam",
        ),
        ("POST", "/api/v2/changefeeds", {"sink_uri": "file:///x"}, "CDC:ErrSinkUnknownProtocol"),  # no protocol
        ("POST", "/api/v2/changefeeds", {"sink_uri": "ftp://h/x?protocol=csv"}, "CDC:ErrSinkURIInvalid"),
        ("POST", "/api/v2/changefeeds", {"start_ts": -1}, "CDC:ErrAPIInvalidParam"),
        ("POST", "/api/v2/changefeeds", {"start_ts": "abc"}, "CDC:ErrAPIInvalidParam"),
        (
            "POST",
            "/api/v2/changefeeds",
            {"sink_uri": "file:///x?protocol=csv", "replica_config": {"nope": 1}},
            "CDC:ErrInvalidReplicaConfig",
        ),
        ("GET", "/api/v2/changefeeds?state=sleeping", None, "CDC:ErrAPIInvalidParam"),
        ("GET", "/api/v2/nowhere", None, "CDC:ErrAPIInvalidParam"),
    ],
)
def test_errors(client: ASGIClient, method: str, path: str, body: object, code: str) -> None:
    r = client.request(method, path, json=body)
    assert r.status_code in (400, 404, 405)
    err = r.json()
    assert list(err) == ["error_msg", "error_code"]
    assert err["error_code"] == code
    assert err["error_msg"].startswith(f"[{code}]")
    assert "\n" not in err["error_msg"]
    assert client.get("/api/v2/changefeeds").json()["total"] == 0


def test_secret_not_in_error(client: ASGIClient) -> None:
    r = client.post("/api/v2/changefeeds", json={"sink_uri": "s3://b/p?protocol=nope&secret-access-key=TOPSECRET"})
    assert r.status_code == 400
    assert "TOPSECRET" not in r.text


API_REFUSED = [c for c in REFUSED if c.api is not None]


@pytest.mark.parametrize("case", API_REFUSED, ids=[c.id for c in API_REFUSED])
def test_create_and_update_refuse_bad_replica_config(client: ASGIClient, case: Refused) -> None:
    """One TiCDC error body (400, code, message) at create and at update; nothing created or changed."""
    sink_uri = "file:///tmp/s?protocol=csv"
    r = client.post(
        "/api/v2/changefeeds", json={"changefeed_id": "bad", "sink_uri": sink_uri, "replica_config": case.api}
    )
    assert r.status_code == 400, r.text
    err = r.json()
    assert list(err) == ["error_msg", "error_code"] and err["error_code"] == case.code
    assert err["error_msg"].startswith(f"[{case.code}]") and case.fragment in err["error_msg"]
    assert "\n" not in err["error_msg"]
    assert client.get("/api/v2/changefeeds").json()["total"] == 0

    assert client.post("/api/v2/changefeeds", json={"changefeed_id": "cf1", "sink_uri": sink_uri}).status_code == 200
    client.post("/api/v2/changefeeds/cf1/pause")
    before = client.get("/api/v2/changefeeds/cf1").json()
    r = client.put("/api/v2/changefeeds/cf1", json={"replica_config": case.api})
    assert r.status_code == 400 and r.json()["error_code"] == case.code
    assert case.fragment in r.json()["error_msg"]
    assert client.get("/api/v2/changefeeds/cf1").json() == before


def test_get_then_put_back_is_accepted_and_unchanged(client: ASGIClient, monkeypatch: pytest.MonkeyPatch) -> None:
    object_stores_answer(monkeypatch)
    config = ReplicaConfig.from_toml_text(REPRESENTATIVE_TOML).to_api()
    body = {"changefeed_id": "cf1", "sink_uri": SECRET_SINK.replace("canal-json", "csv"), "replica_config": config}
    assert client.post("/api/v2/changefeeds", json=body).status_code == 200
    client.post("/api/v2/changefeeds/cf1/pause")
    got = client.get("/api/v2/changefeeds/cf1").json()
    assert got["config"]["sync_point_interval"] == 90 * 10**9
    assert got["config"]["sink"]["csv"]["delimiter"] == "|;"
    r = client.put("/api/v2/changefeeds/cf1", json={"sink_uri": got["sink_uri"], "replica_config": got["config"]})
    assert r.status_code == 200, r.text
    assert client.get("/api/v2/changefeeds/cf1").json() == got  # the stored secret is kept: see test_changefeed


SECRET_CONFIG = {
    "filter": {"rules": ["shop.*"]},
    "sink": {"kafka-config": {"sasl-user": "cdc", "sasl-password": "TOPSECRET-1", "sasl-oauth-client-secret":
             "TOPSECRET-2", "large-message-handle": {"claim-check-storage-uri":
                                                     "s3://claims/p?access-key=AK&secret-access-key=TOPSECRET-3"}}},
}  # fmt: skip


def test_the_configs_secrets_are_masked_in_answers_and_kept_when_sent_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    object_stores_answer(monkeypatch)
    store = MetaStore(tmp_path)
    mgr = ChangefeedManager(store, FakeRunner())
    mgr.start(poll=False)
    client = ASGIClient(create_app(mgr, SingleNode("127.0.0.1:8300", capture_id="cap-1")))
    try:
        body = {"changefeed_id": "cfs", "sink_uri": SECRET_SINK,
                "replica_config": ReplicaConfig.from_toml(SECRET_CONFIG).to_api()}  # fmt: skip
        created = client.post("/api/v2/changefeeds", json=body)
        assert created.status_code == 200, created.text
        client.post("/api/v2/changefeeds/cfs/pause")
        got = client.get("/api/v2/changefeeds/cfs")
        answers = created.text + got.text + client.get("/api/v2/changefeeds").text
        assert "TOPSECRET" not in answers
        kafka = got.json()["config"]["sink"]["kafka_config"]
        assert kafka["sasl_user"] == "cdc" and kafka["sasl_password"] == "xxxxx"
        assert kafka["large_message_handle"]["claim_check_storage_uri"] == (
            "s3://claims/p?access-key=xxxxx&secret-access-key=xxxxx")  # fmt: skip
        r = client.put("/api/v2/changefeeds/cfs", json={"sink_uri": got.json()["sink_uri"],
                                                        "replica_config": got.json()["config"]})  # fmt: skip
        assert r.status_code == 200 and "TOPSECRET" not in r.text, r.text
        stored = store.get("default", "cfs")[0]
        assert stored.config == ReplicaConfig.from_toml(SECRET_CONFIG).with_uri_protocol(SECRET_SINK)
        assert stored.sink_uri == SECRET_SINK
        changed = dict(got.json()["config"])
        changed["sink"] = {"kafka_config": {**kafka, "sasl_password": "NEW-PASSWORD"}}
        assert client.put("/api/v2/changefeeds/cfs", json={"replica_config": changed}).status_code == 200
        stored_kafka = store.get("default", "cfs")[0].config.to_toml()["sink"]["kafka-config"]
        assert stored_kafka["sasl-password"] == "NEW-PASSWORD"  # a new secret replaces the old one
        assert stored_kafka["sasl-oauth-client-secret"] == "TOPSECRET-2"  # one sent back masked stays
    finally:
        mgr.close()


def test_a_list_item_shows_the_warning_of_a_warning_changefeed_and_no_error_while_normal() -> None:
    """TiCDC's list: ``error`` is the error, else the warning (``changefeed list`` and ``query -s`` showed
    ``"error": null`` for a changefeed in ``warning``, so the user saw no reason); nothing for a normal one."""
    from sparkcdc.changefeed.info import ChangefeedInfo, ChangefeedStatus, FeedState, RunningError
    from sparkcdc.server.api_model import changefeed_common_info

    warned = RunningError("CDC:ErrExternalStorageAPI", "bucket or container does not exist", "127.0.0.1:8300")
    status = ChangefeedStatus(checkpoint_ts=NOW, resolved_ts=NOW, last_warning=warned)
    info = ChangefeedInfo(id="cf1", sink_uri="file:///tmp/s?protocol=csv", start_ts=NOW, state=FeedState.WARNING)
    assert changefeed_common_info(info, status)["error"] == {
        "addr": "127.0.0.1:8300", "code": "CDC:ErrExternalStorageAPI", "message": "bucket or container does not exist"}
    failed = RunningError("CDC:ErrSinkURIInvalid", "bad sink")
    item = changefeed_common_info(info.with_changes(state=FeedState.FAILED, error=failed), status)
    assert item["error"]["code"] == "CDC:ErrSinkURIInvalid"
    assert changefeed_common_info(info.with_changes(state=FeedState.NORMAL, error=failed), status)["error"] is None


def test_verify_table_names_the_matched_tables_without_a_handle_key(tmp_path: Path) -> None:
    """TiCDC's verify_table: what changefeed create warns about (no primary key, no NOT NULL unique key), within
    the filter rules and outside the system schemas."""
    runner = FakeRunner()
    keyed = (ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True), ColumnInfo("v", "int"))
    keyless = (ColumnInfo("v", "int"),)
    runner.tables = [TableInfo("shop", "orders", 1, keyed), TableInfo("shop", "log", 2, keyless),
                     TableInfo("other", "log", 3, keyless), TableInfo("mysql", "general_log", 4, keyless)]  # fmt: skip
    mgr = ChangefeedManager(MetaStore(tmp_path), runner)
    mgr.start(poll=False)
    try:
        client = ASGIClient(create_app(mgr, SingleNode("127.0.0.1:8300")))
        body = {"start_ts": NOW, "replica_config": {"filter": {"rules": ["shop.*", "mysql.*"]}}}
        r = client.post("/api/v2/verify_table", json=body)
        assert r.status_code == 200, r.text
        assert r.json() == {"ineligible_tables": [{"database_name": "shop", "table_name": "log"}]}
        forced = {**body, "replica_config": {"force_replicate": True}}
        assert client.post("/api/v2/verify_table", json=forced).json()["ineligible_tables"] == [
            {"database_name": "shop", "table_name": "log"},
            {"database_name": "other", "table_name": "log"},
        ]
    finally:
        mgr.close()
