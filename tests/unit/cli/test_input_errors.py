"""A user's mistake given to ``cdc`` ends with exactly one ``Error:`` line and exit code 1, never a traceback:
malformed ``--server`` values, changefeed ids that would break or redirect the request path, unreadable
``--config`` and ``--log-file`` paths, a ``--server`` that is not a cdc server. Nothing here reaches a server."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkcdc.cli import client as client_module
from sparkcdc.cli.client import APIClient, server_url
from sparkcdc.cli.main import main
from sparkcdc.errors import ConfigError, SparkcdcError

UNREACHABLE = "http://127.0.0.1:1"


@pytest.fixture(autouse=True)
def _keep_root_log_level() -> Iterator[None]:
    """``cdc storage-consumer`` and ``cdc server`` set the root logger's level before failing."""
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)


def run_cdc(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run ``cdc args`` in this process; assert exit code 1 and one ``Error:`` line on stderr, return it."""
    monkeypatch.setattr("sys.argv", ["cdc", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    assert exit_info.value.code == 1, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0]


BAD_SERVERS = {
    ":::": "Invalid port",
    "http://": "no host",
    "http://[::1": "Invalid port",
    "ftp://x": "unsupported scheme 'ftp'",
    "http://127.0.0.1:99999": "port 99999 is out of range",
    "http://" + "a" * 70 + ".com": "invalid host name",
    "http://x:y": "Invalid port",
    "http://a\x01b": "non-printable",
    " ": "no host",
}


@pytest.mark.parametrize("server", list(BAD_SERVERS), ids=[repr(s) for s in BAD_SERVERS])
def test_malformed_server(server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    line = run_cdc(monkeypatch, capsys, "cli", "--server", server, "changefeed", "list")
    assert line.startswith("Error: [CDC:ErrInvalidServerOption] invalid --server"), line
    assert BAD_SERVERS[server] in line


@pytest.mark.parametrize("args", [("changefeed", "list", "--server", ":::"), ("tso", "query", "--server", ":::")])
def test_malformed_server_on_subcommand(
    args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "CDC:ErrInvalidServerOption" in run_cdc(monkeypatch, capsys, "cli", *args)


def test_server_url_accepts_what_users_type() -> None:
    assert server_url("127.0.0.1:8300") == "http://127.0.0.1:8300"
    assert server_url("http://127.0.0.1:8300/") == "http://127.0.0.1:8300"
    assert server_url("[::1]:8300") == "http://[::1]:8300"
    assert server_url("https://cdc.example.com") == "https://cdc.example.com"
    with pytest.raises(ConfigError):
        server_url("http://")


BAD_IDS = ["a\x01b", "a/b", "../x", "a?b=1", "a#b", ""]
COMMANDS = [
    ("query",),
    ("pause",),
    ("resume", "--no-confirm"),
    ("remove",),
    ("update", "--no-confirm", "--target-ts", "5"),
    ("statistics", "--count", "1"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
@pytest.mark.parametrize("changefeed_id", BAD_IDS, ids=[repr(i) for i in BAD_IDS])
def test_changefeed_id_that_would_break_the_path(
    command: tuple[str, ...], changefeed_id: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = run_cdc(monkeypatch, capsys, "cli", "changefeed", *command, "--server", UNREACHABLE, "-c", changefeed_id)
    assert line.startswith("Error: [CDC:ErrAPIInvalidParam] invalid changefeed_id"), line


def test_unreadable_changefeed_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe[sink]")
    broken = tmp_path / "broken.toml"
    broken.write_text("[sink\nx=")
    base = ("cli", "changefeed", "create", "--server", UNREACHABLE, "--sink-uri", "file:///tmp/x?protocol=csv")
    assert "not UTF-8 text" in run_cdc(monkeypatch, capsys, *base, "--config", str(binary))
    assert "invalid TOML" in run_cdc(monkeypatch, capsys, *base, "--config", str(broken))
    assert "No such file" in run_cdc(monkeypatch, capsys, *base, "--config", str(tmp_path / "missing.toml"))


def test_storage_consumer_unreadable_config_and_log_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe[sink]")
    base = ("storage-consumer", "--upstream-uri", f"file://{tmp_path}/tree?protocol=csv", "--downstream-uri",
            "mysql://root@127.0.0.1:1/")  # fmt: skip
    assert "is not UTF-8 text" in run_cdc(monkeypatch, capsys, *base, "--config", str(binary))
    line = run_cdc(monkeypatch, capsys, *base, "--log-file", str(tmp_path / "missing" / "consumer.log"))
    assert "cannot write --log-file" in line


@pytest.mark.parametrize("command", ["storage-consumer", "kafka-consumer"])
def test_a_consumers_config_with_a_misspelt_key_is_refused(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As TiCDC's consumers decode --config strictly: a misspelt table (``[sinks.csv]``) is an error, not settings
    silently left at their defaults."""
    config = tmp_path / "cf.toml"
    config.write_text("[sinks.csv]\ninclude-commit-ts = true\n")
    upstream = (f"file://{tmp_path}/tree?protocol=csv" if command == "storage-consumer"
                else "kafka://127.0.0.1:1/t?protocol=canal-json")  # fmt: skip
    line = run_cdc(monkeypatch, capsys, command, "--upstream-uri", upstream, "--downstream-uri",
                   "mysql://root@127.0.0.1:1/", "--config", str(config))  # fmt: skip
    assert line.startswith(f"Error: [CDC:ErrInvalidReplicaConfig] --config {config}: ")
    assert "unknown configuration option 'sinks'" in line


def test_server_log_file_under_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "f").write_text("")
    line = run_cdc(monkeypatch, capsys, "server", "--runner", "noop", "--data-dir", str(tmp_path / "data"),
                   "--log-file", str(tmp_path / "f" / "server.log"))  # fmt: skip
    assert "cannot use --log-file" in line


