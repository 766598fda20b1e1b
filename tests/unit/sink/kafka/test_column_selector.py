"""Column selectors: TiDB's column-filter syntax (cases of tidb ``column_filter_test.go``), TiCDC's selection and
verification rules (tiflow/ticdc ``column_selector.go``)."""

from __future__ import annotations

import pickle

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.model import ColumnInfo, RowOp
from sparkcdc.sink.kafka.column_selector import (
    ColumnFilter,
    ColumnSelectorRule,
    ColumnSelectors,
    parse_column_selectors,
)
from sparkcdc.sink.kafka.dispatcher import DispatchRule, EventRouter
from tests.unit.sink.kafka.tables import delete, insert, table

# pingcap/tidb pkg/util/table-filter/column_filter_test.go TestMatchColumns (all cases without @file imports)
TIDB_CASES: list[tuple[list[str], list[str], list[bool]]] = [
    ([], ["foo"], [False]),
    (["*"], ["foo"], [True]),
    (["foo*"], ["foo", "foo1", "foo2"], [True, True, True]),
    (["*", "!foo1*"], ["foo", "foo1", "foo2"], [True, False, True]),
    (["/^foo/"], ["foo", "foo1", "fff"], [True, True, False]),
    (
        ["*", "!foo[bar]", "!bar?", "!special\\\\"],
        ["food", "foor", "foo[bar]", "ba", "bar?", "special\\", "special\\\\", "bazzz", "special\\$", "afooa"],
        [True, False, True, True, False, False, True, True, True, True],
    ),
    (["*", "!/a?b?f[0-9]/"], ["abbdf1", "aaaaf2", "55", "abbcfa"], [False, False, True, True]),
    (["BAR"], ["bar", "BAR"], [True, True]),
    (["# comment", "x", "   \t"], ["x", "y"], [True, False]),
    (["p_123$", "中文"], ["p_123", "p_123$", "英文", "中文"], [False, True, False, True]),
    (["\\\\\\."], ["\\.", "\\\\\\.", "\\a"], [True, False, False]),
    (["[!a-z]"], ["!", "a", "1"], [True, False, True]),
    (
        ['"some ""quoted"""'],
        ['some "quoted"', 'some ""quoted""', 'SOME "QUOTED"', 'some\t"quoted"'],
        [True, False, True, False],
    ),
    (
        ["db*", "!cfg*", "cfgsample", "a\\.b\\.c"],
        ["irrelevant", "db1", "cfg1", "cfgsample", "a.b.c"],
        [False, True, False, True, True],
    ),
    (["*", "!D[!a-d]"], ["S", "Da", "Db", "Daa", "dD", "de"], [True, True, True, True, True, False]),
    (["?\\.?"], ["a", "a.b", "中文.英文", "我.你"], [False, True, False, True]),
    (["*", "!?\\.?"], ["a", ".b", ".英文", "我.你", "我.你.他"], [True, True, True, False, True]),
]


