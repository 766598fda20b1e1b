"""Every ``mysql://`` URI (``cdc server --upstream``, the MySQL sink's ``--sink-uri``, the consumers'
``--downstream-uri``) has its authority and TLS parameters read by one parser (``sparkcdc.mysql.uri``): the same
server, port defaults and TLS rules from each, and the same refusal, never showing the password, of a URI whose
password holds an unencoded delimiter."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.mysql.uri import UriProblem, split_uri
from sparkcdc.sink.mysql.config import MysqlSinkConfig
from tests.fixtures.tls import PemFiles

PARSERS: dict[str, Callable[[str], MysqlTarget]] = {
    "upstream": lambda uri: MysqlTarget.parse(uri, upstream=True),
    "downstream": MysqlTarget.parse,
    "sink": lambda uri: MysqlSinkConfig.from_uri(uri).target,
}


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize(
    ("uri", "server"),
    [
        ("mysql://app%40corp:p%40ss%2Fw%3Fd@[::1]:3307", ("::1", 3307, "app@corp", "p@ss/w?d", False)),
        ("mysql+ssl://h", ("h", 3306, "root", "", True)),
        ("tidb://u:pw@h", ("h", 4000, "u", "pw", False)),
        ("TiDB+SSL://h:3306/", ("h", 3306, "root", "", True)),
    ],
)
def test_every_parser_reads_the_same_server(parser: str, uri: str, server: tuple[object, ...]) -> None:
    t = PARSERS[parser](uri)
    assert (t.host, t.port, t.user, t.password, t.tls) == server


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize(
    "uri",
    [
        # urllib would read the rest of the password as the port, a database or the query
        "mysql://root:1234/hunter2@h:3306/",
        "mysql://root:abc/hunter2@h/",
        "mysql://root:1234?hunter2@h/",
        # and here as host 'root' on port 12: the upstream and the consumers used to connect there
        "mysql://root:12#hunter2@h/",
    ],
)
def test_an_unencoded_delimiter_in_the_password_is_refused_without_showing_it(parser: str, uri: str) -> None:
    with pytest.raises(ConfigError) as e:
        PARSERS[parser](uri)
    assert "percent-encode any '/', '?' or '#'" in e.value.message
    for part in ("hunter2", "1234", "abc", "12#"):
        assert part not in e.value.message, e.value.message


@pytest.mark.parametrize("parser", PARSERS)
def test_a_client_certificate_needs_the_ca_everywhere(parser: str, pem: PemFiles) -> None:
    with pytest.raises(ConfigError, match="ssl-cert and ssl-key need ssl-ca; add ssl-ca") as e:
        PARSERS[parser](f"mysql://u:hunter2@h:1/?ssl-cert={pem.cert}&ssl-key={pem.key}")
    assert "hunter2" not in e.value.message
    t = PARSERS[parser](f"mysql://u:hunter2@h:1/?ssl-ca={pem.ca}&ssl-cert={pem.cert}&ssl-key={pem.key}")
    assert t._ssl() == {"ca": pem.ca, "cert": pem.cert, "key": pem.key}


@pytest.mark.parametrize(
    ("uri", "kind"),
    [("ftp://h/", "scheme"), ("mysql:///", "host"), ("mysql://h:99999/", "malformed"), ("mysql://[::1/", "malformed")],
)
def test_problems_are_told_apart_for_each_callers_words(uri: str, kind: str) -> None:
    with pytest.raises(UriProblem) as e:
        split_uri(uri)
    assert e.value.kind == kind


@pytest.mark.parametrize("query", ["time-zone=Mars/Base&time-zone=UTC", "bulk-load=maybe&bulk-load=true"])
def test_a_downstream_parameter_given_twice_is_refused(query: str) -> None:
    """The consumers' URI checked the last value and connected with the first; now it is refused, as the sink's."""
    for parser in ("downstream", "sink"):
        with pytest.raises(ConfigError, match="is given more than once; keep one") as e:
            PARSERS[parser](f"mysql://u:hunter2@h/?{query}")
        assert e.value.code == "CDC:ErrMySQLInvalidConfig" and "hunter2" not in e.value.message
