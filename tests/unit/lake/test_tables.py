"""One behaviour suite every lake format passes (delta-rs and pyiceberg on a temporary directory; the ``uri``
fixture): MERGE, replay, ADD COLUMN, TRUNCATE/DROP and time travel (column and table renames, drops and type
changes: ``test_ddl``)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.lake.as_of import read_as_of
from sparkcdc.lake.changes import net_change
from sparkcdc.lake.ddl import apply_ddl
from sparkcdc.lake.errors import LakeDDLError
from sparkcdc.lake.location import LakeLocation
from sparkcdc.model import DDLEvent, RowChange
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo
from tests.unit.lake.support import apply, dele, ins, key_col, lake, rows_of, table, upd

T = table(key_col("id"), ColumnInfo("v", "varchar"))
T2 = table(key_col("id"), ColumnInfo("v", "varchar"), ColumnInfo("n", "bigint", unsigned=True), version=2)


def test_merge_upserts_and_deletes(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a"), ins(10, 2, "b"), ins(10, 3, "c")])
    apply(t, [upd(20, (1, "a"), (1, "a2")), upd(20, (2, "b"), (5, "b")), dele(20, 3, "c"), ins(20, 4, "d")])
    assert t.applied_ts("db", "t") == 20
    assert rows_of(uri, 20) == [(1, "a2"), (4, "d"), (5, "b")]
    assert rows_of(uri, 19) == [(1, "a"), (2, "b"), (3, "c")]
    assert rows_of(uri, 9) == []


def test_a_column_named_like_the_merges_working_column_replicates(uri: str) -> None:
    """Delta's MERGE source carries its own op column; no MySQL column can be named like it (its name is longer than
    MySQL's 64 characters), so a table with a column named as it once was (``_sparkcdc_op``) merges as any other."""
    from sparkcdc.lake.delta import OP_COLUMN

    assert len(OP_COLUMN) > 64
    k = table(key_col("id"), ColumnInfo("_sparkcdc_op", "varchar"), ColumnInfo("_SparkCDC_Op_", "varchar"))
    t = lake(uri)
    apply(t, [ins(10, 1, "a", "x", t=k), ins(10, 2, "b", "y", t=k), ins(10, 3, "d", "z", t=k)])
    apply(t, [upd(20, (1, "a", "x"), (1, "u", "x2"), t=k), dele(20, 3, "d", "z", t=k), ins(20, 4, "u", "w", t=k)])
    assert rows_of(uri, 20) == [(1, "u", "x2"), (2, "b", "y"), (4, "u", "w")]
    assert read_as_of(uri, "db.t", 20).column_names == ["id", "_sparkcdc_op", "_SparkCDC_Op_"]


def test_a_replayed_batch_applies_nothing(uri: str) -> None:
    t = lake(uri)
    batch = [ins(10, 1, "a"), upd(11, (1, "a"), (1, "b"))]
    apply(t, batch)
    assert apply(t, batch) == 0  # the replay finds commit-ts 11 already in the table
    apply(t, [*batch, ins(12, 2, "c")])  # a replay with more rows applies only the new ones
    assert rows_of(uri, 12) == [(1, "b"), (2, "c")]


