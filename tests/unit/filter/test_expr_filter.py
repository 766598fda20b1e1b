"""TiCDC's expression filters (``ignore-*-value-expr``) over TiCDC's own cases (pkg/filter/expr_filter_test.go:
TestShouldSkipDMLBasic, TestShouldSkipDMLError, TestShouldSkipDMLTableUpdated, TestVerify), written here as
row changes of our model."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.filter.event_filter import EventFilter, EventFilterRule
from sparkcdc.model.events import RowChange, RowOp
from sparkcdc.model.table import ColumnInfo, TableInfo

NOT_FOUND = "CDC:ErrExpressionColumnNotFound"
SYNTAX = "CDC:ErrInvalidFilterExpression"


def table(name: str, *columns: str, version: int = 1) -> TableInfo:
    """``table("test.student", "id int", "name char")``."""
    schema, tbl = name.split(".")
    cols = tuple(ColumnInfo(c.split()[0], c.split()[1]) for c in columns)
    return TableInfo(schema, tbl, 1, cols, version=version)


def event_filter(*rules: dict[str, Any]) -> EventFilter:
    return EventFilter([EventFilterRule.from_toml(r) for r in rules])


def insert(t: TableInfo, *row: Any) -> RowChange:
    return RowChange(1, t, RowOp.INSERT, None, row)


def delete(t: TableInfo, *row: Any) -> RowChange:
    return RowChange(1, t, RowOp.DELETE, row, None)


def update(t: TableInfo, old: tuple[Any, ...], new: tuple[Any, ...]) -> RowChange:
    return RowChange(1, t, RowOp.UPDATE, old, new)


STUDENT_COLS = ("id int", "name char", "age int", "gender char")


def test_basic_student_rules() -> None:
    student = table("test.student", *STUDENT_COLS)
    flt = event_filter({
        "matcher": ["test.student"],
        "ignore-insert-value-expr": "age >= 20 or gender = 'female'",
        "ignore-delete-value-expr": "age >= 32 and age < 48",
        "ignore-update-old-value-expr": "gender = 'male'",
        "ignore-update-new-value-expr": "age > 28",
    })  # fmt: skip
    assert not flt.should_skip_dml(insert(table("test.teacher", *STUDENT_COLS), 999, "Will", 39, "male"))
    assert not flt.should_skip_dml(insert(table("no.student", *STUDENT_COLS), 888, "Li", 45, "male"))
    assert flt.should_skip_dml(insert(student, 1, "Dongmen", 20, "male"))
    assert not flt.should_skip_dml(insert(student, 2, "Rustin", 18, "male"))
    assert flt.should_skip_dml(insert(student, 3, "Susan", 3, "female"))
    assert not flt.should_skip_dml(delete(student, 4, "Helen", 18, "female"))
    assert flt.should_skip_dml(delete(student, 5, "Madonna", 32, "female"))
    assert not flt.should_skip_dml(delete(student, 6, "Madison", 48, "male"))
    # an UPDATE is dropped when either image matches its expression
    assert flt.should_skip_dml(update(student, (7, "Marry", 28, "female"), (7, "Marry", 32, "female")))
    assert not flt.should_skip_dml(update(student, (8, "Marilyn", 18, "female"), (8, "Monroe", 22, "female")))
    assert flt.should_skip_dml(update(student, (9, "Andreja", 25, "male"), (9, "Andreja", 25, "female")))


def test_virtual_column_values_are_seen() -> None:
    """MariaDB's row image carries a virtual column's value; TiCDC computes it. Either way the expression sees it."""
    score = TableInfo("test", "student_score", 1, (
        ColumnInfo("id", "int"), ColumnInfo("name", "char"), ColumnInfo("score", "int"),
        ColumnInfo("total_score", "int", generated="virtual"), ColumnInfo("gender", "char")))  # fmt: skip
    flt = event_filter({
        "matcher": ["test.student_score"],
        "ignore-insert-value-expr": "score >= 20 or gender = 'female'",
        "ignore-delete-value-expr": "score >= 32 and gender = 'female'",
        "ignore-update-old-value-expr": "gender = 'male'",
        "ignore-update-new-value-expr": "total_score > 38",
    })  # fmt: skip
    assert flt.should_skip_dml(insert(score, 1, "Dongmen", 20, 30, "male"))
    assert not flt.should_skip_dml(insert(score, 2, "Rustin", 18, 28, "male"))
    assert flt.should_skip_dml(insert(score, 3, "Susan", 3, 13, "female"))
    assert not flt.should_skip_dml(delete(score, 4, "Helen", 18, 28, "female"))
    assert flt.should_skip_dml(delete(score, 5, "Madonna", 32, 42, "female"))
    assert not flt.should_skip_dml(delete(score, 6, "Madison", 48, 58, "male"))
    assert flt.should_skip_dml(update(score, (7, "Marry", 28, 38, "female"), (7, "Marry", 32, 42, "female")))
    assert not flt.should_skip_dml(update(score, (8, "Marilyn", 18, 28, "female"), (8, "Monroe", 22, 32, "female")))
    assert flt.should_skip_dml(update(score, (9, "Andreja", 25, 35, "male"), (9, "Andreja", 25, 35, "female")))


def test_wildcard_matcher_and_multibyte_strings() -> None:
    computer = table("test.computer", "id int", "brand char", "price int")
    flt = event_filter({"matcher": ["test.*"], "ignore-insert-value-expr": "price > 10000"})
    assert flt.should_skip_dml(insert(computer, 1, "apple", 12888))
    assert not flt.should_skip_dml(insert(computer, 2, "microsoft", 5888))

    poet = table("test.poet", "id int", "name varchar", "works char")
    flt = event_filter({"matcher": ["*.*"], "ignore-insert-value-expr": "id <= 1 or name='辛弃疾' or works='离骚'"})
    assert flt.should_skip_dml(insert(poet, 1, "李白", "静夜思"))
    assert not flt.should_skip_dml(insert(poet, 2, "杜甫", "石壕吏"))
    assert flt.should_skip_dml(insert(poet, 4, "屈原", "离骚"))
    assert flt.should_skip_dml(insert(poet, 3, "辛弃疾", "众里寻他千百度"))


def test_negated_matcher_leaves_its_table_alone() -> None:
    cols = ("id int", "name char", "start char", "end char")
    flt = event_filter({
        "matcher": ["*.*", "!test.season"],
        "ignore-insert-value-expr": "id >= 1",
        "ignore-update-new-value-expr": "id >= 1",
    })  # fmt: skip
    season = table("test.season", *cols)
    assert not flt.should_skip_dml(insert(season, 1, "Spring", "January", "March"))
    assert not flt.should_skip_dml(update(season, (2, "Summer", "April", "June"), (2, "Summer", "April", "July")))
    assert flt.should_skip_dml(insert(table("test.autumn", *cols), 3, "Autumn", "July", "September"))
    winter = table("test.winter", *cols)
    assert flt.should_skip_dml(update(winter, (4, "Winter", "October", "January"), (4, "Winter", "October", "Dec")))


def test_errors_have_ticdc_codes() -> None:
    """TestShouldSkipDMLError: a syntax error or an unknown function is refused when the rule is read (TiCDC
    refuses it at create too); a column the table lacks fails on the table's first row change."""
    with pytest.raises(ConfigError) as e:
        EventFilterRule.from_toml(
            {"matcher": ["test.student"], "ignore-delete-value-expr": "age >= 32 and and age < 48"}
        )
    assert e.value.code == SYNTAX and "There is a syntax error in: 'age >= 32 and and age < 48'" in e.value.message
    assert "ignore-delete-value-expr" in e.value.message
    with pytest.raises(ConfigError) as e:
        EventFilterRule.from_toml(
            {"matcher": ["test.*"], "ignore-update-old-value-expr": "gender = 'male' and error(age) > 20"}
        )
    assert e.value.code == SYNTAX and "function ERROR() is not supported" in e.value.message

    flt = event_filter(
        {"matcher": ["test.student"], "ignore-insert-value-expr": "age >= 20 or gender = 'female' and mather='a'"}
    )
    with pytest.raises(ConfigError) as e:
        flt.should_skip_dml(insert(table("test.student", *STUDENT_COLS), 999, "Will", 39, "male"))
    assert e.value.code == NOT_FOUND
    assert "Cannot find column 'mather' from table 'test.student' in" in e.value.message


