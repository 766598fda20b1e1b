"""Helpers of the tests that use a MySQL downstream: the ``MysqlTarget`` of a MariaDB and statements run on it. The
downstream itself is the ``downstream_server`` fixture (``tests/fixtures/mariadb.py``)."""

from __future__ import annotations

from typing import Any

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.mysql.target import MysqlTarget


def target_of(db: MariaDB) -> MysqlTarget:
    assert db.port is not None
    return MysqlTarget(host="127.0.0.1", port=db.port, user="root")


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
