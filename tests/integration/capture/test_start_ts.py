"""A changefeed's default start-ts must not be above transactions committed right after it is taken."""

from __future__ import annotations

import time
from pathlib import Path

from sparkcdc.capture.upstream import MySQLUpstream
from sparkcdc.model.events import RowChange
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.capture.conftest import decode_all, make_puller


def test_commit_right_after_current_tso_is_captured(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    puller = make_puller(db, tmp_path)
    puller.catch_up(30)
    kw = db.puller_kwargs()
    upstream = MySQLUpstream(f"mysql://{kw['user']}:{kw['password']}@{kw['host']}:{kw['port']}")
    # Take the start-ts late in a second, so a commit in the same second is likely: binlog times are whole
    # seconds and a millisecond "now" would lie above that commit's TSO.
    while time.time() % 1 < 0.5:
        time.sleep(0.01)
    start = upstream.current_tso()
    db.execute("INSERT INTO t VALUES (1)")
    puller.catch_up(30)
    puller.close()
    rows = [e for e in decode_all(tmp_path, start) if isinstance(e, RowChange) and e.table.schema == db.name]
    assert [r.after for r in rows] == [(1,)]
    assert rows[0].commit_ts > start