def test_table_updated_add_then_drop_column() -> None:
    """TestShouldSkipDMLTableUpdated: each table version is compiled anew; ADD COLUMN makes an expression valid,
    DROP COLUMN makes it fail (as TiCDC: the changefeed fails with ErrExpressionColumnNotFound)."""
    flt = event_filter({
        "matcher": ["test.student"],
        "ignore-insert-value-expr": "age >= 20 and mather = 'Marisa'",
        "ignore-delete-value-expr": "age >= 32 and mather = 'Maria'",
        "ignore-update-old-value-expr": "gender = 'female'",
        "ignore-update-new-value-expr": "age > 28",
    })  # fmt: skip
    v1 = table("test.student", *STUDENT_COLS, version=1)
    with pytest.raises(ConfigError) as e:
        flt.should_skip_dml(insert(v1, 999, "Will", 39, "male"))
    assert e.value.code == NOT_FOUND and "'mather' from table 'test.student'" in e.value.message
    v2 = table("test.student", *STUDENT_COLS, "mather char", version=2)
    assert not flt.should_skip_dml(insert(v2, 999, "Will", 39, "male", "Marry"))
    assert flt.should_skip_dml(update(v2, (876, "Li", 45, "female", None), (1, "Dongmen", 20, "male", None)))
    assert flt.should_skip_dml(delete(v2, 876, "Li", 45, "female", "Maria"))

    worker_cols = ("id int", "name char", "age int", "gender char", "company char")
    flt = event_filter({
        "matcher": ["test.worker"],
        "ignore-insert-value-expr": "age >= 20 and company = 'Apple'",
        "ignore-delete-value-expr": "age >= 32 and company = 'Google'",
        "ignore-update-old-value-expr": "gender = 'female'",
        "ignore-update-new-value-expr": "age > 28",
    })  # fmt: skip
    w1 = table("test.worker", *worker_cols, version=1)
    assert flt.should_skip_dml(insert(w1, 999, "Will", 39, "male", "Apple"))
    assert not flt.should_skip_dml(insert(w1, 11, "Tom", 21, "male", "FaceBook"))
    assert flt.should_skip_dml(update(w1, (876, "Li", 45, "female", None), (1, "Dongmen", 20, "male", None)))
    assert flt.should_skip_dml(delete(w1, 876, "Li", 45, "female", "Google"))
    w2 = table("test.worker", *worker_cols[:-1], version=2)
    with pytest.raises(ConfigError) as e:
        flt.should_skip_dml(insert(w2, 999, "Will", 39, "male"))
    assert e.value.code == NOT_FOUND and "Cannot find column 'company' from table 'test.worker'" in e.value.message


