"""`cdc server --upstream mysql://…` against the private MariaDB: start-ts is checked against the upstream; with
TLS settings the server captures and copies (``[snapshot]``) from a MariaDB that accepts its user only over TLS with
a client certificate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkcdc.capture.upstream import MySQLUpstream
from sparkcdc.devtools.mariadb import CDC_PASSWORD, CDC_USER, MariaDB
from sparkcdc.model import tso
from tests.e2e.test_cli_changefeed import CdcServer, one_error, sink
from tests.fixtures.mariadb import FreshDatabase
from tests.fixtures.tls import PemFiles
from tests.integration.pipeline.replay import replay
from tests.integration.pipeline.server import SparkServer, now_tso

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def upstream_uri(db: MariaDB) -> str:
    return f"mysql://{CDC_USER}:{CDC_PASSWORD}@127.0.0.1:{db.port}"


@pytest.fixture
def server(tmp_path: Path, mariadb: MariaDB) -> Iterator[CdcServer]:
    srv = CdcServer(tmp_path, "--upstream", upstream_uri(mariadb))
    srv.start()
    yield srv
    srv.stop()


def test_probe(mariadb: MariaDB) -> None:
    up = MySQLUpstream(upstream_uri(mariadb))
    now = up.current_tso()
    oldest = up.oldest_retained_tso()
    assert 0 < oldest <= now
    assert tso.logical(oldest + 1) == 0  # just below a whole second: binlog event times are whole seconds
    assert CDC_PASSWORD not in repr(up)


def test_start_ts_checked_against_upstream(server: CdcServer, tmp_path: Path, mariadb: MariaDB) -> None:
    oldest = MySQLUpstream(upstream_uri(mariadb)).oldest_retained_tso()
    r = server.cli(
        "create", "-c", "too-old", "--sink-uri", sink(tmp_path), "--start-ts", str(oldest - 1), "--no-confirm"
    )
    one_error(r, "earlier than the oldest binlog the upstream still retains")
    assert "CDC:ErrStartTsBeforeGC" in r.stderr
    future = tso.compose(tso.physical(oldest) + 10 * 365 * 86400 * 1000)
    one_error(
        server.cli("create", "-c", "future", "--sink-uri", sink(tmp_path), "--start-ts", str(future)),
        "larger than current tso",
    )
    r = server.cli("create", "-c", "ok", "--sink-uri", sink(tmp_path), "--start-ts", str(oldest), "--no-confirm")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.splitlines()[2].removeprefix("Info: "))
    assert info["start_ts"] == oldest and info["upstream_id"] > 0
    assert [cf["id"] for cf in server.api("/changefeeds")["items"]] == ["ok"]
    assert CDC_PASSWORD not in (tmp_path / "server.log").read_text()


def test_server_captures_and_copies_over_tls(tls_mariadb: MariaDB, pem: PemFiles, tmp_path: Path) -> None:
    """The binlog capture, the snapshot's plan (driver) and its chunk reads (executors) all log in as a user the
    server refuses without TLS and the client certificate (``tls_mariadb``): each got the URI's TLS settings."""
    db = FreshDatabase(tls_mariadb, "tls_e2e")
    server = SparkServer(tmp_path, tls_mariadb.port or 0)
    server.upstream += f"?ssl-ca={pem.ca}&ssl-cert={pem.cert}&ssl-key={pem.key}"
    sink_uri = f"file://{tmp_path / 'sink'}?protocol=canal-json&flush-interval=1s"
    try:
        db.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO t VALUES (1, 'old'), (2, 'old')")
        server.start()
        config = tmp_path / "cf.toml"
        config.write_text(f'[filter]\nrules = ["{db.name}.*"]\n\n[snapshot]\nmode = "initial"\n')
        created = server.cli("create", "--sink-uri", sink_uri, "--changefeed-id", "tls", "--config", str(config))
        assert created.returncode == 0, created.stderr + created.stdout
        db.execute("INSERT INTO t VALUES (3, 'new')", "UPDATE t SET v = 'changed' WHERE id = 1")
        server.wait_checkpoint("tls", now_tso(db), 120)
    finally:
        server.stop()
        db.close()
    _, got = replay(sink_uri)
    assert {k: v["v"] for k, v in got["tls_e2e.t"].items()} == {"1": "changed", "2": "old", "3": "new"}
    assert CDC_PASSWORD not in server.log.read_text()