@pytest.mark.parametrize(("rules", "columns", "accepted"), TIDB_CASES)
def test_tidb_column_filter_cases(rules: list[str], columns: list[str], accepted: list[bool]) -> None:
    f = ColumnFilter(rules)
    assert [f.match(c) for c in columns] == accepted


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        # TestParseFailures of column_filter_test.go (the Go regexp-specific ones aside)
        ("a%b\\.c", "unexpected special character '%'"),
        ("a\\tb\\.c", "cannot escape a letter or number"),
        ("[]\\.*", "failed to parse character class"),
        ("[.*", "failed to parse character class"),
        ("db.", "unexpected special character '.'"),
        ("/db\\.*", "incomplete regexp"),
        ("`db\\.*", "incomplete quoted identifier"),
        ('"db\\.*', "incomplete quoted identifier"),
        ("db\\", "cannot place \\\\ at end of line"),
        ("db\\.tbl#not comment", "unexpected special character '#'"),
        ("@file.txt", "not supported"),
    ],
)
def test_tidb_column_filter_errors(rule: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        ColumnFilter([rule])
    assert err.value.code == "CDC:ErrFilterRuleInvalid"
    assert "invalid column filter rule" in str(err.value)


USERS = table(
    "app",
    "users",
    ["id", "email", "secret", "note"],
    pk=("id",),
    unique={"uk_email": ("email",)},
    not_null=("email",),
)


def selectors(*rules: tuple[list[str], list[str]]) -> ColumnSelectors:
    return ColumnSelectors([ColumnSelectorRule(tuple(m), tuple(c)) for m, c in rules])


def test_select_projects_rows_and_reuses_the_projected_table() -> None:
    sel = selectors((["app.users"], ["*", "!secret"]))
    row = sel.select(insert(USERS, 1, "a@x", "pw", "n"))
    assert [c.name for c in row.table.columns] == ["id", "email", "note"]
    assert row.after == (1, "a@x", "n")
    assert row.before is None
    gone = sel.select(delete(USERS, 2, "b@x", "pw2", None))
    assert gone.op is RowOp.DELETE
    assert gone.before == (2, "b@x", None)
    assert gone.table is row.table  # one projected TableInfo per source table: encoders cache by identity
    assert [i.name for i in row.table.indexes] == ["PRIMARY", "uk_email"]
    assert row.table.handle_key_positions == (0,)


def test_first_matching_selector_wins_and_unmatched_tables_keep_everything() -> None:
    sel = selectors((["app.*"], ["id", "email"]), (["app.users"], ["*"]))
    row = insert(USERS, 1, "a@x", "pw", "n")
    assert sel.select(row).after == (1, "a@x")
    other = insert(table("other", "t", ["id", "x"], pk=("id",)), 1, 2)
    assert sel.select(other) is other
    everything = selectors((["app.users"], ["*"]))
    assert everything.select(row) is row


def test_matchers_follow_case_sensitivity_and_columns_never_do() -> None:
    row = insert(USERS, 1, "a@x", "pw", "n")
    assert selectors((["APP.USERS"], ["ID", "EMAIL"])).select(row).after == (1, "a@x")
    sensitive = ColumnSelectors([ColumnSelectorRule(("APP.USERS",), ("id",))], case_sensitive=True)
    assert sensitive.select(row) is row


def test_verify_tables() -> None:
    selectors((["app.users"], ["*", "!secret"])).verify_tables([USERS])
    selectors((["app.users"], ["email", "note"])).verify_tables([USERS])  # the unique key is kept
    with pytest.raises(ConfigError, match="no primary key columns or unique key columns") as err:
        selectors((["app.users"], ["note", "secret"])).verify_tables([USERS])
    assert err.value.code == "CDC:ErrColumnSelectorFailed"
    router = EventRouter([DispatchRule(("app.*",), "columns", columns=("note",))], "t")
    with pytest.raises(ConfigError, match="used in the column dispatcher"):
        selectors((["app.users"], ["*", "!note"])).verify_tables([USERS], router)
    selectors((["other.*"], ["nothing"])).verify_tables([USERS], router)


def test_selectors_pickle() -> None:
    sel = selectors((["app.users"], ["*", "!secret"]))
    row = insert(USERS, 1, "a@x", "pw", "n")
    sel.select(row)
    copy = pickle.loads(pickle.dumps(sel))
    assert copy.select(row).after == (1, "a@x", "n")


def test_parse_column_selectors() -> None:
    raw = [{"matcher": ["app.*"], "columns": ["*", "!secret"]}]
    assert parse_column_selectors(raw) == (ColumnSelectorRule(("app.*",), ("*", "!secret")),)
    assert parse_column_selectors(None) == ()
    for bad, message in [
        ([{"matcher": ["a.*"], "colums": ["x"]}], "unknown key 'colums'"),
        ([{"matcher": "a.*", "columns": ["x"]}], "matcher must be an array of strings"),
        ([{"matcher": ["a.*"], "columns": [1]}], "columns must be an array of strings"),
        (["a.*"], "must be a table"),
        ({"matcher": ["a.*"]}, "array of tables"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_column_selectors(bad)


def test_virtual_columns_are_just_columns_to_the_selector() -> None:
    info = table("d", "t", ["id", ColumnInfo("v", "int", generated="virtual")], pk=("id",))
    row = selectors((["d.t"], ["id"])).select(insert(info, 1, None))
    assert row.after == (1,)
