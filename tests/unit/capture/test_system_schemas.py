"""The capture tracks and replays no table of a system schema (``filter.system_schemas``), also from a relay log
written before a schema joined the list (its stored versions and DDL events are never read back)."""

from __future__ import annotations

import sqlite3

from sparkcdc.capture.schema_history import SchemaHistory, SchemaTracker
from sparkcdc.model.ddl_action import DDLAction


def _tracker() -> tuple[sqlite3.Connection, SchemaTracker]:
    conn = sqlite3.connect(":memory:")
    return conn, SchemaTracker(conn)


def _flush(conn: sqlite3.Connection, tracker: SchemaTracker) -> None:
    for sql, args in tracker.take_pending():
        conn.execute(sql, args)


def test_ddl_of_our_bookkeeping_schemas_is_not_tracked() -> None:
    conn, tracker = _tracker()
    for schema in ("tidb_cdc", "sparkcdc_consumer", "TIDB_CDC"):
        assert tracker.apply_ddl(f"CREATE DATABASE IF NOT EXISTS {schema}", "db", 10) == []
        assert tracker.apply_ddl(f"CREATE TABLE {schema}.checkpoint (id INT PRIMARY KEY)", "db", 11) == []
        assert not tracker.needs_table_map(schema, "checkpoint")  # its rows are never decoded either
    assert tracker.apply_ddl("CREATE TABLE app.t (id INT PRIMARY KEY)", "db", 12)[0].action is DDLAction.CREATE_TABLE
    _flush(conn, tracker)
    history = SchemaHistory.from_connection(conn)
    assert [(t.schema, t.table) for t in history.tables_at(12)] == [("app", "t")]


def test_history_stored_before_the_fix_is_not_read_back() -> None:
    """A relay log's index from before tidb_cdc joined the list: its tables and DDLs stay out of every reader
    (the snapshot's table list, the decoder, the DDL stream) and out of a restarted tracker."""
    conn, tracker = _tracker()
    assert tracker.apply_ddl("CREATE TABLE app.t (id INT PRIMARY KEY)", "db", 10)
    _flush(conn, tracker)
    app_version = conn.execute("SELECT info FROM schema_version WHERE schema_name = 'app'").fetchone()[0]
    app_ddl = conn.execute("SELECT * FROM ddl_event").fetchone()
    conn.execute("INSERT INTO schema_version VALUES ('tidb_cdc', 'checkpoint', 11, ?)",
                 (app_version.replace('"schema":"app"', '"schema":"tidb_cdc"'),))  # fmt: skip
    conn.execute("INSERT INTO ddl_event VALUES (11, 0, ?, 'CREATE TABLE tidb_cdc.checkpoint (id INT)', 'tidb_cdc', "
                 "'checkpoint', NULL, ?)", (app_ddl[2], app_ddl[7]))  # fmt: skip

    history = SchemaHistory.from_connection(conn)
    assert [t.schema for t in history.tables_at(11)] == ["app"]
    assert history.table_info_at("tidb_cdc", "checkpoint", 11) is None
    assert history.ddl_events_at(11) == []
    assert [e.schema for e in history.ddl_events_at(10)] == ["app"]
    assert ("tidb_cdc", "checkpoint") not in SchemaTracker(conn).state.tables
