"""DDL sequences give the right events and versions; a restart from a middle checkpoint is byte-identical."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparkcdc.capture import RelayLog, SchemaHistory, read_chunk
from sparkcdc.capture.relay_writer import rewind
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.events import DDLEvent, RowChange, RowOp
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.capture.conftest import Running, decode_all, for_schema, make_puller
from tests.support import wait_for

pytestmark = pytest.mark.integration


def _run_ddl_script(db: FreshDatabase) -> None:
    other = f"{db.name}_x"
    db.execute(
        "INSERT INTO p VALUES (1, 'a')",
        "ALTER TABLE p ADD COLUMN n INT NOT NULL DEFAULT 0",
        "INSERT INTO p VALUES (2, 'b', 5)",
        "ALTER TABLE p MODIFY COLUMN v VARCHAR(50) CHARACTER SET latin1",
        "ALTER TABLE p DROP COLUMN n",
        "INSERT INTO p VALUES (3, 'c')",
        "RENAME TABLE p TO q",
        "INSERT INTO q VALUES (4, 'd')",
        "TRUNCATE TABLE q",
        "INSERT INTO q VALUES (5, 'e')",
        "DROP TABLE q",
        "CREATE TABLE q (k BIGINT UNSIGNED NOT NULL, w TEXT, UNIQUE KEY uk (k))",
        "INSERT INTO q VALUES (18446744073709551615, 'w')",
        "CREATE TABLE nopk (a INT)",
        "INSERT INTO nopk VALUES (1)",
        f"CREATE DATABASE `{other}`",
        f"CREATE TABLE `{other}`.z (id INT PRIMARY KEY)",
        f"DROP DATABASE `{other}`",
    )


def test_ddl_sequence_events_and_versions(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20))")
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    _run_ddl_script(db)
    puller.catch_up(30)
    puller.close()
    events = decode_all(tmp_path, start)
    mine = [e for e in events if (e.table.schema if isinstance(e, RowChange) else e.schema) in (db.name,
                                                                                                 f"{db.name}_x")]
    summary = [(e.action.name, e.table) if isinstance(e, DDLEvent) else (e.op.name, e.table.table) for e in mine]
    assert summary == [
        ("INSERT", "p"),
        ("ADD_COLUMN", "p"),
        ("INSERT", "p"),
        ("MODIFY_COLUMN", "p"),
        ("DROP_COLUMN", "p"),
        ("INSERT", "p"),
        ("RENAME_TABLE", "q"),
        ("INSERT", "q"),
        ("TRUNCATE_TABLE", "q"),
        ("INSERT", "q"),
        ("DROP_TABLE", "q"),
        ("CREATE_TABLE", "q"),
        ("INSERT", "q"),
        ("CREATE_TABLE", "nopk"),  # its row is skipped: no PK / NOT NULL unique key
        ("CREATE_SCHEMA", ""),
        ("CREATE_TABLE", "z"),
        ("DROP_SCHEMA", ""),
    ]
    ddls = [e for e in mine if isinstance(e, DDLEvent)]
    rows = [e for e in mine if isinstance(e, RowChange)]
    # Each row carries the version (commit-ts) of the last DDL before it.
    last_version: dict[str, int] = {}
    for e in mine:
        if isinstance(e, DDLEvent) and e.table_info is not None:
            last_version[e.table] = e.commit_ts
            assert e.table_info.version == e.commit_ts
        elif isinstance(e, RowChange):
            assert e.table.version == last_version.get(e.table.table, start), e
    modify = ddls[1]
    assert modify.table_info is not None and modify.table_info.column("v").charset == "latin1"
    assert modify.table_info.column("v").length == 50
    drop_col = ddls[2]
    assert drop_col.table_info is not None and [c.name for c in drop_col.table_info.columns] == ["id", "v"]
    rename = ddls[3]
    assert rename.pre_table_info is not None and rename.pre_table_info.table == "p"
    truncate = ddls[4]
    assert truncate.pre_table_info is not None and truncate.table_info is not None
    assert truncate.table_info.table_id != truncate.pre_table_info.table_id
    recreated = ddls[6]
    assert recreated.table_info is not None and recreated.table_info.column("k").handle_key
    assert rows[-1].after == (18446744073709551615, "w") and rows[-1].op is RowOp.INSERT
    history = SchemaHistory.load(tmp_path)
    assert history.table_info_at(db.name, "p", ddls[3].commit_ts) is None  # renamed away
    assert history.table_info_at(db.name, "p", ddls[3].commit_ts - 1) is not None
    assert history.table_info_at(f"{db.name}_x", "z", ddls[-1].commit_ts) is None
    # forced replication decodes the table without a key
    forced = [e for e in for_schema(decode_all(tmp_path, start, force_replicate=True), db.name)
              if isinstance(e, RowChange) and e.table.table == "nopk"]
    assert [e.after for e in forced] == [(1,)]


def test_restart_from_middle_checkpoint_is_identical(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20))")
    first = tmp_path / "a"
    puller = make_puller(db, first)
    start = puller.catch_up(30).resolved_ts
    _run_ddl_script(db)
    for i in range(10, 40):
        db.execute(f"INSERT INTO q VALUES ({i}, 'r{i}')")
    puller.catch_up(30)
    puller.close()
    relay = RelayLog(first)
    txns = relay.transactions(start)
    middle = txns[len(txns) // 3]  # after some DDLs, before others
    second = tmp_path / "b"
    shutil.copytree(first, second)
    rewind(second, middle.commit_ts)
    assert len(RelayLog(second).transactions(start)) < len(txns)
    again = make_puller(db, second)
    again.catch_up(30)
    again.close()
    replay = RelayLog(second).transactions(start)
    assert [(t.commit_ts, t.binlog_file, t.binlog_pos, t.gtid) for t in replay] == [
        (t.commit_ts, t.binlog_file, t.binlog_pos, t.gtid) for t in txns
    ]
    chunks_a = relay.chunks(start, 1 << 62, 1 << 30)
    chunks_b = RelayLog(second).chunks(start, 1 << 62, 1 << 30)
    assert b"".join(read_chunk(c) for c in chunks_a) == b"".join(read_chunk(c) for c in chunks_b)
    assert decode_all(first, start) == decode_all(second, start)


def test_create_select_like_and_virtual_columns(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO a VALUES (1, 'x'), (2, 'y')")
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    db.execute(
        "CREATE TABLE b (PRIMARY KEY (id)) SELECT id, v FROM a",
        "CREATE TABLE c LIKE a",
        "ALTER TABLE c ADD COLUMN w INT AS (id * 2) VIRTUAL, ADD KEY kv (v)",
        "INSERT INTO c (id, v) VALUES (7, 's')",
        "ALTER TABLE c PARTITION BY HASH(id) PARTITIONS 2",
        "INSERT INTO c (id, v) VALUES (8, 't')",
    )
    puller.catch_up(30)
    puller.close()
    events = for_schema(decode_all(tmp_path, start), db.name)
    summary = [(e.action.name, e.table) if isinstance(e, DDLEvent) else (e.op.name, e.table.table, e.after)
               for e in events]
    assert summary == [
        ("CREATE_TABLE", "b"),
        ("INSERT", "b", (1, "x")),
        ("INSERT", "b", (2, "y")),
        ("CREATE_TABLE", "c"),
        ("MULTI_SCHEMA_CHANGE", "c"),
        ("INSERT", "c", (7, "s", 14)),
        ("ALTER_TABLE_PARTITIONING", "c"),
        ("INSERT", "c", (8, "t", 16)),
    ]
    create_select = events[0]
    assert isinstance(create_select, DDLEvent) and create_select.table_info is not None
    assert create_select.table_info.column("id").handle_key
    rows = [e for e in events if isinstance(e, RowChange)]
    assert rows[2].table.column("w").generated == "virtual"


def test_fresh_start_in_the_past_rebuilds_changed_tables(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    from sparkcdc.capture import BinlogPosition, StartPoint

    db = fresh_db
    db.execute("CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20))")
    file, pos = db.query("SHOW MASTER STATUS")[0][:2]
    db.execute("INSERT INTO p VALUES (1, 'a')", "ALTER TABLE p ADD COLUMN n INT", "INSERT INTO p VALUES (2, 'b', 5)")
    # Fresh data dir, start point in the past: the schema snapshot (taken now) already has column n.
    puller = make_puller(db, tmp_path, start=StartPoint.at(BinlogPosition(file, int(pos))))
    puller.catch_up(30)
    puller.close()
    events = for_schema(decode_all(tmp_path), db.name)
    rows = [e for e in events if isinstance(e, RowChange)]
    ddl = next(e for e in events if isinstance(e, DDLEvent))
    assert [r.after for r in rows] == [(1, "a"), (2, "b", 5)]
    assert [c.name for c in rows[0].table.columns] == ["id", "v"]
    assert ddl.action is DDLAction.ADD_COLUMN and ddl.pre_table_info is not None and ddl.table_info is not None
    assert [c.name for c in ddl.pre_table_info.columns] == ["id", "v"]
    assert [c.name for c in ddl.table_info.columns] == ["id", "v", "n"]
    assert rows[1].table.version == ddl.commit_ts


def test_restart_identity_survives_idle_heartbeats(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("CREATE TABLE h (id INT PRIMARY KEY)")
    first = tmp_path / "a"
    with Running(make_puller(db, first, heartbeat_s=0.1)):
        relay = RelayLog(first)
        wait_for(lambda: relay.progress() is not None, what="first flush")
        start = relay.resolved_ts()
        for i in range(4):
            idle_from = relay.resolved_ts()
            wait_for(lambda: relay.resolved_ts() > idle_from, what="an idle heartbeat")  # noqa: B023
            db.execute(f"INSERT INTO h VALUES ({i})")
            wait_for(lambda: len(relay.transactions(start)) == i + 1, what=f"insert {i}")  # noqa: B023
    txns = relay.transactions(start)
    second = tmp_path / "b"
    shutil.copytree(first, second)
    rewind(second, txns[0].commit_ts)
    again = make_puller(db, second)
    again.catch_up(30)  # no idle time now: the recorded reservations must be replayed
    again.close()
    replay = RelayLog(second).transactions(start)
    assert [(t.commit_ts, t.binlog_pos) for t in replay] == [(t.commit_ts, t.binlog_pos) for t in txns]
    assert decode_all(first, start) == decode_all(second, start)
