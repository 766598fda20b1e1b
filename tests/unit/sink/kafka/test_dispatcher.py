"""The event router: rule matching, topics of rows and DDLs, watermark topics, table verification, rule parsing.

Expected topics are TiCDC's (tiflow ``event_router_test.go`` and ticdc ``event_router_test.go``).
"""

from __future__ import annotations

import logging
import pickle
from dataclasses import replace
from typing import Any

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, IndexInfo
from sparkcdc.sink.kafka.dispatcher import (
    DispatchRule,
    EventRouter,
    bootstrap_partitions,
    ddl_partitions,
    parse_dispatch_rules,
)
from sparkcdc.sink.kafka.partition import (
    ColumnsPartition,
    IndexValuePartition,
    TablePartition,
    TsPartition,
    value_bytes,
)
from tests.unit.sink.kafka.tables import insert, table
from tests.unit.sink.kafka.test_partition_vectors import ROUTER_RULES


@pytest.fixture
def router() -> EventRouter:
    return EventRouter(ROUTER_RULES, "test")


@pytest.mark.parametrize(
    ("schema", "table_name", "topic", "kind"),
    [
        ("sbs", "test", "test", TablePartition),  # no rule matches (!*.test): the implicit *.* default
        ("test_default1", "test", "test", TablePartition),
        ("test_default2", "test", "test", TablePartition),  # unknown rule -> default
        ("test_table", "test", "hello_test_table_world", TablePartition),
        ("test_index_value", "test", "test_index_value_world", IndexValuePartition),
        ("test", "table1", "hello_test", IndexValuePartition),  # rowid
        ("sbs", "table2", "sbs_table2", TsPartition),
        ("hard_code_schema", "test", "hard_code_topic", TablePartition),
        ("a", "table", "a_table", TsPartition),
    ],
)
def test_ticdc_rule_matching(router: EventRouter, schema: str, table_name: str, topic: str, kind: type) -> None:
    assert router.topic_for_table(schema, table_name) == topic
    assert isinstance(router.partition_generator(schema, table_name), kind)


def test_first_matching_rule_wins_and_matchers_are_case_insensitive() -> None:
    rules = (DispatchRule(("db.*",), "ts", topic="first"), DispatchRule(("db.t",), "table", topic="second"))
    assert EventRouter(rules, "d").topic_for_table("DB", "T") == "first"
    sensitive = EventRouter(rules, "d", case_sensitive=True)
    assert sensitive.topic_for_table("DB", "T") == "d"


def test_an_empty_matcher_selects_nothing() -> None:
    router = EventRouter((DispatchRule((), "ts", topic="never"),), "d")
    assert router.topic_for_table("db", "t") == "d"


def test_ticdc_active_topics(router: EventRouter) -> None:
    names = [("test_default1", "table"), ("test_default2", "table"), ("test_table", "table"),
             ("test_index_value", "table"), ("test", "table"), ("sbs", "table")]  # fmt: skip
    assert router.active_topics(names) == [
        "test",
        "hello_test_table_world",
        "test_index_value_world",
        "hello_test",
        "sbs_table",
    ]
    assert router.active_topics([]) == ["test"]


def _ddl(schema: str, name: str, action: DDLAction, pre: str | None = None, info: bool = True) -> DDLEvent:
    after = table(schema, name, ["id"], pk=("id",)) if info and name else None
    before = table(schema, pre, ["id"], pk=("id",)) if pre else None
    return DDLEvent(1, action, "ddl", schema, name, after, before)


@pytest.mark.parametrize(
    ("ddl", "topic"),
    [
        (_ddl("test", "", DDLAction.CREATE_SCHEMA), "test"),
        (_ddl("test", "", DDLAction.DROP_SCHEMA), "test"),
        (_ddl("test", "tb1", DDLAction.CREATE_TABLE), "hello_test"),
        (_ddl("test", "tb1", DDLAction.DROP_TABLE, pre="tb1"), "hello_test"),
        (_ddl("test1", "view1", DDLAction.DROP_VIEW, info=False), "test1_view1"),
        (_ddl("test1", "tb1", DDLAction.ADD_COLUMN, pre="tb1"), "test1_tb1"),
        (_ddl("test1", "tb1", DDLAction.DROP_COLUMN, pre="tb1"), "test1_tb1"),
        (_ddl("test1", "tb2", DDLAction.RENAME_TABLE, pre="tb1"), "test1_tb1"),  # the old name's topic
    ],
)
def test_ticdc_ddl_topics(ddl: DDLEvent, topic: str) -> None:
    # tiflow TestGetTopicForDDL: rowid for test.*, ts + {schema}_{table} for *.* but *.test, default topic "test"
    rules = (
        DispatchRule(("test.*",), "rowid", topic="hello_{schema}"),
        DispatchRule(("*.*", "!*.test"), "ts", topic="{schema}_{table}"),
    )
    assert EventRouter(rules, "test").topic_for_ddl(ddl) == topic


