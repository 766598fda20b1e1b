"""``cdc cli changefeed create --schema-registry``: the flag becomes ``[sink] schema-registry`` of the replica
config sent to the server, beating the one of ``--config`` (as in TiCDC); nothing here reaches a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.client import APIClient
from sparkcdc.cli.main import main


def create(monkeypatch: pytest.MonkeyPatch, *args: str) -> dict[str, Any]:
    sent: dict[str, Any] = {}

    def fake_create(_: APIClient, body: dict[str, Any]) -> dict[str, Any]:
        sent.update(body)
        return {"id": body.get("changefeed_id") or "cf"}

    monkeypatch.setattr(APIClient, "tso", lambda _: 450000000000000000)
    monkeypatch.setattr(APIClient, "create", fake_create)
    monkeypatch.setattr("sys.argv", ["cdc", "cli", "changefeed", "create", "--no-confirm", *args])
    main()  # returns on success (exit code 0)
    return sent


def test_the_flag_sets_the_sink_registry_and_beats_the_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    uri = "kafka://127.0.0.1:9092/t?protocol=avro"
    body = create(monkeypatch, "--sink-uri", uri, "--schema-registry", "https://u:p%40ss@reg:8081")
    assert body["replica_config"]["sink"]["schema_registry"] == "https://u:p%40ss@reg:8081"
    config = tmp_path / "cf.toml"
    config.write_text("[sink]\nschema-registry = 'http://from-config:8081'\n")
    body = create(monkeypatch, "--sink-uri", uri, "--config", str(config), "--schema-registry", "http://flag:8081")
    assert body["replica_config"]["sink"]["schema_registry"] == "http://flag:8081"
    body = create(monkeypatch, "--sink-uri", uri, "--config", str(config))
    assert body["replica_config"]["sink"]["schema_registry"] == "http://from-config:8081"
