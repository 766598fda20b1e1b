"""Column DROP/RENAME/MODIFY, RENAME TABLE and key-less tables, on both formats (the ``uri`` fixture): the table
follows the DDL, as-of reads before it still see the old schema and rows, and a replayed DDL or batch applies once."""

from __future__ import annotations

import re
from decimal import Decimal

import pyarrow as pa
import pytest

from sparkcdc.lake.as_of import read_as_of
from sparkcdc.lake.ddl import apply_ddl
from sparkcdc.lake.errors import LakeDDLError
from sparkcdc.lake.evolution import SchemaChange, plan
from sparkcdc.lake.keyless import COMMIT_TS_COLUMN, OP_COLUMN
from sparkcdc.model import DDLEvent, RowChange, RowOp, TableInfo
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo
from tests.unit.lake.support import apply, dele, ins, key_col, lake, rows_of, table, upd

T = table(key_col("id"), ColumnInfo("v", "varchar"), ColumnInfo("n", "int"))


def ddl(ts: int, query: str, pre: TableInfo, post: TableInfo, action: DDLAction = DDLAction.MODIFY_COLUMN) -> DDLEvent:
    return DDLEvent(ts, action, query, post.schema, post.table, post, pre)


def test_drop_column(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a", 5, t=T)])
    after = table(key_col("id"), ColumnInfo("n", "int"), version=20)
    event = ddl(20, "ALTER TABLE t DROP v", T, after, DDLAction.DROP_COLUMN)
    apply_ddl(t, event)
    apply(t, [ins(30, 2, 6, t=after)])
    apply_ddl(t, event)  # replayed after later rows: nothing changes
    assert rows_of(uri, 30) == [(1, 5), (2, 6)]
    assert rows_of(uri, 10) == [(1, "a", 5)]
    assert read_as_of(uri, "db.t", 30).column_names == ["id", "n"]


def test_rename_column_keeps_the_values(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a", 5, t=T)])
    after = table(key_col("id"), ColumnInfo("w", "varchar"), ColumnInfo("n", "int"), version=20)
    apply_ddl(t, ddl(20, "ALTER TABLE t RENAME COLUMN v TO w", T, after))
    apply(t, [ins(30, 2, "b", 6, t=after), upd(30, (1, "a", 5), (1, "a2", 5), t=after)])
    assert sorted(read_as_of(uri, "db.t", 30).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "w": "a2", "n": 5}, {"id": 2, "w": "b", "n": 6}]  # fmt: skip
    assert read_as_of(uri, "db.t", 10).to_pylist() == [{"id": 1, "v": "a", "n": 5}]


def test_modify_column_widening(uri: str) -> None:
    pre = table(key_col("id"), ColumnInfo("n", "int"), ColumnInfo("f", "float"),
                ColumnInfo("d", "decimal", length=5, decimal=2))  # fmt: skip
    post = table(key_col("id"), ColumnInfo("n", "bigint"), ColumnInfo("f", "double"),
                 ColumnInfo("d", "decimal", length=20, decimal=2), version=20)  # fmt: skip
    t = lake(uri)
    apply(t, [ins(10, 1, 2**31 - 1, 1.5, Decimal("999.99"), t=pre)])
    apply_ddl(t, ddl(20, "ALTER TABLE t MODIFY n BIGINT, MODIFY f DOUBLE, MODIFY d DECIMAL(20,2)", pre, post,
                     DDLAction.MULTI_SCHEMA_CHANGE))  # fmt: skip
    apply(t, [ins(30, 2, 2**40, 0.1, Decimal("123456789012345678.01"), t=post)])
    got = read_as_of(uri, "db.t", 30)
    assert [f.type for f in got.schema][1:] == [pa.int64(), pa.float64(), pa.decimal128(20, 2)]
    assert sorted(tuple(r.values()) for r in got.to_pylist()) == [
        (1, 2**31 - 1, 1.5, Decimal("999.99")), (2, 2**40, 0.1, Decimal("123456789012345678.01"))]  # fmt: skip
    assert read_as_of(uri, "db.t", 10).schema.field("n").type == pa.int32()


@pytest.mark.parametrize(("query", "post", "why"), [
    ("ALTER TABLE t MODIFY v BIGINT", table(key_col("id"), ColumnInfo("v", "bigint"), ColumnInfo("n", "int")),
     "column 'v' changes lake type from string to int64"),
    ("ALTER TABLE t MODIFY n TINYINT UNSIGNED, ...", table(key_col("id"), ColumnInfo("v", "varchar"),
                                                           ColumnInfo("n", "bigint", unsigned=True)),
     "column 'n' changes lake type from int32 to decimal128(20, 0)"),
    ("ALTER TABLE t DROP v, ADD w INT", table(key_col("id"), ColumnInfo("n", "int"), ColumnInfo("w", "int")),
     "cannot be told apart from renames"),
    ("ALTER TABLE t DROP PRIMARY KEY", table(ColumnInfo("id", "int"), ColumnInfo("v", "varchar"),
                                             ColumnInfo("n", "int")), "gains or loses its only key"),
    ("ALTER TABLE t RENAME TO u, ADD x INT", table(*T.columns, ColumnInfo("x", "int"), name="u"),
     "renaming a table and changing its columns"),
])  # fmt: skip
def test_a_ddl_the_formats_cannot_express_fails_naming_it(uri: str, query: str, post: TableInfo, why: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a", 5, t=T)])
    with pytest.raises(LakeDDLError, match=re.escape(f"DDL '{query}' on db.{post.table} at commit-ts 20: ")) as e:
        apply_ddl(t, ddl(20, query, T, post, DDLAction.MULTI_SCHEMA_CHANGE))
    assert why in str(e.value)
    assert "\n" not in str(e.value) and e.value.code == "CDC:ErrLakeDDLUnsupported"
    assert rows_of(uri, 20) == [(1, "a", 5)]


def test_plan_matches_columns_by_name() -> None:
    post = table(key_col("id"), ColumnInfo("V", "varchar"), ColumnInfo("N", "bigint"), ColumnInfo("x", "int"))
    assert plan(T, post, DDLAction.MULTI_SCHEMA_CHANGE) == SchemaChange(
        retyped=(("n", pa.int64()),), added=(ColumnInfo("x", "int"),))  # fmt: skip
    assert plan(T, table(key_col("id")), DDLAction.MULTI_SCHEMA_CHANGE) == SchemaChange(dropped=("v", "n"))
    renamed = table(key_col("id"), ColumnInfo("n", "int"), ColumnInfo("w", "varchar"))  # CHANGE v w ... AFTER n
    assert plan(T, renamed, DDLAction.MODIFY_COLUMN) == SchemaChange(renamed=(("v", "w"),))


def test_drop_then_add_of_one_name_replayed_keeps_the_new_column(uri: str) -> None:
    """DROP v and ADD v again, then a crash before the checkpoint: both DDLs replay; the drop must not remove the
    column added after it."""
    t = lake(uri)
    apply(t, [ins(10, 1, "a", 5, t=T)])
    dropped = table(key_col("id"), ColumnInfo("n", "int"), version=20)
    again = table(key_col("id"), ColumnInfo("n", "int"), ColumnInfo("v", "varchar", default="z"), version=25)
    events = [ddl(20, "ALTER TABLE t DROP v", T, dropped, DDLAction.DROP_COLUMN),
              ddl(25, "ALTER TABLE t ADD v VARCHAR(9) DEFAULT 'z'", dropped, again, DDLAction.ADD_COLUMN)]  # fmt: skip
    for event in [*events, *events]:
        apply_ddl(t, event)
    assert rows_of(uri, 25) == [(1, 5, "z")]


def test_a_restart_from_older_definitions_does_not_bring_a_renamed_column_back(uri: str) -> None:
    """The run's table definitions at start come from its checkpoint, which may be older than a rename the lake
    already followed (a crash between the DDL and the checkpoint)."""
    t = lake(uri)
    apply(t, [ins(10, 1, "a", 5, t=T)])
    after = table(key_col("id"), ColumnInfo("w", "varchar"), ColumnInfo("n", "int"), version=20)
    event = ddl(20, "ALTER TABLE t CHANGE v w VARCHAR(9)", T, after)
    apply_ddl(t, event)
    t.ensure(T, add_columns=False)  # the restarted sink's start
    apply_ddl(t, event)  # the replayed DDL
    apply(t, [ins(30, 2, "b", 6, t=after)])
    assert sorted(read_as_of(uri, "db.t", 30).column_names) == ["id", "n", "w"]
    assert rows_of(uri, 30) == [(1, "a", 5), (2, "b", 6)]


def test_rename_table_moves_the_rows_and_keeps_the_old_name_readable_before_it(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a", 5, t=T), ins(10, 2, "b", 6, t=T)])
    u = table(*T.columns, name="u", version=20)
    event = ddl(20, "RENAME TABLE t TO u", T, u, DDLAction.RENAME_TABLE)
    apply_ddl(t, event)
    apply_ddl(t, event)  # replayed
    apply(t, [dele(30, 1, "a", 5, t=u), ins(30, 3, "c", 7, t=u)])
    assert rows_of(uri, 30, "db.u") == [(2, "b", 6), (3, "c", 7)]
    assert rows_of(uri, 19, "db.u") == []  # u did not exist then
    assert rows_of(uri, 19) == [(1, "a", 5), (2, "b", 6)]
    assert rows_of(uri, 20) == []
    assert t.applied_ts("db", "u") == 30


def test_rename_table_onto_a_dropped_name_replaces_it(uri: str) -> None:
    """RENAME TABLE a TO t where an earlier t was dropped (its lake table emptied and kept, with other columns)."""
    t = lake(uri)
    apply(t, [ins(10, 1, "a", 5, t=T)])
    apply_ddl(t, DDLEvent(11, DDLAction.DROP_TABLE, "DROP TABLE t", "db", "t"))
    a = table(key_col("id"), ColumnInfo("s", "varchar"), name="a")
    apply(t, [ins(12, 9, "x", t=a)])
    apply_ddl(t, ddl(20, "RENAME TABLE a TO t", a, table(*a.columns, version=20), DDLAction.RENAME_TABLE))
    got = read_as_of(uri, "db.t", 20)
    assert sorted(got.column_names) == ["id", "s"] and got.to_pylist() == [{"id": 9, "s": "x"}]


K = table(ColumnInfo("a", "int"), ColumnInfo("b", "varchar"), name="k")  # no key


def test_a_keyless_table_is_appended_as_a_change_log_once(uri: str) -> None:
    t = lake(uri)
    t.ensure(K, add_columns=False)
    batch = [ins(10, 1, "x", t=K), ins(10, 1, "x", t=K), RowChange(11, K, RowOp.UPDATE, (1, "x"), (2, "y")),
             dele(12, 1, "x", t=K)]  # fmt: skip
    assert apply(t, batch) == 5
    assert apply(t, batch) == 0  # replayed: the table records commit-ts 12
    apply(t, [*batch, ins(13, 3, None, t=K)])  # a replay with more rows appends only those
    got = read_as_of(uri, "db.k", 13)
    assert got.column_names == ["a", "b", OP_COLUMN, COMMIT_TS_COLUMN]
    assert sorted(tuple(r.values()) for r in got.to_pylist()) == [
        (1, "x", "D", 11), (1, "x", "D", 12), (1, "x", "I", 10), (1, "x", "I", 10), (2, "y", "U", 11),
        (3, None, "I", 13)]  # fmt: skip
    assert len(read_as_of(uri, "db.k", 12)) == 5  # the first batch's one commit


def test_a_keyless_table_follows_column_ddl(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "x", t=K)])
    post = table(ColumnInfo("a", "bigint"), ColumnInfo("c", "varchar"), name="k", version=20)
    apply_ddl(t, ddl(20, "ALTER TABLE k MODIFY a BIGINT, RENAME COLUMN b TO c", K, post))
    apply(t, [ins(30, 2, "y", t=post)])
    assert sorted(tuple(r.values()) for r in read_as_of(uri, "db.k", 30).select(["a", "c", OP_COLUMN]).to_pylist()) \
        == [(1, "x", "I"), (2, "y", "I")]


CLASH = table(ColumnInfo("a", "int"), ColumnInfo("_TiDB_Op", "varchar"), name="k", version=20)  # no key


@pytest.mark.parametrize(("query", "pre"), [("CREATE TABLE k (a INT, _TiDB_Op VARCHAR(9))", None),
                                            ("ALTER TABLE k ADD _TiDB_Op VARCHAR(9)", K)])  # fmt: skip
def test_a_keyless_table_with_a_change_log_column_name_is_refused_at_its_ddl(uri: str, query: str,
                                                                            pre: TableInfo | None) -> None:  # fmt: skip
    """The change log adds ``_tidb_op`` and ``_tidb_commit_ts``: a key-less table with one of those names (any case)
    of its own fails the changefeed in one line naming the DDL, before the lake table changes."""
    t = lake(uri)
    if pre is not None:
        apply(t, [ins(10, 1, "x", t=K)])
    action = DDLAction.CREATE_TABLE if pre is None else DDLAction.ADD_COLUMN
    with pytest.raises(LakeDDLError) as e:
        apply_ddl(t, DDLEvent(20, action, query, "db", "k", CLASH, pre))
    assert str(e.value) == (
        f"DDL {query!r} on db.k at commit-ts 20: the table has no key, so its lake table is a change log that adds a "
        "column '_tidb_op', and the table has a column '_TiDB_Op' of its own; rename that column upstream; exclude "
        "the table from the changefeed ([filter] rules) or recreate its lake table from a new changefeed")
    assert e.value.code == "CDC:ErrLakeDDLUnsupported" and e.value.permanent
    assert t.applied_ts("db", "k") == (0 if pre is None else 10)
    if pre is not None:
        assert read_as_of(uri, "db.k", 30).column_names == ["a", "b", OP_COLUMN, COMMIT_TS_COLUMN]


def test_a_keyless_table_with_a_change_log_column_name_is_refused_before_its_rows(uri: str) -> None:
    """A table the changefeed met with no DDL (it existed at its start): refused when the lake table would be made,
    naming the table and the column; nothing is written. A table with a key keeps such a column as it is."""
    t = lake(uri)
    clash = table(ColumnInfo("a", "int"), ColumnInfo("_tidb_commit_ts", "bigint"), name="k")
    with pytest.raises(LakeDDLError, match=r"^db\.k: the table has no key, .* a column '_tidb_commit_ts' of its own; "
                       r"rename that column upstream, or exclude the table from the changefeed \(\[filter\] "
                       r"rules\)$") as e:  # fmt: skip
        apply(t, [ins(10, 1, 7, t=clash)])
    assert e.value.code == "CDC:ErrLakeDDLUnsupported"
    assert t.applied_ts("db", "k") == 0
    keyed = table(key_col("id"), ColumnInfo("_tidb_op", "varchar"))
    apply(t, [ins(10, 1, "I", t=keyed)])
    assert read_as_of(uri, "db.t", 10).to_pylist() == [{"id": 1, "_tidb_op": "I"}]


def test_a_moved_column_keeps_its_lake_place_and_rows_land_by_name(uri: str) -> None:
    t = lake(uri)
    apply(t, [ins(10, 1, "a", 5, t=T)])
    moved = table(key_col("id"), ColumnInfo("n", "int"), ColumnInfo("w", "varchar"), version=20)
    apply_ddl(t, ddl(20, "ALTER TABLE t CHANGE v w VARCHAR(9) AFTER n", T, moved))
    apply(t, [ins(30, 2, 6, "b", t=moved), upd(30, (1, 5, "a"), (1, 7, "a"), t=moved)])
    got = read_as_of(uri, "db.t", 30)
    assert got.column_names == ["id", "w", "n"]
    assert rows_of(uri, 30) == [(1, "a", 7), (2, "b", 6)]