@pytest.mark.parametrize("query", ["?ssl-ca=/nonexistent/ca.pem", "?sslca=/ca.pem"])
def test_server_upstream_with_a_bad_parameter(
    query: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = run_cdc(monkeypatch, capsys, "server", "--runner", "noop", "--data-dir", str(tmp_path / "data"),
                   "--upstream", f"mysql://cdc:TOPSECRET@127.0.0.1:1{query}")  # fmt: skip
    assert line.startswith("Error: [CDC:ErrInvalidServerOption] invalid upstream URI 'mysql://cdc:xxxxx@"), line
    assert "TOPSECRET" not in line and not (tmp_path / "data").exists()  # refused before anything started


def test_server_that_is_not_a_cdc_server() -> None:
    client = APIClient(UNREACHABLE)
    client._http = httpx.Client(
        base_url=UNREACHABLE + "/api/v2", transport=httpx.MockTransport(lambda _: httpx.Response(200, json=[1]))
    )
    with client, pytest.raises(SparkcdcError, match="not an Open API v2 object") as e:
        client.list("default")
    assert e.value.code == "CDC:ErrCliInvalidResponse"


def test_unexpected_error_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def boom(*_: Any, **__: Any) -> Any:
        raise ValueError("boom\nsecond line")

    monkeypatch.setattr(client_module.APIClient, "list", boom)
    line = run_cdc(monkeypatch, capsys, "cli", "changefeed", "list", "--server", UNREACHABLE)
    assert line.startswith("Error: [CDC:ErrInternal] unexpected ValueError: boom second line"), line


@pytest.mark.parametrize(
    ("server", "shown"),
    [("http://cdc:TOPSECRET@127.0.0.1:1", "cannot reach the cdc server at http://cdc:xxxxx@127.0.0.1:1: "),
     ("http://cdc:TOPSECRET@127.0.0.1:x", "invalid --server 'http://cdc:xxxxx@127.0.0.1:x': Invalid port")],
)  # fmt: skip
def test_a_password_in_server_is_never_printed(
    server: str, shown: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = run_cdc(monkeypatch, capsys, "cli", "changefeed", "list", "--server", server)
    assert shown in line and "TOPSECRET" not in line


@pytest.mark.parametrize("master", ["bogus", "127.0.0.1:7077", "Local[2]"])
def test_server_refuses_a_spark_master_spark_would_refuse(
    master: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before anything starts, instead of a server up with a JVM that exited at once and changefeeds that never run."""
    line = run_cdc(monkeypatch, capsys, "server", "--runner", "noop", "--data-dir", str(tmp_path / "data"),
                   "--spark-master", master)  # fmt: skip
    assert line == (f"Error: [CDC:ErrInvalidServerOption] invalid --spark-master {master!r}: Spark takes local[*], "
                    "local[N], spark://host:port, k8s://... or yarn")  # fmt: skip
    assert not (tmp_path / "data").exists()
