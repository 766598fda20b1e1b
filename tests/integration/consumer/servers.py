"""Server fixtures of the consumer tests: the shared session MariaDB is the source/upstream, and one more
private MariaDB (same manager, ``sparkcdc.devtools.mariadb``) is the downstream."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.mysql.target import MysqlTarget


@pytest.fixture(scope="session")
def downstream_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    db = MariaDB(tmp_path_factory.mktemp("consumer-downstream"), server_id=12)
    try:
        db.start()
        yield db
    finally:
        db.stop()


def target_of(db: MariaDB) -> MysqlTarget:
    assert db.port is not None
    return MysqlTarget(host="127.0.0.1", port=db.port, user="root")


@pytest.fixture()
def source(mariadb: MariaDB) -> MysqlTarget:
    return target_of(mariadb)


@pytest.fixture()
def target(downstream_server: MariaDB) -> MysqlTarget:
    return target_of(downstream_server)


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
