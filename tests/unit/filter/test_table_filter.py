"""TiDB table-filter syntax and TiCDC's rule order / case semantics."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.errors import ConfigError
from sparkcdc.filter.system_schemas import is_system_schema
from sparkcdc.filter.table_filter import TableFilter


def f(*rules: str, cs: bool = False) -> TableFilter:
    return TableFilter.parse(list(rules), case_sensitive=cs)


@pytest.mark.parametrize(
    ("rules", "schema", "table", "expected"),
    [
        (["*.*"], "db", "t", True),
        (["db.*"], "db", "anything", True),
        (["db.*"], "db2", "t", False),
        (["db.t?"], "db", "t1", True),
        (["db.t?"], "db", "t12", False),
        (["db.t?"], "db", "t", False),
        (["db*.t"], "db_x", "t", True),
        (["db*.t"], "xdb", "t", False),
        (["db.t[0-9]"], "db", "t7", True),
        (["db.t[0-9]"], "db", "tx", False),
        (["db.t[!0-9]"], "db", "tx", True),
        (["db.t[!0-9]"], "db", "t7", False),
        (["db.t[^x]"], "db", "t^", True),  # [^ is literal ^ in a glob
        (["db.t[^x]"], "db", "tx", True),
        (["db.t[^x]"], "db", "ty", False),
        (["db.t[a-]"], "db", "t-", True),
        (["db.t[[]"], "db", "t[", True),
        (["db.t\\*"], "db", "t*", True),
        (["db.t\\*"], "db", "tt", False),
        (["db.t\\.x"], "db", "t.x", True),
        (['"my.db"."tbl"'], "my.db", "tbl", True),
        (['"a""b".t'], 'a"b', "t", True),
        (["`my db`.`t``1`"], "my db", "t`1", True),
        (["`db`.*"], "db", "x", True),
        (["/^db\\d+$/./.*/"], "db12", "t", True),
        (["/^db\\d+$/./.*/"], "dbx", "t", False),
        (["/b/.t"], "abc", "t", True),  # regexes are searched, not anchored
        (["$db_1.t"], "$db_1", "t", True),
        (["数据库.表"], "数据库", "表", True),
        (["db.t*"], "db", "t\nx", True),  # * crosses newlines ((?s))
        (["db.t"], "db", "t\n", False),  # Go's $ is the end of text
    ],
)
def test_patterns(rules: list[str], schema: str, table: str, expected: bool) -> None:
    assert f(*rules, cs=True).match_table(schema, table) is expected


def test_last_matching_rule_wins() -> None:
    flt = f("db.*", "!db.secret")
    assert flt.match_table("db", "t")
    assert not flt.match_table("db", "secret")
    flt = f("!db.secret", "db.*")
    assert flt.match_table("db", "secret")


def test_only_exclusions_match_nothing() -> None:
    flt = f("!db.t")
    assert not flt.match_table("db", "t")
    assert not flt.match_table("other", "x")


def test_exclusion_after_all() -> None:
    flt = f("*.*", "!test.*", "test.keep")
    assert flt.match_table("a", "b")
    assert not flt.match_table("test", "x")
    assert flt.match_table("test", "keep")


def test_empty_rules_mean_everything() -> None:
    assert f().match_table("a", "b")
    assert f().rules == ("*.*",)


def test_comments_and_blank_lines() -> None:
    flt = f("# only a comment", "  ", " db.t \t")
    assert flt.match_table("db", "t")
    assert not flt.match_table("db", "u")


def test_case_insensitive_by_default() -> None:
    flt = f("DB.Tab*", "/^X$/.y")
    assert flt.match_table("db", "TABLE")
    assert flt.match_table("Db", "tab")
    assert flt.match_table("x", "Y")


def test_case_sensitive() -> None:
    flt = f("DB.Tab*", cs=True)
    assert flt.match_table("DB", "Table")
    assert not flt.match_table("db", "table")


def test_match_schema() -> None:
    flt = f("db.t1", "!other.*")
    assert flt.match_schema("db")
    assert not flt.match_schema("other")
    assert not flt.match_schema("third")
    # an exclusion of a single table does not exclude its schema
    flt = f("*.*", "!db.t")
    assert flt.match_schema("db")


def test_system_schemas_always_ignored() -> None:
    flt = f("*.*")
    assert flt.match_table("mysql", "user")
    assert flt.should_ignore_table("mysql", "user")
    assert flt.should_ignore_table("INFORMATION_SCHEMA", "tables")
    assert flt.should_ignore_schema("performance_schema")
    assert not flt.should_ignore_table("app", "t")
    assert is_system_schema("Sys")
    assert not is_system_schema("app")


@pytest.mark.parametrize(
    ("rule", "fragment"),
    [
        ("db", "wrong table pattern"),
        ("db-t", "unexpected special character '-'"),
        ("db.t.x", "stray characters"),
        ("db.", "missing pattern"),
        ("db.t\\", "cannot place"),
        ("db.\\a", "cannot escape a letter"),
        ("db.[abc", "character class"),
        ('"db.t', "incomplete quoted identifier"),
        ("`db.t", "incomplete quoted identifier"),
        ("/db.t", "incomplete regexp"),
        ("/(/.t", "invalid pattern"),
        ("@rules.txt", "not supported"),
        ("db t.x", "unexpected special character ' '"),
    ],
)
def test_bad_rules(rule: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as e:
        f(rule)
    assert fragment in str(e.value)
    assert e.value.code == "CDC:ErrFilterRuleInvalid"
    assert "\n" not in str(e.value)


def test_empty_schema_pattern_is_a_literal_empty_name() -> None:
    flt = f(".t")  # as TiDB: an empty wildcard is the literal empty name
    assert flt.match_table("", "t")
    assert not flt.match_table("db", "t")


def test_non_string_rule() -> None:
    with pytest.raises(ConfigError, match="must be a string"):
        TableFilter.parse([1])  # type: ignore[list-item]


def test_pickles() -> None:
    flt = f("db.*", "!db.x", "# c")
    back = pickle.loads(pickle.dumps(flt))
    assert back.rules == flt.rules
    assert back.match_table("DB", "y") and not back.match_table("db", "x")
    assert "db.*" in repr(back)


@pytest.mark.parametrize(
    ("rule", "table", "expected"),
    [
        ("db.t[\\]x]", "t]", True),
        ("db.t[\\]x]", "tx", True),
        ("db.t[\\]x]", "ty", False),
        ("db.t[a-c-]", "t-", True),
        ("db.t[&&]", "t&", True),
        ("db.t[~|]", "t|", True),
        ("db.[!t]*", "table", False),
        ("db.[!t]*", "x", True),
    ],
)
def test_character_classes(rule: str, table: str, expected: bool) -> None:
    assert f(rule, cs=True).match_table("db", table) is expected


_NAMES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=20)


@given(schema=_NAMES, table=_NAMES, other=_NAMES)
def test_backquoted_names_match_exactly(schema: str, table: str, other: str) -> None:
    rule = "`{}`.`{}`".format(schema.replace("`", "``"), table.replace("`", "``"))
    flt = f(rule, cs=True)
    assert flt.match_table(schema, table)
    assert flt.match_table(schema, other) is (other == table)
    dq = '"{}"."{}"'.format(schema.replace('"', '""'), table.replace('"', '""'))
    assert f(dq, cs=True).match_table(schema, table)


@given(schema=_NAMES, table=_NAMES)
def test_star_rules_match_everything(schema: str, table: str) -> None:
    assert f("*.*").match_table(schema, table)
    assert not f("*.*", "!*.*").match_table(schema, table)
