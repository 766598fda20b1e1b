"""End to end: private MariaDB -> puller -> relay log -> chunks -> decode, with TSOs and table versions."""

from __future__ import annotations

import itertools
from decimal import Decimal
from pathlib import Path

import pytest

from sparkcdc.capture import RelayLog, SchemaHistory
from sparkcdc.model import tso
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.events import DDLEvent, RowChange, RowOp
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.capture.conftest import decode_all, for_schema, make_puller

pytestmark = pytest.mark.integration


def test_dml_and_ddl_round_trip(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20), d DECIMAL(10,2))")
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    db.execute(
        "INSERT INTO a VALUES (1, 'x', -1.50), (2, NULL, NULL)",
        "UPDATE a SET v = 'héllo' WHERE id = 1",
        "ALTER TABLE a ADD COLUMN e INT NOT NULL DEFAULT 5",
        "INSERT INTO a VALUES (3, 'z', 3.00, 7)",
        "DELETE FROM a WHERE id = 2",
    )
    progress = puller.catch_up(30)
    puller.close()

    events = for_schema(decode_all(tmp_path, start), db.name)
    kinds = [(type(e).__name__, e.op if isinstance(e, RowChange) else e.action) for e in events]
    assert kinds == [
        ("RowChange", RowOp.INSERT),
        ("RowChange", RowOp.INSERT),
        ("RowChange", RowOp.UPDATE),
        ("DDLEvent", DDLAction.ADD_COLUMN),
        ("RowChange", RowOp.INSERT),
        ("RowChange", RowOp.DELETE),
    ]
    rows = [e for e in events if isinstance(e, RowChange)]
    ddl = next(e for e in events if isinstance(e, DDLEvent))
    assert rows[0].after == (1, "x", Decimal("-1.50"))
    assert rows[1].after == (2, None, None)
    assert rows[2].before == (1, "x", Decimal("-1.50")) and rows[2].after == (1, "héllo", Decimal("-1.50"))
    assert rows[3].after == (3, "z", Decimal("3.00"), 7)
    assert rows[4].before == (2, None, None, 5)
    # Versions: rows before the DDL carry the bootstrap version, rows after carry the DDL's commit-ts.
    assert rows[0].table.version == start
    assert ddl.table_info is not None and ddl.pre_table_info is not None
    assert ddl.table_info.version == ddl.commit_ts
    assert [c.name for c in ddl.table_info.columns] == ["id", "v", "d", "e"]
    assert [c.name for c in ddl.pre_table_info.columns] == ["id", "v", "d"]
    assert rows[3].table.version == ddl.commit_ts and rows[4].table.version == ddl.commit_ts
    # TSOs strictly increase and the resolved ts covers the last transaction.
    commit_ts = [e.commit_ts for e in events]
    distinct = sorted(set(commit_ts))
    assert commit_ts == sorted(commit_ts) and len(distinct) == 5
    assert progress.resolved_ts >= distinct[-1]
    assert tso.physical(distinct[0]) >= tso.physical(start)


def test_chunks_split_at_transactions_and_respect_resolved(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("CREATE TABLE c (id INT PRIMARY KEY, pad VARCHAR(200))")
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    for i in range(20):
        db.execute(f"INSERT INTO c VALUES ({i}, REPEAT('p', 150))")
    resolved = puller.catch_up(30).resolved_ts
    puller.close()
    relay = RelayLog(tmp_path)
    txns = relay.transactions(start, resolved)
    small = relay.chunks(start, resolved, target_bytes=600)
    assert len(txns) == 20 and len(small) > 1
    assert sum(c.txn_count for c in small) == 20
    assert [c.first_ts for c in small] == sorted(c.first_ts for c in small)
    assert all(a.last_ts < b.first_ts for a, b in itertools.pairwise(small))
    one = relay.chunks(start, resolved, target_bytes=1 << 30)
    assert len(one) == 1 and one[0].txn_count == 20
    assert relay.chunks(resolved, resolved + 10**9) == []
    assert relay.chunks(start, txns[4].commit_ts, 1 << 30)[0].last_ts == txns[4].commit_ts
    ids = [e.after[0] for e in decode_all(tmp_path, start, 600) if isinstance(e, RowChange) and e.after]
    assert ids == list(range(20))
    history = SchemaHistory.load(tmp_path)
    assert history.table_info_at(db.name, "c", resolved) is not None
    assert history.table_info_at(db.name, "c", 0) is None