def test_add_column_evolves_and_old_versions_keep_their_rows(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a")])
    apply_ddl(t, DDLEvent(15, DDLAction.ADD_COLUMN, "ALTER TABLE t ADD n BIGINT UNSIGNED", "db", "t", T2, T))
    apply(t, [RowChange(20, T2, ins(0, 0).op, None, (2, "b", 2**64 - 1))])
    now = read_as_of(uri, "db.t", 20).to_pylist()
    assert sorted(now, key=lambda r: r["id"]) == [{"id": 1, "v": "a", "n": None},
                                                  {"id": 2, "v": "b", "n": 2**64 - 1}]  # fmt: skip
    assert rows_of(uri, 10) == [(1, "a")]


def test_rows_of_an_older_definition_replay_into_a_table_that_already_added_a_column(uri: str) -> None:
    """A kill between ADD COLUMN's schema change and its backfill: the restarted run replays rows (and starts from
    table definitions) older than the lake table's schema."""
    t = lake(uri)
    apply(t, [ins(10, 1, "a")])
    t.ensure(T2)  # the killed run's DDL, committed without moving the table's commit-ts
    t.ensure(T)  # the restarted run's definitions: no error, nothing dropped
    apply(t, [ins(12, 2, "b")])
    assert sorted(read_as_of(uri, "db.t", 12).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a", "n": None}, {"id": 2, "v": "b", "n": None}]  # fmt: skip


def test_add_column_with_a_default_fills_the_existing_rows(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a"), ins(10, 2, "b")])
    cols = (ColumnInfo("k", "int", nullable=False, default="7"), ColumnInfo("s", "varchar", default="it's"),
            ColumnInfo("d", "decimal", length=5, decimal=2, nullable=False),
            ColumnInfo("e", "enum", elements=("x", "y"), nullable=False))  # fmt: skip
    after = table(*T.columns, *cols, version=2)
    ddl = DDLEvent(15, DDLAction.ADD_COLUMNS, "ALTER TABLE t ADD k INT ...", "db", "t", after, T)
    apply_ddl(t, ddl)
    apply_ddl(t, ddl)  # replayed
    assert rows_of(uri, 15) == [(1, "a", 7, "it's", Decimal("0.00"), "x"), (2, "b", 7, "it's", Decimal("0.00"), "x")]
    assert rows_of(uri, 14) == [(1, "a"), (2, "b")]


def test_add_column_with_a_computed_default_is_refused(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a")])
    after = table(*T.columns, ColumnInfo("at", "datetime", nullable=False, default="CURRENT_TIMESTAMP"), version=2)
    query = "ALTER TABLE t ADD at DATETIME NOT NULL DEFAULT NOW()"
    with pytest.raises(LakeDDLError, match=re.escape(f"DDL '{query}' on db.t at commit-ts 15: the value existing")):
        apply_ddl(t, DDLEvent(15, DDLAction.ADD_COLUMN, query, "db", "t", after, T))


def test_truncate_and_drop_empty_the_table(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a")])
    apply_ddl(t, DDLEvent(20, DDLAction.TRUNCATE_TABLE, "TRUNCATE t", "db", "t", T, T))
    apply_ddl(t, DDLEvent(20, DDLAction.TRUNCATE_TABLE, "TRUNCATE t", "db", "t", T, T))  # replayed: once
    assert rows_of(uri, 20) == []
    apply(t, [ins(30, 2, "b")])
    apply_ddl(t, DDLEvent(40, DDLAction.DROP_TABLE, "DROP TABLE t", "db", "t"))
    assert rows_of(uri, 40) == []
    assert rows_of(uri, 30) == [(2, "b")]
    assert rows_of(uri, 10) == [(1, "a")]


def test_a_ddl_that_keeps_the_lake_schema_changes_nothing(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a")])
    wider = table(key_col("id"), ColumnInfo("v", "varchar", length=99), version=2)
    apply_ddl(t, DDLEvent(20, DDLAction.MODIFY_COLUMN, "ALTER TABLE t MODIFY v VARCHAR(99)", "db", "t", wider, T))
    assert rows_of(uri, 20) == [(1, "a")]


def test_composite_keys(uri: str) -> None:
    t2 = table(key_col("a"), key_col("b", "varchar"), ColumnInfo("v", "int"))
    t = lake(uri)
    rows = [ins(10, 1, "x", 1, t=t2), ins(10, 1, "y", 2, t=t2), ins(10, 2, "x", 3, t=t2)]
    t.merge(t2, net_change(rows, t2.handle_key_positions), 0)
    more = [dele(20, 1, "y", 2, t=t2), upd(20, (2, "x", 3), (2, "x", 4), t=t2)]
    t.merge(t2, net_change(more, t2.handle_key_positions), 10)
    assert rows_of(uri, 20) == [(1, "x", 1), (2, "x", 4)]


def test_read_as_of_errors(uri: str) -> None:
    with pytest.raises(ConfigError, match=r"schema\.table"):
        read_as_of(uri, "t", 1)
    with pytest.raises(ConfigError, match=r"db\.nope"):
        read_as_of(uri, "db.nope", 1)


def test_iceberg_writers_racing_to_create_a_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loser of the SQL catalog's check-then-insert gets a unique-key error; the namespace exists, so its
    table is created all the same."""
    from sqlalchemy.exc import IntegrityError

    from sparkcdc.lake.iceberg import IcebergTables

    where = LakeLocation("iceberg", str(tmp_path))
    winner, loser = IcebergTables(where, "cf"), IcebergTables(where, "cf")
    winner.catalog.create_namespace("db")

    def lost(name: str) -> None:
        raise IntegrityError("INSERT INTO iceberg_namespace_properties", {}, Exception("UNIQUE constraint failed"))

    monkeypatch.setattr(loser.catalog, "create_namespace_if_not_exists", lost)
    loser.ensure(T)
    assert loser.applied_ts("db", "t") == 0 and ("db", "t") in loser.catalog.list_tables("db")


def test_insert_only_batches_append_and_a_key_already_there_still_merges(uri: str) -> None:
    """A batch whose keys are all new is appended (Delta: no MERGE); a re-sent insert of a key the table holds
    (an at-least-once producer) is found by the key check and merged, never duplicated."""
    t = lake(uri)
    apply(t, [ins(10, 1, "a"), ins(10, 2, "b")])
    apply(t, [ins(20, 3, "c"), ins(20, 4, "d"), dele(20, 4, "d")])
    apply(t, [ins(30, 1, "again")])  # key 1 is in the table: not appended a second time
    assert rows_of(uri, 30) == [(1, "again"), (2, "b"), (3, "c")]
    assert rows_of(uri, 20) == [(1, "a"), (2, "b"), (3, "c")]
    if uri.startswith("delta"):
        from deltalake import DeltaTable

        operations = [h["operation"] for h in DeltaTable(uri.removeprefix("delta://") + "/db/t").history()]
        assert operations[:3] == ["MERGE", "WRITE", "WRITE"]  # newest first: the re-sent key merged
