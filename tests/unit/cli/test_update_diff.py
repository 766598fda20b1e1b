"""``cdc cli changefeed update`` shows what it will change before it asks: the new sink URI too, masked."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.cli.client import APIClient
from sparkcdc.cli.main import main

OLD = "s3://bkt/p?protocol=csv&access-key=xxxxx&secret-access-key=xxxxx"  # as the server shows it


def test_the_diff_names_the_new_sink_uri_without_its_secret(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sent: dict[str, Any] = {}
    stored = {"id": "cf1", "sink_uri": OLD, "config": ReplicaConfig().to_api(), "target_ts": 0}
    monkeypatch.setattr(APIClient, "get", lambda _, namespace, cf: stored)
    monkeypatch.setattr(APIClient, "update", lambda _, namespace, cf, body: sent.update(body) or stored)
    new = "s3://other/p?protocol=csv&access-key=AK&secret-access-key=TOPSECRET"
    monkeypatch.setattr("sys.argv", ["cdc", "cli", "changefeed", "update", "-c", "cf1", "--sink-uri", new,
                                     "--no-confirm"])  # fmt: skip
    main()
    out = capsys.readouterr().out
    assert "update sink_uri: " + OLD + " -> s3://other/p?protocol=csv&access-key=xxxxx&secret-access-key=xxxxx\n" in out
    assert "TOPSECRET" not in out and sent["sink_uri"] == new
