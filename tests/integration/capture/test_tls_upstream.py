"""Capture over TLS: an upstream URI with ``ssl-ca``/``ssl-cert``/``ssl-key`` makes every upstream connection (the
binlog replica connection, the puller's queries, the start-ts probes) use TLS that verifies the server and presents the
client certificate. The server's cdc user is ``REQUIRE X509``, so it refuses that user without TLS or without the
certificate; a CA that did not sign the server's certificate is refused by the client."""

from __future__ import annotations

from pathlib import Path

import pymysql
import pytest

from sparkcdc.capture import Puller, PullerConfig
from sparkcdc.capture.binlog_stream import query
from sparkcdc.capture.upstream import MySQLUpstream
from sparkcdc.devtools.mariadb import CDC_PASSWORD, CDC_USER, MariaDB
from sparkcdc.errors import UpstreamError
from sparkcdc.model.events import RowChange
from sparkcdc.mysql.target import MysqlTarget
from tests.fixtures.mariadb import FreshDatabase
from tests.fixtures.tls import PemFiles
from tests.integration.capture.conftest import decode_all, for_schema

pytestmark = pytest.mark.integration


def upstream(db: MariaDB, params: str) -> str:
    return f"mysql://{CDC_USER}:{CDC_PASSWORD}@127.0.0.1:{db.port}{params}"


def test_the_puller_captures_over_verified_tls(tls_mariadb: MariaDB, pem: PemFiles, tmp_path: Path) -> None:
    for without in ({"ssl_disabled": True}, {"ssl": {"ca": pem.ca}}):  # no TLS; TLS without a client certificate
        with pytest.raises(pymysql.err.OperationalError) as refused:
            pymysql.connect(**tls_mariadb.connect_kwargs(CDC_USER), **without)
        assert refused.value.args[0] == 1045  # access denied

    uri = upstream(tls_mariadb, f"?ssl-ca={pem.ca}&ssl-cert={pem.cert}&ssl-key={pem.key}")
    config = PullerConfig(data_dir=str(tmp_path / "relay"),
                          **MysqlTarget.parse(uri, upstream=True).client_args())  # fmt: skip
    ((_, cipher),) = query(config, "SHOW SESSION STATUS LIKE 'Ssl_cipher'")
    assert cipher  # the puller's connections are TLS
    db = FreshDatabase(tls_mariadb, "tls_capture")
    try:
        db.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
        puller = Puller(config)
        try:
            puller.catch_up(30)
            db.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')", "UPDATE t SET v = 'c' WHERE id = 2")
            puller.catch_up(30)
        finally:
            puller.close()
    finally:
        db.close()
    rows = [e for e in for_schema(decode_all(tmp_path / "relay"), "tls_capture") if isinstance(e, RowChange)]
    assert [(r.before, r.after) for r in rows] == [(None, (1, "a")), (None, (2, "b")), ((2, "b"), (2, "c"))]

    probe = MySQLUpstream(uri)  # the start-ts checks read the clock and the oldest binlog over TLS too
    assert 0 < probe.oldest_retained_tso() <= probe.current_tso()


def test_a_ca_that_did_not_sign_the_server_is_refused(tls_mariadb: MariaDB, pem: PemFiles, tmp_path: Path) -> None:
    # pem.cert is a certificate the CA signed, not the CA: it cannot vouch for the server's certificate
    uri = upstream(tls_mariadb, f"?ssl-ca={pem.cert}&ssl-cert={pem.cert}&ssl-key={pem.key}")
    args = MysqlTarget.parse(uri, upstream=True).client_args()
    puller = Puller(PullerConfig(data_dir=str(tmp_path / "relay"), **args))
    try:
        with pytest.raises(UpstreamError, match="CERTIFICATE_VERIFY_FAILED") as refused:
            puller.catch_up(10)
    finally:
        puller.close()
    assert refused.value.retryable and CDC_PASSWORD not in refused.value.message
