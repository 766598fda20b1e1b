"""MysqlSinkConfig: TiCDC's MySQL sink parameters (``pkg/sink/mysql/config.go``) and defaults, ``[sink.mysql-config]``
with the URI beating it, counts clamped to TiCDC's bounds with a warning, one-line errors that name the key and where
it came from, the password never shown, and the TLS settings the downstream connection gets."""

from __future__ import annotations

import logging
import pickle
from typing import Any

import pytest

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.errors import ConfigError
from sparkcdc.sink.mysql.config import MysqlSinkConfig
from tests.fixtures.tls import PemFiles

ERR, REPLICA_ERR = "CDC:ErrMySQLInvalidConfig", "CDC:ErrInvalidReplicaConfig"
SECRET = "hunter2"
H = f"mysql://root:{SECRET}@127.0.0.1:3307/"
URI, MYSQL = "sink URI", "[sink.mysql-config]"
TWO_MINUTES = 120 * 10**9


def cfg(uri: str, toml: dict[str, Any] | None = None) -> MysqlSinkConfig:
    return MysqlSinkConfig.from_uri(uri, toml)


def mc(table: dict[str, Any], **sink: Any) -> dict[str, Any]:
    return {"sink": {"mysql-config": table, **sink}}


@pytest.fixture
def tls_files_unchecked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """For the tests of how the settings merge: their TLS paths name no real files, so the loading of the files
    (``tls_files``, tested with real ones in ``test_tls_files``) is recorded instead of done."""
    seen: list[tuple[str, str, str]] = []
    monkeypatch.setattr("sparkcdc.mysql.uri.check_tls_files", lambda *files: seen.append(files))
    return seen


