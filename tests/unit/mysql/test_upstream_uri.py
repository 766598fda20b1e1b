"""``cdc server --upstream``: the one ``mysql://`` parser (``MysqlTarget.parse(uri, upstream=True)``) gives every
upstream connection its address, login and TLS settings; a bad URI is one ``CDC:ErrInvalidServerOption`` line that
names the problem and never the password."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.capture.binlog_stream import PullerConfig, connect
from sparkcdc.errors import ConfigError, UpstreamError
from sparkcdc.mysql.target import MysqlTarget
from tests.fixtures.tls import PemFiles


def args(uri: str) -> dict[str, object]:
    return MysqlTarget.parse(uri, upstream=True).client_args()


def test_plain_uris_keep_working() -> None:
    assert args("mysql://cdc:p%40ss@127.0.0.1:3307") == {
        "host": "127.0.0.1", "port": 3307, "user": "cdc", "password": "p@ss", "ssl": None}  # fmt: skip
    assert args("mariadb://h/") == {"host": "h", "port": 3306, "user": "root", "password": "", "ssl": None}
    assert args("tidb://u@h:4000")["port"] == 4000


def test_tls_settings(pem: PemFiles) -> None:
    assert args(f"mysql://u:p@h:1?ssl-ca={pem.ca}")["ssl"] == {"ca": pem.ca}
    full = f"mysql://u:p@h:1/?ssl-ca={pem.ca}&ssl-cert={pem.cert}&ssl-key={pem.key}"
    assert args(full)["ssl"] == {"ca": pem.ca, "cert": pem.cert, "key": pem.key}
    assert args("mysql+ssl://u:p@h:1")["ssl"] == {"check_hostname": False, "verify_mode": False}  # unverified
    assert args(f"mysql+ssl://u:p@h:1?ssl-ca={pem.ca}")["ssl"] == {"ca": pem.ca}


BAD = [
    ("ftp://u:SECRET@h:1", "unsupported scheme 'ftp'; use mysql://user:password@host:port"),
    ("mysql://u:SECRET@:1", "no host"),
    ("mysql://u:SECRET@h:99999", "out of range"),
    ("mysql://u:SECRET@h:1/app", "it names database 'app', but capture reads every database's binlog; drop the path"),
    ("mysql://u:SECRET@h:1?tls=true", "unknown parameter 'tls'; use one of: ssl-ca, ssl-cert, ssl-key"),
    ("mysql://u:SECRET@h:1?safe-mode=true", "unknown parameter 'safe-mode'"),  # a sink's, not the upstream's
    ("mysql://u:SECRET@h:1?ssl-ca=", "parameter 'ssl-ca' has no value"),
    ("mysql://u:SECRET@h:1?ssl-ca={ca}&ssl-ca={ca}", "parameter 'ssl-ca' is given twice"),
    ("mysql://u:SECRET@h:1?ssl-cert={cert}&ssl-key={key}", "ssl-cert and ssl-key need ssl-ca; add ssl-ca"),
    ("mysql://u:SECRET@h:1?ssl-ca=/nonexistent/ca.pem", "ssl-ca '/nonexistent/ca.pem': no such file"),
    ("mysql://u:SECRET@h:1?ssl-ca={dir}", "it is a directory"),
    ("mysql://u:SECRET@h:1?ssl-ca={not_pem}", "ssl-ca '{not_pem}': the file holds no PEM certificate"),
    ("mysql://u:SECRET@h:1?ssl-ca={ca}&ssl-cert={cert}&ssl-key={ca}", "ssl-cert '{cert}': the certificate and key"),
]


@pytest.mark.parametrize(("uri", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_upstream_uri_is_one_line(uri: str, message: str, pem: PemFiles) -> None:
    files = {"ca": pem.ca, "cert": pem.cert, "key": pem.key, "not_pem": pem.not_pem, "dir": str(Path(pem.ca).parent)}
    with pytest.raises(ConfigError) as e:
        MysqlTarget.parse(uri.format(**files), upstream=True)
    assert e.value.code == "CDC:ErrInvalidServerOption" and not e.value.retryable
    assert e.value.message.startswith("invalid upstream URI 'ftp://u:xxxxx@h:1'" if uri.startswith("ftp")
                                      else "invalid upstream URI 'mysql://u:xxxxx@")  # fmt: skip
    assert message.format(**files) in e.value.message
    assert "SECRET" not in e.value.message and "\n" not in e.value.message


def test_downstream_uris_still_take_the_sinks_parameters() -> None:
    t = MysqlTarget.parse("mysql://u:p@h:1/db?safe-mode=true&ssl-ca=")
    assert (t.database, t.param("safe-mode")) == ("db", "true")


def test_tls_files_gone_since_the_check_are_a_final_error(tmp_path: Path) -> None:
    config = PullerConfig(host="127.0.0.1", port=1, user="u", password="SECRET", data_dir=str(tmp_path),
                          ssl={"ca": str(tmp_path / "gone.pem")})  # fmt: skip
    with pytest.raises(UpstreamError, match="its TLS files cannot be used") as e:
        connect(config)  # pymysql loads the CA before it dials: nothing listens on port 1
    assert e.value.code == "CDC:ErrInvalidServerOption" and e.value.permanent and "SECRET" not in e.value.message