def test_ddl_and_bootstrap_partitions() -> None:
    assert list(ddl_partitions("canal-json", 3)) == [0]
    assert list(ddl_partitions("simple", 3)) == [0, 1, 2]
    assert list(bootstrap_partitions(True, 3)) == [0, 1, 2]
    assert list(bootstrap_partitions(False, 3)) == [0]


def test_rows_route_by_their_table(router: EventRouter) -> None:
    row = insert(table("sbs", "orders", ["id"], pk=("id",)), 7, commit_ts=5)
    assert router.topic_for_row(row) == "sbs_orders"
    assert router.partition_for_row(row, 4).index == 1  # ts: 5 % 4
    assert router.partition_for_row(row, 4).key == "5"


def test_partition_keys_are_ticdcs() -> None:
    info = table("db", "t", ["id"], pk=("id",))
    assert TablePartition().partition(insert(info, 1), 3).key == "db.t"
    key = IndexValuePartition().partition(insert(info, 1), 3).key
    assert key.isdigit()
    assert int(key) % 3 == IndexValuePartition().partition(insert(info, 1), 3).index


def test_router_pickles_and_keeps_routing(router: EventRouter) -> None:
    row = insert(table("test_index_value", "t", ["a", "b"], pk=("a",)), 11, 22)
    before = router.partition_for_row(row, 10)
    copy = pickle.loads(pickle.dumps(router))
    assert copy.partition_for_row(row, 10) == before
    assert copy.topic_for_row(row) == router.topic_for_row(row)
    gen = pickle.loads(pickle.dumps(router.partition_generator("test_index_value", "t")))
    assert gen.partition(row, 10) == before


def test_unknown_partition_rule_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sparkcdc.sink.kafka.partition"):
        EventRouter((DispatchRule(("*.*",), "pk"),), "t")
    assert any("'pk'" in r.getMessage() for r in caplog.records)


def test_zero_partitions_is_an_error() -> None:
    with pytest.raises(ConfigError, match="partition number 0"):
        TablePartition().partition(insert(table("d", "t", ["a"]), 1), 0)


def test_verify_tables() -> None:
    info = table("d", "t", ["a", "b", "c"], pk=("a",), unique={"uk": ("b",)})
    ok = EventRouter((DispatchRule(("d.*",), "index-value", index="UK"),), "x")
    ok.verify_tables([info])
    cases: list[tuple[DispatchRule, str]] = [
        (DispatchRule(("d.*",), "index-value", index="nope"), "index not found"),
        (DispatchRule(("d.*",), "columns", columns=("a", "zz")), "columns not found"),
    ]
    for rule, message in cases:
        with pytest.raises(ConfigError, match=message) as err:
            EventRouter((rule,), "x").verify_tables([info])
        assert err.value.code == "CDC:ErrDispatcherFailed"
    keyed = table("d", "t", ["a", "b"], pk=("a",))
    non_unique = replace(keyed, indexes=(*keyed.indexes, IndexInfo("ix", ("b",))))
    with pytest.raises(ConfigError, match="not unique"):
        EventRouter((DispatchRule(("d.*",), "index-value", index="ix"),), "x").verify_tables([non_unique])


def test_columns_partition_skips_nothing_and_orders_nothing() -> None:
    info = table("d", "t", ["a", "b"])
    one = ColumnsPartition(("a", "b")).partition(insert(info, 1, 2), 1000)
    two = ColumnsPartition(("b", "a")).partition(insert(info, 1, 2), 1000)
    assert one == two  # PositionInertia XORs the column hashes


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"matcher": ["*.*"], "dispatcher": "ts", "partition": "table"}, "cannot be configured both"),
        ({"matcher": ["*.*"], "partiton": "ts"}, "unknown key 'partiton'"),
        ({"matcher": "*.*"}, "matcher must be an array"),
        ({"matcher": ["*.*"], "columns": "a"}, "columns must be an array"),
        ({"matcher": ["*.*"], "topic": 1}, "topic must be a string"),
        ("ts", "must be a table"),
    ],
)
def test_parse_dispatch_rule_errors(raw: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        parse_dispatch_rules([raw])
    assert err.value.code == "CDC:ErrSinkInvalidConfig"


def test_parse_dispatch_rules() -> None:
    rules = parse_dispatch_rules(
        [
            {"matcher": ["db.*"], "dispatcher": "ts"},
            {"matcher": ["db2.*"], "partition": "index-value", "index": "uk", "topic": "{schema}"},
            {"matcher": ["db3.*"], "partition": "columns", "columns": ["a", "b"]},
        ]
    )
    assert rules == (
        DispatchRule(("db.*",), "ts"),
        DispatchRule(("db2.*",), "index-value", index="uk", topic="{schema}"),
        DispatchRule(("db3.*",), "columns", columns=("a", "b")),
    )
    assert parse_dispatch_rules(None) == ()
    with pytest.raises(ConfigError, match="array of tables"):
        parse_dispatch_rules({"matcher": ["x.*"]})


def test_value_bytes_is_not_confused_by_bool_subclassing_int() -> None:
    assert value_bytes(True, ColumnInfo("b", "tinyint")) == b"1"
