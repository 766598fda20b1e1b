"""`cdc server --upstream mysql://…` against the private MariaDB: start-ts is checked against the upstream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkcdc.capture.upstream import MySQLUpstream
from sparkcdc.devtools.mariadb import CDC_PASSWORD, CDC_USER, MariaDB
from sparkcdc.model import tso
from tests.e2e.test_cli_changefeed import CdcServer, one_error, sink

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