def test_verify_against_the_tables_the_rules_match() -> None:
    """TestVerify: every rule's expressions are checked against the columns of the tables it matches; a rule
    matching no table is only parsed."""
    tables = [
        table("test.worker", "id int", "name char", "age int", "company char", "gender char"),
        table("test.student", "id int", "name char", "age int", "school char"),
        table("test.teacher", "id int", "name char", "age int", "school char"),
        table("test.parent", "id int", "name char", "age int", "company char"),
    ]
    event_filter(
        {"matcher": ["test.worker"], "ignore-insert-value-expr": "age >= 20 and company = 'Apple'",
         "ignore-delete-value-expr": "age >= 32 and company = 'Google'",
         "ignore-update-old-value-expr": "gender = 'female'", "ignore-update-new-value-expr": "age > 28"},
        {"matcher": ["test.student"], "ignore-insert-value-expr": "age < 20 and school = 'guanghua'",
         "ignore-delete-value-expr": "age < 11 and school = 'dongfang'"},
        {"matcher": ["test.nonExist"], "ignore-insert-value-expr": "age < 20 or id > 100",
         "ignore-delete-value-expr": "age > 100 or id < 20"},
        {"matcher": ["test.parent"], "ignore-update-new-value-expr": "company = 'Apple'"},
        {"matcher": ["*.*"], "ignore-update-new-value-expr": "id <= 100"},
    ).verify(tables)  # fmt: skip

    child = table("test.child", "id int", "name char", "age int", "parent_id int", "school char")
    flt = event_filter({"matcher": ["test.child"], "ignore-insert-value-expr": "company = 'Apple'"})
    with pytest.raises(ConfigError) as e:
        flt.verify([child])
    assert e.value.code == NOT_FOUND
    assert e.value.message.startswith("filter.event-filters[0].ignore-insert-value-expr: invalid filter expression(s)")
    assert "Cannot find column 'company' from table 'test.child' in" in e.value.message

    with pytest.raises(ConfigError) as e:
        event_filter({"matcher": ["test.fruit"], "ignore-insert-value-expr": "error(price) == null"})
    assert e.value.code == SYNTAX and "There is a syntax error in" in e.value.message


def test_event_types_are_checked_before_expressions() -> None:
    """ignore-event drops the row before any expression runs, so an expression failing on that table never
    runs for it (TiCDC's ShouldIgnoreDMLEvent order)."""
    flt = event_filter(
        {"matcher": ["db.t"], "ignore-event": ["insert"]},
        {"matcher": ["db.t"], "ignore-insert-value-expr": "missing = 1"},
    )
    assert flt.should_skip_dml(insert(table("db.t", "id int"), 1))


def test_null_does_not_match_and_other_rules_still_do() -> None:
    t = table("db.t", "id int", "v int")
    flt = event_filter(
        {"matcher": ["db.*"], "ignore-insert-value-expr": "v > 1"},
        {"matcher": ["db.t"], "ignore-insert-value-expr": "id = 7"},
    )
    assert not flt.should_skip_dml(insert(t, 1, None))
    assert flt.should_skip_dml(insert(t, 7, None))
    assert flt.should_skip_dml(insert(t, 1, 2))


def test_expressions_survive_pickling_and_the_api_round_trip() -> None:
    import pickle

    from sparkcdc.changefeed.config import ReplicaConfig

    doc = {"filter": {"event-filters": [{"matcher": ["db.*"], "ignore-update-old-value-expr": "v IS NULL"}]}}
    cfg = ReplicaConfig.from_toml(doc)
    api = cfg.to_api()["filter"]["event_filters"][0]
    assert api["ignore_update_old_value_expr"] == "v IS NULL" and api["ignore_insert_value_expr"] == ""
    assert ReplicaConfig.from_api(cfg.to_api()) == cfg
    flt = pickle.loads(pickle.dumps(cfg.event_filter()))
    t = table("db.t", "id int", "v int")
    assert flt.should_skip_dml(update(t, (1, None), (1, 2)))
    assert not flt.should_skip_dml(update(t, (1, 3), (1, None)))
