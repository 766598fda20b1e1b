"""Two private MariaDB servers (a source and a downstream) for the consumer's integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sparkcdc.consumer.downstream import MysqlTarget
from sparkcdc.devtools.mariadb import MariaDB


@pytest.fixture(scope="session")
def consumer_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MariaDB, MariaDB]]:
    base = tmp_path_factory.mktemp("consumer-mariadb")
    up = MariaDB(base / "upstream", server_id=11)
    down = MariaDB(base / "downstream", server_id=12)
    try:
        up.start()
        down.start()
        yield up, down
    finally:
        down.stop()
        up.stop()


def target_of(db: MariaDB) -> MysqlTarget:
    assert db.port is not None
    return MysqlTarget(host="127.0.0.1", port=db.port, user="root")


@pytest.fixture()
def source(consumer_servers: tuple[MariaDB, MariaDB]) -> MysqlTarget:
    return target_of(consumer_servers[0])


@pytest.fixture()
def target(consumer_servers: tuple[MariaDB, MariaDB]) -> MysqlTarget:
    return target_of(consumer_servers[1])


def run_sql(t: MysqlTarget, *statements: str) -> list[Any]:
    """Run statements (autocommit) and return the rows of the last one."""
    conn = t.connect(database="", autocommit=True)
    try:
        rows: list[Any] = []
        with conn.cursor() as cur:
            for s in statements:
                cur.execute(s)
                rows = list(cur.fetchall())
        return rows
    finally:
        conn.close()
