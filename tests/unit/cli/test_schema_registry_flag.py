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
    monkeypatch.setattr(APIClient, "verify_table", lambda _, body: [])
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


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), "Error: [CDC:ErrAvroSchemaAPIError] protocol=avro is read through the changefeed's schema registry: pass "
             "--schema-registry-uri http://host:8081"),
        (("--schema-registry-uri", "http://u:hunter2/x@h"), "Error: [CDC:ErrAvroSchemaAPIError] --schema-registry-uri "
         "'http://u:xxxxx@h' is not a valid URL"),
        (("--schema-registry", "ftp://u:hunter2@h"), "--schema-registry-uri 'ftp://u:xxxxx@h' must start with http://"),
    ],
)  # fmt: skip
def test_kafka_consumer_avro_settings_are_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], expected: str
) -> None:
    """``cdc kafka-consumer`` on an avro topic: its registry flag (TiCDC's ``--schema-registry-uri``) is checked
    before anything is reached; a problem is one line and exit code 1, the password masked."""
    uri = "kafka://127.0.0.1:1/t?protocol=avro&enable-tidb-extension=true&avro-enable-watermark=true"
    monkeypatch.setattr("sys.argv", ["cdc", "kafka-consumer", "--upstream-uri", uri, "--downstream-uri",
                                     "mysql://root:hunter2@127.0.0.1:1/", *args])  # fmt: skip
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.strip().splitlines() == [err.strip()], err
    assert err.startswith("Error: ") and expected in err and "hunter2" not in err, err