def refused(uri: str, toml: dict[str, Any] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        cfg(uri, toml)
    assert "\n" not in e.value.message and "Traceback" not in e.value.message
    for secret in (SECRET, "p@ss", "p%40ss"):
        assert secret not in e.value.message, e.value.message
    return e.value


def test_defaults() -> None:
    c = cfg(H)
    t = c.target
    assert (t.host, t.port, t.user, t.password, t.tls, t.database) == ("127.0.0.1", 3307, "root", SECRET, False, "")
    assert t.params == (("connect-timeout", "120"),)
    assert (c.scheme, c.workers, c.worker_count, c.max_txn_row) == ("mysql", 16, 16, 256)
    assert (c.max_multi_update_row, c.max_multi_update_row_size, c.tidb_txn_mode) == (40, 1024, "optimistic")
    assert (c.safe_mode, c.batch_dml_enable, c.multi_stmt_enable, c.cache_prep_stmts) == (False, True, True, True)
    assert c.time_zone is None
    assert (c.read_timeout_ns, c.write_timeout_ns, c.dial_timeout_ns) == (TWO_MINUTES,) * 3
    assert (c.enable_sync_point, c.sync_point_interval_ns, c.sync_point_retention_ns, c.bdr_mode) == (
        False, 600 * 10**9, 24 * 3600 * 10**9, False)  # fmt: skip
    assert c.flush_interval > 0
    assert cfg(H, {}) == c == cfg(H, None)


@pytest.mark.usefixtures("tls_files_unchecked")
def test_every_uri_parameter() -> None:
    c = cfg(
        H + "?worker-count=8&max-txn-row=100&max-multi-update-row=10&max-multi-update-row-size=0"
        "&tidb-txn-mode=PESSIMISTIC&ssl-ca=/ca.pem&ssl-cert=/cert.pem&ssl-key=/key.pem&safe-mode=true"
        "&time-zone=Asia/Shanghai&read-timeout=30s&write-timeout=1m30s&timeout=1500ms&batch-dml-enable=false"
        "&multi-stmt-enable=0&cache-prep-stmts=F&has-vector-type=true&enable-old-value=true"
    )
    assert (c.workers, c.max_txn_row, c.max_multi_update_row, c.max_multi_update_row_size) == (8, 100, 10, 0)
    assert (c.tidb_txn_mode, c.safe_mode, c.time_zone) == ("pessimistic", True, "Asia/Shanghai")
    assert (c.read_timeout_ns, c.write_timeout_ns, c.dial_timeout_ns) == (30 * 10**9, 90 * 10**9, 1_500_000_000)
    assert (c.batch_dml_enable, c.multi_stmt_enable, c.cache_prep_stmts) == (False, False, False)
    assert c.target.params == (("connect-timeout", "1"), ("ssl-ca", "/ca.pem"), ("ssl-cert", "/cert.pem"),
                               ("ssl-key", "/key.pem"), ("time-zone", "Asia/Shanghai"))  # fmt: skip


@pytest.mark.parametrize(
    ("uri", "port", "tls"),
    [
        ("mysql://h/", 3306, False),
        ("mysql+ssl://h/", 3306, True),
        ("tidb://h/", 4000, False),
        ("tidb+ssl://h", 4000, True),
        ("TiDB://h:3306/", 3306, False),
        ("MySQL+SSL://h:4000/", 4000, True),
    ],
)
def test_schemes_ports_and_tls(uri: str, port: int, tls: bool) -> None:
    t = cfg(uri).target
    assert (t.host, t.port, t.tls, t.user, t.password) == ("h", port, tls, "root", "")
    assert cfg(uri).scheme == uri.split(":", 1)[0].lower()


def test_user_and_password_are_url_decoded() -> None:
    c = cfg("mysql://app%40corp:p%40ss%2Fw%3Fd@[::1]:3307/ignored_db")
    assert (c.target.user, c.target.password, c.target.host, c.target.port) == ("app@corp", "p@ss/w?d", "::1", 3307)


TOML_ALL: dict[str, Any] = {
    "worker-count": 4,
    "max-txn-row": 64,
    "max-multi-update-row": 8,
    "max-multi-update-row-size": 2048,
    "tidb-txn-mode": "pessimistic",
    "ssl-ca": "/toml-ca.pem",
    "ssl-cert": "/toml-cert.pem",
    "ssl-key": "/toml-key.pem",
    "time-zone": "UTC",
    "read-timeout": "10s",
    "write-timeout": "20s",
    "timeout": "3s",
    "enable-batch-dml": False,
    "enable-multi-statement": False,
    "enable-cache-prepared-statement": False,
}


@pytest.mark.usefixtures("tls_files_unchecked")
def test_mysql_config_table_is_used() -> None:
    c = cfg(H, mc(TOML_ALL, **{"safe-mode": True}))
    assert (c.workers, c.max_txn_row, c.max_multi_update_row, c.max_multi_update_row_size) == (4, 64, 8, 2048)
    assert (c.tidb_txn_mode, c.safe_mode, c.time_zone) == ("pessimistic", True, "UTC")
    assert (c.read_timeout_ns, c.write_timeout_ns, c.dial_timeout_ns) == (10 * 10**9, 20 * 10**9, 3 * 10**9)
    assert (c.batch_dml_enable, c.multi_stmt_enable, c.cache_prep_stmts) == (False, False, False)
    assert c.target.params == (("connect-timeout", "3"), ("ssl-ca", "/toml-ca.pem"), ("ssl-cert", "/toml-cert.pem"),
                               ("ssl-key", "/toml-key.pem"), ("time-zone", "UTC"))  # fmt: skip


@pytest.mark.usefixtures("tls_files_unchecked")
def test_uri_beats_toml() -> None:
    c = cfg(
        H + "?worker-count=2&max-txn-row=3&max-multi-update-row=5&max-multi-update-row-size=7&tidb-txn-mode=optimistic"
        "&ssl-ca=/u-ca&ssl-cert=/u-cert&ssl-key=/u-key&time-zone=%2B08:00&read-timeout=1s&write-timeout=2s&timeout=4s"
        "&batch-dml-enable=true&multi-stmt-enable=true&cache-prep-stmts=true&safe-mode=false",
        mc(TOML_ALL, **{"safe-mode": True}),
    )
    assert (c.workers, c.max_txn_row, c.max_multi_update_row, c.max_multi_update_row_size) == (2, 3, 5, 7)
    assert (c.tidb_txn_mode, c.safe_mode, c.time_zone) == ("optimistic", False, "+08:00")
    assert (c.read_timeout_ns, c.write_timeout_ns, c.dial_timeout_ns) == (10**9, 2 * 10**9, 4 * 10**9)
    assert (c.batch_dml_enable, c.multi_stmt_enable, c.cache_prep_stmts) == (True, True, True)
    assert dict(c.target.params) == {"connect-timeout": "4", "ssl-ca": "/u-ca", "ssl-cert": "/u-cert",
                                     "ssl-key": "/u-key", "time-zone": "+08:00"}  # fmt: skip


@pytest.mark.usefixtures("tls_files_unchecked")
def test_a_uri_ssl_ca_completes_toml_cert_and_key() -> None:
    c = cfg(H + "?ssl-ca=/u-ca", mc({"ssl-cert": "/c", "ssl-key": "/k"}))
    assert c.target._ssl() == {"ca": "/u-ca", "cert": "/c", "key": "/k"}


@pytest.mark.parametrize(
    ("key", "value", "upper"),
    [("worker-count", 5000, 1024), ("max-txn-row", 4096, 2048), ("max-multi-update-row", 300, 256),
     ("max-multi-update-row-size", 10000, 8192)],
)  # fmt: skip
@pytest.mark.parametrize("where", [URI, MYSQL])
def test_counts_above_ticdc_bounds_are_clamped_with_a_warning(
    caplog: pytest.LogCaptureFixture, key: str, value: int, upper: int, where: str
) -> None:
    field = "workers" if key == "worker-count" else key.replace("-", "_")
    with caplog.at_level(logging.WARNING, logger="sparkcdc.sink.mysql.config"):
        c = cfg(H + f"?{key}={value}") if where == URI else cfg(H, mc({key: value}))
    assert getattr(c, field) == upper
    [record] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert f"{key} {value}" in record.getMessage() and str(upper) in record.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sparkcdc.sink.mysql.config"):
        assert getattr(cfg(H + f"?{key}={upper}"), field) == upper
    assert not caplog.records


def test_an_unknown_tidb_txn_mode_falls_back_to_optimistic_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sparkcdc.sink.mysql.config"):
        assert cfg(H + "?tidb-txn-mode=serializable").tidb_txn_mode == "optimistic"
    assert any("serializable" in r.getMessage() for r in caplog.records)
    assert cfg(H + "?tidb-txn-mode=").tidb_txn_mode == "optimistic"
    assert cfg(H, mc({"tidb-txn-mode": " Pessimistic "})).tidb_txn_mode == "pessimistic"


def test_zero_multi_update_row_size_is_allowed_and_empty_values_keep_defaults() -> None:
    c = cfg(H + "?max-multi-update-row-size=0&read-timeout=&write-timeout=&timeout=")
    assert c.max_multi_update_row_size == 0
    assert (c.read_timeout_ns, c.write_timeout_ns, c.dial_timeout_ns) == (TWO_MINUTES,) * 3
    c = cfg(H + "?time-zone=")
    assert c.time_zone == "" and c.target.params == (("connect-timeout", "120"),)  # "": the downstream's zone
    assert cfg(H + "?worker-count=%2B3").workers == 3  # Go's Atoi takes a sign


# (uri, toml, what the message names, where it came from)
BAD: list[tuple[str, dict[str, Any] | None, str, str]] = [
    (H + "?worker-count=0", None, "worker-count '0'", f"{URI}: must be greater than 0"),
    (H + "?worker-count=-1", None, "worker-count '-1'", f"{URI}: must be greater than 0"),
    (H + "?max-txn-row=0", None, "max-txn-row '0'", f"{URI}: must be greater than 0"),
    (H + "?max-multi-update-row=0", None, "max-multi-update-row '0'", f"{URI}: must be greater than 0"),
    (H + "?max-multi-update-row-size=-1", None, "max-multi-update-row-size '-1'", "greater than or equal to 0"),
    (H, mc({"worker-count": 0}), "worker-count '0'", f"{MYSQL}: must be greater than 0"),
    (H, mc({"max-txn-row": -5}), "max-txn-row '-5'", f"{MYSQL}: must be greater than 0"),
    (H + "?worker-count=abc", None, "worker-count 'abc'", f"{URI}: must be an integer"),
    (H + "?worker-count=", None, "worker-count ''", f"{URI}: must be an integer"),
    (H + "?max-txn-row=1.5", None, "max-txn-row '1.5'", f"{URI}: must be an integer"),
    (H + "?worker-count=99999999999", None, "worker-count '99999999999'", f"{URI}: out of range"),
    (H, mc({"worker-count": True}), "worker-count 'True'", f"{MYSQL}: must be an integer"),
    (H, mc({"max-txn-row": 2.0}), "max-txn-row '2.0'", f"{MYSQL}: must be an integer"),
    (H + "?safe-mode=yes", None, "safe-mode 'yes'", f"{URI}: use true or false"),
    (H, {"sink": {"safe-mode": 1}}, "safe-mode '1'", "[sink]: use true or false"),
    (H + "?batch-dml-enable=on", None, "batch-dml-enable 'on'", f"{URI}: use true or false"),
    (H + "?multi-stmt-enable=2", None, "multi-stmt-enable '2'", f"{URI}: use true or false"),
    (H + "?cache-prep-stmts=", None, "cache-prep-stmts ''", f"{URI}: use true or false"),
    (H + "?has-vector-type=maybe", None, "has-vector-type 'maybe'", f"{URI}: use true or false"),
    (H, mc({"enable-batch-dml": "nope"}), "enable-batch-dml 'nope'", f"{MYSQL}: use true or false"),
    (H, mc({"enable-multi-statement": 1}), "enable-multi-statement '1'", f"{MYSQL}: use true or false"),
    (H, mc({"enable-cache-prepared-statement": "x"}), "enable-cache-prepared-statement", MYSQL),
    (H + "?write-timeout=abc", None, "write-timeout 'abc'", f"{URI}: not a Go duration"),
    (H + "?read-timeout=10", None, "read-timeout '10'", f"{URI}: not a Go duration"),
    (H + "?timeout=0s", None, "timeout '0s'", f"{URI}: must be greater than 0"),
    (H + "?write-timeout=-1s", None, "write-timeout '-1s'", f"{URI}: must be greater than 0"),
    (H, mc({"read-timeout": 5}), "read-timeout '5'", f"{MYSQL}: use a Go duration"),
    (H, mc({"timeout": "5 minutes"}), "timeout '5 minutes'", f"{MYSQL}: not a Go duration"),
    (H, mc({"time-zone": 8}), "time-zone '8'", f"{MYSQL}: must be a string"),
    (H, mc({"ssl-ca": ["/a"]}), "ssl-ca", f"{MYSQL}: must be a string"),
    (H, mc({"tidb-txn-mode": 1}), "tidb-txn-mode '1'", f"{MYSQL}: must be a string"),
    (H + "?bulk-load=maybe", None, "bulk-load 'maybe'", "sink URI"),
]


@pytest.mark.parametrize(("uri", "toml", "names", "where"), BAD)
def test_bad_values_are_one_line_naming_key_and_source(
    uri: str, toml: dict[str, Any] | None, names: str, where: str
) -> None:
    e = refused(uri, toml)
    assert e.code == ERR
    assert e.message.startswith(f"invalid {names}"), e.message
    assert where in e.message, e.message


# (uri, toml, code, text the message must contain)
REFUSED: list[tuple[str, dict[str, Any] | None, str, str]] = [
    (H + "?worker-count=8&bogus=1", None, ERR, "unknown MySQL sink URI parameter 'bogus'; allowed: batch-dml-enable"),
    (H + "?max-txn-row=1&max-txn-row=2", None, ERR, "'max-txn-row' is given more than once"),
    (H + "?worker-count=1&&x", None, ERR, "malformed query"),
    (H + "?=1", None, ERR, "empty name"),
    (H, mc({"bogus": 1}), REPLICA_ERR, "unknown key 'bogus' in [sink.mysql-config]; allowed: enable-batch-dml"),
    (H, mc({"batch-dml-enable": True}), REPLICA_ERR, "unknown key 'batch-dml-enable' in [sink.mysql-config]"),
    (H, mc({"safe-mode": True}), REPLICA_ERR, "unknown key 'safe-mode' in [sink.mysql-config]"),
    (H, {"sink": {"bogus": 1}}, REPLICA_ERR, "unknown key 'bogus' in [sink]"),
    (H, {"sink": {"mysql-config": 3}}, REPLICA_ERR, "'mysql-config' must be a table"),
    (f"mysql://root:{SECRET}@/", None, ERR, "no host"),
    (f"mysql://root:{SECRET}@:3306/?worker-count=1", None, ERR, "no host"),
    ("mysql:///", None, ERR, "no host"),
    (f"postgres://root:{SECRET}@h/", None, ERR, "unsupported scheme: postgres"),
    (f"mysqlx://root:{SECRET}@h/", None, ERR, "unsupported scheme: mysqlx"),
    (f"mysql://root:{SECRET}@h:99999/", None, ERR, "Port out of range"),
    (f"mysql://root:{SECRET}@h:abc/", None, ERR, "'mysql://root:xxxxx@h:abc/'"),
    (f"mysql://root:{SECRET}@[::1/", None, ERR, "Invalid IPv6 URL"),
    (H + "?ssl-cert=/c.pem", None, ERR, "ssl-cert and ssl-key need ssl-ca"),
    (H + "?ssl-key=/k.pem", None, ERR, "ssl-cert and ssl-key need ssl-ca"),
    (H + "?ssl-ca=&ssl-cert=/c&ssl-key=/k", None, ERR, "need ssl-ca"),
    (H, mc({"ssl-cert": "/c", "ssl-key": "/k"}), ERR, "need ssl-ca"),
    (H, {"enable-sync-point": "yes"}, REPLICA_ERR, "enable-sync-point"),
    (H, {"sync-point-interval": "often"}, REPLICA_ERR, "sync-point-interval"),
    (H, {"bogus-top": 1}, REPLICA_ERR, "bogus-top"),
    # a time zone the write sessions could not take, and TLS files that cannot be loaded (issue 26)
    (H + "?time-zone=Mars/Base", None, ERR, "invalid time-zone 'Mars/Base' in sink URI: unknown time zone"),
    (H + "?time-zone=%2B25:00", None, ERR, "invalid time-zone '+25:00' in sink URI: the offset is out of range"),
    (H + "?time-zone=%2B14:01", None, ERR, "the offset is out of range; use one from -13:59 to +14:00"),
    (H + "?time-zone=-14:00", None, ERR, "the offset is out of range"),
    (H + "?time-zone=%2B08:60", None, ERR, "the offset is out of range"),
    (H + "?time-zone=08:00", None, ERR, "unknown time zone"),
    (H, mc({"time-zone": "../etc/passwd"}), ERR, "invalid time-zone '../etc/passwd' in [sink.mysql-config]"),
    (H + "?ssl-ca=/nonexistent/ca.pem", None, ERR, "invalid ssl-ca '/nonexistent/ca.pem' in sink URI: no such file"),
    (H + "?ssl-ca=/tmp", None, ERR, "invalid ssl-ca '/tmp' in sink URI: it is a directory"),
    (H, mc({"ssl-ca": "/nonexistent"}), ERR, "invalid ssl-ca '/nonexistent' in [sink.mysql-config]: no such file"),
    (H, mc({"worker-count": "8"}), ERR, "invalid worker-count '8' in [sink.mysql-config]: must be an integer; write"),
    (H, mc({"enable-batch-dml": "true"}), ERR, "invalid enable-batch-dml 'true' in [sink.mysql-config]: use true or"),
]


@pytest.mark.parametrize("zone", ["+08:00", "-13:59", "+14:00", "-0:30", "UTC", "utc", "Z", "", "SYSTEM", "local",
                                  "Asia/Shanghai", "Etc/GMT-14"])  # fmt: skip
def test_time_zones_a_session_can_take(zone: str) -> None:
    assert cfg(H, mc({"time-zone": zone})).time_zone == zone


def test_tls_files_are_loaded_and_named_with_where_they_came_from(pem: PemFiles) -> None:
    ok = cfg(H + f"?ssl-ca={pem.ca}", mc({"ssl-cert": pem.cert, "ssl-key": pem.key}))
    assert ok.target._ssl() == {"ca": pem.ca, "cert": pem.cert, "key": pem.key}
    e = refused(H + f"?ssl-ca={pem.ca}&ssl-key={pem.not_pem}", mc({"ssl-cert": pem.cert}))
    assert e.message.startswith("invalid ssl-cert ") and "in [sink.mysql-config]: the certificate and key" in e.message
    e = refused(H + f"?ssl-ca={pem.not_pem}")
    assert e.message == f"invalid ssl-ca '{pem.not_pem}' in sink URI: the file holds no PEM certificate"


@pytest.mark.parametrize(("uri", "toml", "code", "text"), REFUSED)
def test_refused_uris_and_tables(uri: str, toml: dict[str, Any] | None, code: str, text: str) -> None:
    e = refused(uri, toml)
    assert e.code == code
    assert text in e.message, e.message


@pytest.mark.parametrize(
    "uri",
    [
        # an unencoded '/', '?' or '#' ends the authority inside the password: urllib would show part of it as the
        # port, host, path or query
        f"mysql://root:{SECRET}/x@h:3306/",
        f"mysql://root:{SECRET}?x@h:3306/?worker-count=1",
        f"mysql://root:{SECRET}#x@h:3306/",
        "mysql://root:1234/hunter2@h/",
        "mysql://root:1234?hunter2@h/",
        "mysql://root:1234#hunter2@h/",
    ],
)
def test_an_unencoded_delimiter_in_the_password_is_named_without_showing_it(uri: str) -> None:
    e = refused(uri)
    assert e.code == ERR and "percent-encode" in e.message
    assert "1234" not in e.message and "root:" not in e.message


@pytest.mark.usefixtures("tls_files_unchecked")
def test_an_at_sign_in_a_query_value_is_not_taken_for_a_password() -> None:
    assert cfg("mysql://h:3306/?ssl-ca=/home/me@corp/ca.pem").target.param("ssl-ca") == "/home/me@corp/ca.pem"


@pytest.mark.usefixtures("tls_files_unchecked")
@pytest.mark.parametrize("password", [SECRET, "p%40ss"])
def test_the_password_never_appears_in_str_or_repr(password: str) -> None:
    c = cfg(f"mysql+ssl://root:{password}@127.0.0.1:3307/?ssl-ca=/ca.pem&worker-count=8")
    assert c.target.password == password.replace("%40", "@")
    for text in (str(c), repr(c), str(c.target), repr(c.target)):
        for secret in (SECRET, "p@ss", "p%40ss"):
            assert secret not in text, text
    assert "127.0.0.1:3307" in repr(c) and "workers=8" in repr(c)


@pytest.mark.parametrize("password", [SECRET, "p%40ss"])
@pytest.mark.parametrize(
    "tail",
    ["?worker-count=abc", "?write-timeout=abc", "?bogus=1", "?safe-mode=2&safe-mode=3", "?ssl-key=/k", "?=1",
     "?worker-count=1&&x"],
)  # fmt: skip
def test_the_password_never_appears_in_errors(password: str, tail: str) -> None:
    refused(f"mysql://root:{password}@127.0.0.1:3307/{tail}")


def test_sync_point_and_bdr_mode_reach_the_config() -> None:
    toml = {"enable-sync-point": True, "sync-point-interval": "45s", "sync-point-retention": "2h", "bdr-mode": True}
    c = cfg(H, toml)
    assert (c.enable_sync_point, c.sync_point_interval_ns, c.sync_point_retention_ns, c.bdr_mode) == (
        True, 45 * 10**9, 7200 * 10**9, True)  # fmt: skip
    ReplicaConfig.from_toml(toml).validate()


def test_sync_point_bounds_are_the_replica_configs() -> None:
    """The sink reads the sync point settings; ReplicaConfig.validate (run on create and update) applies TiCDC's
    lower bounds, so a stored changefeed stays readable if a bound changes."""
    toml = {"enable-sync-point": True, "sync-point-interval": "10s"}
    assert cfg(H, toml).sync_point_interval_ns == 10 * 10**9
    with pytest.raises(ConfigError, match="SyncPointInterval:10s must be larger than 30s") as e:
        ReplicaConfig.from_toml(toml).validate()
    assert e.value.code == REPLICA_ERR


@pytest.mark.usefixtures("tls_files_unchecked")
def test_ssl_settings_of_the_downstream_connection() -> None:
    assert cfg("mysql://h/").target._ssl() is None
    assert cfg("tidb://h/").target._ssl() is None
    for scheme in ("mysql+ssl", "tidb+ssl"):
        assert cfg(f"{scheme}://h/").target._ssl() == {"check_hostname": False, "verify_mode": False}
    assert cfg("mysql://h/?ssl-ca=/ca.pem").target._ssl() == {"ca": "/ca.pem"}
    files = {"ca": "/ca.pem", "cert": "/cert.pem", "key": "/key.pem"}
    assert cfg("mysql+ssl://h/?ssl-ca=/ca.pem&ssl-cert=/cert.pem&ssl-key=/key.pem").target._ssl() == files
    toml = mc({"ssl-ca": "/ca.pem", "ssl-cert": "/cert.pem", "ssl-key": "/key.pem"})
    assert cfg("mysql://h/", toml).target._ssl() == files


@pytest.mark.usefixtures("tls_files_unchecked")
def test_config_pickles_and_is_hashable() -> None:
    """It travels to executors, and each worker process keys its apply engine by it."""
    c = cfg(H + "?worker-count=3&ssl-ca=/ca.pem", mc({"max-txn-row": 10}))
    back = pickle.loads(pickle.dumps(c))
    assert back == c and hash(back) == hash(c)
    assert hash(cfg(H)) == hash(cfg(H, {}))


def test_errors_pickle() -> None:
    e = refused(H + "?worker-count=abc")
    back = pickle.loads(pickle.dumps(e))
    assert (type(back), back.message, back.code) == (ConfigError, e.message, e.code)


def test_bulk_load_is_on_unless_the_uri_turns_it_off() -> None:
    assert cfg(H).target.bulk_load and cfg(H + "?bulk-load=true").target.bulk_load
    off = cfg(H + "?bulk-load=false").target
    assert not off.bulk_load and ("bulk-load", "false") in off.params
    assert not cfg(H + "?bulk-load=0").target.bulk_load  # the URI's booleans, as for every other key
