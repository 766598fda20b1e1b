"""[[filter.event-filters]]: ignore-event / ignore-sql per matched table."""

from __future__ import annotations

import pickle

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.filter.event_filter import EventFilter, EventFilterRule
from sparkcdc.model.ddl_action import DDLAction


def rule(**kw: object) -> EventFilterRule:
    return EventFilterRule.from_toml({k.replace("_", "-"): v for k, v in kw.items()})


def test_ignore_dml_types() -> None:
    flt = EventFilter([rule(matcher=["db.*"], ignore_event=["delete"])])
    assert flt.should_skip_dml("db", "t", "delete")
    assert not flt.should_skip_dml("db", "t", "insert")
    assert not flt.should_skip_dml("other", "t", "delete")


def test_all_dml_and_all_ddl() -> None:
    flt = EventFilter([rule(matcher=["db.t"], ignore_event=["all dml"])])
    assert all(flt.should_skip_dml("db", "t", op) for op in ("insert", "update", "delete"))
    assert not flt.should_skip_ddl("db", "t", DDLAction.ADD_COLUMN, "ALTER TABLE t ADD c INT")
    flt = EventFilter([rule(matcher=["db.t"], ignore_event=["all ddl"])])
    assert flt.should_skip_ddl("db", "t", DDLAction.ADD_COLUMN, "ALTER TABLE t ADD c INT")
    assert not flt.should_skip_dml("db", "t", "insert")


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
    assert not flt.should_skip_dml("db", "t", "insert")  # DML has no SQL text


def test_matchers_are_case_sensitive() -> None:
    flt = EventFilter([rule(matcher=["DB.*"], ignore_event=["insert"])])
    assert flt.should_skip_dml("DB", "t", "insert")
    assert not flt.should_skip_dml("db", "t", "insert")


def test_empty_filter_skips_nothing() -> None:
    flt = EventFilter([])
    assert not flt.should_skip_dml("db", "t", "insert")
    assert not flt.should_skip_ddl("db", "t", DDLAction.DROP_TABLE, "DROP TABLE t")


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ({"matcher": ["db.*"], "ignore-event": ["explode"]}, "invalid ignore event type 'explode'"),
        ({"matcher": ["db"]}, "wrong table pattern"),
        ({"matcher": "db.*"}, "matcher: must be a list of strings"),
        ({"matcher": ["db.*"], "ignore-sql": ["("]}, "invalid ignore-sql pattern"),
        ({"matcher": ["db.*"], "bogus": 1}, "unknown key 'bogus'"),
        ({"matcher": ["db.*"], "ignore-insert-value-expr": "id > 1"}, "not supported"),
    ],
)
def test_bad_rules(table: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError) as e:
        EventFilterRule.from_toml(table)
    assert fragment in str(e.value)


def test_bad_dml_type_is_a_bug() -> None:
    with pytest.raises(ValueError):
        EventFilter([]).should_skip_dml("db", "t", "upsert")


def test_pickles_and_round_trips() -> None:
    r = rule(matcher=["db.*"], ignore_event=["insert"], ignore_sql=["^drop"])
    assert EventFilterRule.from_toml(r.to_toml()) == r
    flt = pickle.loads(pickle.dumps(EventFilter([r])))
    assert flt.should_skip_dml("db", "t", "insert")
