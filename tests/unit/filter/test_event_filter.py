"""[[filter.event-filters]]: ignore-event / ignore-sql per matched table (expressions: test_expr_filter.py)."""

from __future__ import annotations

import pickle

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.filter.event_filter import EventFilter, EventFilterRule
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.events import RowChange, RowOp
from sparkcdc.model.table import ColumnInfo, TableInfo


def rule(**kw: object) -> EventFilterRule:
    return EventFilterRule.from_toml({k.replace("_", "-"): v for k, v in kw.items()})


def skips(flt: EventFilter, schema: str, table: str, op: str) -> bool:
    """The filter's verdict on one ``op`` row change of ``schema.table`` (one INT column)."""
    info = TableInfo(schema, table, 1, (ColumnInfo("id", "int"),))
    kind = RowOp[op.upper()]
    before = (1,) if kind is not RowOp.INSERT else None
    after = (1,) if kind is not RowOp.DELETE else None
    return flt.should_skip_dml(RowChange(1, info, kind, before, after))


def test_ignore_dml_types() -> None:
    flt = EventFilter([rule(matcher=["db.*"], ignore_event=["delete"])])
    assert skips(flt, "db", "t", "delete")
    assert not skips(flt, "db", "t", "insert")
    assert not skips(flt, "other", "t", "delete")


def test_all_dml_and_all_ddl() -> None:
    flt = EventFilter([rule(matcher=["db.t"], ignore_event=["all dml"])])
    assert all(skips(flt, "db", "t", op) for op in ("insert", "update", "delete"))
    assert not flt.should_skip_ddl("db", "t", DDLAction.ADD_COLUMN, "ALTER TABLE t ADD c INT")
    flt = EventFilter([rule(matcher=["db.t"], ignore_event=["all ddl"])])
    assert flt.should_skip_ddl("db", "t", DDLAction.ADD_COLUMN, "ALTER TABLE t ADD c INT")
    assert not skips(flt, "db", "t", "insert")


def test_ddl_types_and_alter_table() -> None:
    flt = EventFilter([rule(matcher=["db.*"], ignore_event=["drop table", "alter table"])])
    assert flt.should_skip_ddl("db", "t", DDLAction.DROP_TABLE, "DROP TABLE t")
    assert flt.should_skip_ddl("db", "t", DDLAction.ADD_COLUMN, "ALTER TABLE t ADD c INT")
    assert not flt.should_skip_ddl("db", "t", DDLAction.CREATE_TABLE, "CREATE TABLE t (a INT)")
    assert not flt.should_skip_ddl("db", "t", DDLAction.LOCK_TABLE, "LOCK TABLES t")  # not in the white list


def test_schema_aliases_and_schema_level_ddl() -> None:
    flt = EventFilter([rule(matcher=["db.*"], ignore_event=["create schema"])])
    assert flt.should_skip_ddl("db", None, DDLAction.CREATE_SCHEMA, "CREATE DATABASE db")
    assert not flt.should_skip_ddl("db2", None, DDLAction.CREATE_SCHEMA, "CREATE DATABASE db2")


def test_ignore_sql() -> None:
    flt = EventFilter([rule(matcher=["*.*"], ignore_sql=["^drop", "add column"])])
    assert flt.should_skip_ddl("db", "t", DDLAction.DROP_TABLE, "DROP TABLE t")
    assert flt.should_skip_ddl("db", "t", DDLAction.ADD_COLUMN, "alter table t ADD COLUMN c int")
    assert not flt.should_skip_ddl("db", "t", DDLAction.CREATE_TABLE, "CREATE TABLE t (a INT)")
    assert not skips(flt, "db", "t", "insert")  # DML has no SQL text


def test_matchers_are_case_sensitive() -> None:
    flt = EventFilter([rule(matcher=["DB.*"], ignore_event=["insert"])])
    assert skips(flt, "DB", "t", "insert")
    assert not skips(flt, "db", "t", "insert")


def test_empty_filter_skips_nothing() -> None:
    flt = EventFilter([])
    assert not skips(flt, "db", "t", "insert")
    assert not flt.should_skip_ddl("db", "t", DDLAction.DROP_TABLE, "DROP TABLE t")


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ({"matcher": ["db.*"], "ignore-event": ["explode"]}, "invalid ignore event type 'explode'"),
        ({"matcher": ["db"]}, "wrong table pattern"),
        ({"matcher": "db.*"}, "matcher: must be a list of strings"),
        ({"matcher": ["db.*"], "ignore-sql": ["("]}, "invalid ignore-sql pattern"),
        ({"matcher": ["db.*"], "bogus": 1}, "unknown key 'bogus'"),
        ({"matcher": ["db.*"], "ignore-insert-value-expr": "id >"}, "There is a syntax error in: 'id >'"),
        ({"matcher": ["db.*"], "ignore-delete-value-expr": 1}, "ignore-delete-value-expr: must be a string"),
    ],
)
def test_bad_rules(table: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError) as e:
        EventFilterRule.from_toml(table)
    assert fragment in str(e.value)


def test_pickles_and_round_trips() -> None:
    r = rule(matcher=["db.*"], ignore_event=["insert"], ignore_sql=["^drop"], ignore_delete_value_expr="id > 1")
    assert EventFilterRule.from_toml(r.to_toml()) == r
    assert r.to_toml()["ignore-delete-value-expr"] == "id > 1" and r.to_toml()["ignore-insert-value-expr"] == ""
    flt = pickle.loads(pickle.dumps(EventFilter([r])))
    assert skips(flt, "db", "t", "insert")
