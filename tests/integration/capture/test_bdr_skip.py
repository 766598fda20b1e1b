"""bdr-mode on the capture side: transactions written by a session with the BDR server_id (a bdr-mode changefeed's
MySQL sink) are left out of the decoded stream, rows and DDL alike; everything else decodes as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.changefeed.bdr import BDR_SERVER_ID
from sparkcdc.model.events import DDLEvent, RowChange
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.capture.conftest import decode_all, for_schema, make_puller

pytestmark = pytest.mark.integration


def test_marked_transactions_are_skipped_only_when_asked(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    db.execute("INSERT INTO t VALUES (1, 'user')",
               f"SET SESSION server_id = {BDR_SERVER_ID}",
               "BEGIN", "INSERT INTO t VALUES (2, 'replica')", "UPDATE t SET v = 'replica' WHERE id = 1", "COMMIT",
               "ALTER TABLE t ADD COLUMN w INT",
               "SET SESSION server_id = @@GLOBAL.server_id",
               "INSERT INTO t VALUES (3, 'user', 3)")  # fmt: skip
    puller.catch_up(30)
    puller.close()

    def summary(events: list[RowChange | DDLEvent]) -> list[object]:
        return [e.after if isinstance(e, RowChange) else e.query for e in for_schema(events, db.name)]

    everything = summary(decode_all(tmp_path, start))
    assert everything == [(1, "user"), (2, "replica"), (1, "replica"), "ALTER TABLE t ADD COLUMN w INT",
                          (3, "user", 3)]  # fmt: skip
    assert summary(decode_all(tmp_path, start, skip_server_id=BDR_SERVER_ID)) == [(1, "user"), (3, "user", 3)]
