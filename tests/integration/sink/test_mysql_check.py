"""The MySQL sink's check at changefeed create/update: it logs in to the downstream once, and a refused login or an
unreachable server is one ConfigError line saying what to fix, the password never shown."""

from __future__ import annotations

import pytest

from sparkcdc.devtools.ports import free_port
from sparkcdc.errors import ConfigError
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.sink.base import check_sink
from sparkcdc.sink.mysql.config import MysqlSinkConfig
from tests.integration.consumer.servers import run_sql

pytestmark = pytest.mark.integration


def test_a_reachable_downstream_passes(target: MysqlTarget) -> None:
    assert isinstance(check_sink(f"mysql://root@127.0.0.1:{target.port}/?worker-count=2"), MysqlSinkConfig)


def test_a_wrong_password_is_one_line_naming_the_fix(target: MysqlTarget) -> None:
    run_sql(target, "CREATE USER IF NOT EXISTS 'sinkuser'@'%' IDENTIFIED BY 'right-pw'")
    with pytest.raises(ConfigError) as e:
        check_sink(f"mysql://sinkuser:wr0ng-pw@127.0.0.1:{target.port}/")
    assert e.value.code == "CDC:ErrMySQLConnectionError" and "\n" not in e.value.message
    assert "Access denied" in e.value.message
    assert "check the sink URI's host, port, user and password" in e.value.message
    assert "wr0ng-pw" not in e.value.message


def test_nothing_listening_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"cannot connect to downstream .*Connection refused.*check the sink URI"):
        check_sink(f"mysql://root:s3cret@127.0.0.1:{free_port()}/")
