"""Partition numbers asserted by TiCDC's own dispatcher tests, reproduced on the project's row model.

Sources (read at pingcap/tiflow c7b2588e and pingcap/ticdc 6e7a0a0d):

* tiflow ``cdc/sink/dmlsink/mq/dispatcher/partition/{table,ts,default,index_value,columns}_test.go`` and
  ``cdc/sink/dmlsink/mq/dispatcher/event_router_test.go`` (TestGetPartitionForRowChange);
* ticdc ``downstreamadapter/sink/eventrouter/partition/{index_value,column}_test.go`` and
  ``downstreamadapter/sink/eventrouter/event_router_test.go`` (TestGetPartitionForRowChange).

Every expected number is copied from a ``require.Equal`` of those tests; the rows are the rows those tests build
(INT columns, so values hash as their decimal text). Where a tiflow test builds an internally inconsistent
table (column ``Offset``s that disagree with the column order), the row here is the one whose (name, value)
pairs tiflow's code actually hashes; the comment at that vector says so.
"""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.model import ColumnInfo
from sparkcdc.sink.kafka.dispatcher import DispatchRule, EventRouter
from sparkcdc.sink.kafka.partition import partition_generator
from tests.unit.sink.kafka.tables import delete, insert, table

TIFLOW = "pingcap/tiflow cdc/sink/dmlsink/mq/dispatcher/"
TICDC = "pingcap/ticdc downstreamadapter/sink/eventrouter/"

T1 = table("test", "t1", ["id"], pk=("id",))
# index_value_test.go (both repos): t1(a int primary key, b int), t2(a int, b int, primary key(a, b)).
SINGLE_PK = table("test", "t1", ["a", "b"], pk=("a",))
COMPOSITE_PK = table("test", "t2", ["a", "b"], pk=("a", "b"))

# (source, table, row values, rule, index, columns, partition_num, commit_ts, expected partition)
VECTORS: list[tuple[str, Any, tuple[Any, ...], str, str, tuple[str, ...], int, int, int]] = [
    # TestTableDispatcher: the commit ts does not matter, only schema.table.
    (TIFLOW + "partition/table_test.go", table("test", "t1", ["x"]), (1,), "table", "", (), 16, 1, 15),
    (TIFLOW + "partition/table_test.go", table("test", "t1", ["x"]), (1,), "table", "", (), 16, 2, 15),
    (TIFLOW + "partition/table_test.go", table("test", "t1", ["x"]), (1,), "table", "", (), 16, 3, 15),
    (TIFLOW + "partition/table_test.go", table("test", "t2", ["x"]), (1,), "table", "", (), 16, 1, 5),
    (TIFLOW + "partition/table_test.go", table("test", "t2", ["x"]), (1,), "table", "", (), 16, 2, 5),
    (TIFLOW + "partition/table_test.go", table("test", "t2", ["x"]), (1,), "table", "", (), 16, 3, 5),
    (TIFLOW + "partition/table_test.go", table("test", "t3", ["x"]), (1,), "table", "", (), 16, 3, 3),
    # TestTsDispatcher
    (TIFLOW + "partition/ts_test.go", table("test", "t1", ["x"]), (1,), "ts", "", (), 16, 1, 1),
    (TIFLOW + "partition/ts_test.go", table("test", "t1", ["x"]), (1,), "ts", "", (), 16, 2, 2),
    (TIFLOW + "partition/ts_test.go", table("test", "t1", ["x"]), (1,), "ts", "", (), 16, 3, 3),
    (TIFLOW + "partition/ts_test.go", table("test", "t2", ["x"]), (1,), "ts", "", (), 16, 1, 1),
    (TIFLOW + "partition/ts_test.go", table("test", "t2", ["x"]), (1,), "ts", "", (), 16, 2, 2),
    (TIFLOW + "partition/ts_test.go", table("test", "t2", ["x"]), (1,), "ts", "", (), 16, 3, 3),
    # TestDefaultDispatcher
    (TIFLOW + "partition/default_test.go", T1, (1,), "default", "", (), 3, 1, 0),
    # TestIndexValueDispatcher (tiflow), identical numbers in ticdc's TestIndexValueDispatcher
    (TIFLOW + "partition/index_value_test.go", SINGLE_PK, (11, 22), "index-value", "", (), 16, 1, 2),
    (TIFLOW + "partition/index_value_test.go", SINGLE_PK, (22, 22), "index-value", "", (), 16, 1, 11),
    (TIFLOW + "partition/index_value_test.go", SINGLE_PK, (11, 33), "index-value", "", (), 16, 1, 2),
    (TIFLOW + "partition/index_value_test.go", COMPOSITE_PK, (11, 22), "index-value", "", (), 16, 1, 5),
    (TIFLOW + "partition/index_value_test.go", COMPOSITE_PK, (11, 0), "index-value", "", (), 16, 1, 14),
    (TIFLOW + "partition/index_value_test.go", COMPOSITE_PK, (11, 33), "index-value", "", (), 16, 1, 2),
    (TICDC + "partition/index_value_test.go", SINGLE_PK, (11, 12), "index-value", "", (), 16, 1, 2),
    (TICDC + "partition/index_value_test.go", SINGLE_PK, (22, 22), "index-value", "", (), 16, 1, 11),
    (TICDC + "partition/index_value_test.go", SINGLE_PK, (11, 33), "index-value", "", (), 16, 1, 2),
    (TICDC + "partition/index_value_test.go", COMPOSITE_PK, (11, 22), "index-value", "", (), 16, 1, 5),
    (TICDC + "partition/index_value_test.go", COMPOSITE_PK, (11, 0), "index-value", "", (), 16, 1, 14),
    (TICDC + "partition/index_value_test.go", COMPOSITE_PK, (11, 33), "index-value", "", (), 16, 1, 2),
    # rowid is TiCDC's deprecated name of index-value
    (TIFLOW + "event_router.go (rowid)", SINGLE_PK, (11, 22), "rowid", "", (), 16, 1, 2),
    # TestIndexValueDispatcherWithIndexName (tiflow). Its table lists col2 (Offset 1) before col1 (Offset 0)
    # with values 11, 22, 33 and index1(col2, col1); tiflow's code reads values by Offset, so it hashes
    # col2=22, col1=11 for index1 and col2=11, col1=22 for the handle key: both give 15.
    (TIFLOW + "partition/index_value_test.go", "tiflow-index1", (22, 11, 33), "index-value", "index1", (), 16, 33, 15),
    (TIFLOW + "partition/index_value_test.go", "tiflow-index1", (22, 11, 33), "index-value", "INDEX1", (), 16, 33, 15),
    (TIFLOW + "partition/index_value_test.go", "tiflow-index1", (11, 22, 33), "index-value", "", (), 16, 33, 15),
    # TestIndexValueDispatcherWithIndexName (ticdc): t1(COL2 int not null, Col1 int not null, col3 int,
    # UNIQUE KEY index1(COL2, Col1)) values (22, 11, 33).
    (TICDC + "partition/index_value_test.go", "ticdc-index1", (22, 11, 33), "index-value", "index1", (), 16, 33, 5),
    (TICDC + "partition/index_value_test.go", "ticdc-index1", (22, 11, 33), "index-value", "INDEX1", (), 16, 33, 5),
    (TICDC + "partition/index_value_test.go", "ticdc-index1", (22, 11, 33), "index-value", "", (), 16, 33, 5),
    # TestColumnsDispatcher (tiflow): columns col2=11, col1=22, col3=33, col4 virtual; names hashed as the
    # table spells them, so renaming the columns to COL2/Col1 moves the row from 15 to 5.
    (
        TIFLOW + "partition/columns_test.go",
        "tiflow-cols",
        (11, 22, 33, None),
        "columns",
        "",
        ("col2", "col1"),
        16,
        1,
        15,
    ),
    (
        TIFLOW + "partition/columns_test.go",
        "tiflow-cols",
        (11, 22, 33, None),
        "columns",
        "",
        ("COL2", "Col1"),
        16,
        1,
        15,
    ),
    (TIFLOW + "partition/columns_test.go", "tiflow-COLS", (11, 22, 33), "columns", "", ("col2", "col1"), 16, 1, 5),
    # TestColumnsDispatcher (ticdc): t1(COL2 int, Col1 int, col3 int) values (22, 11, 33).
    (TICDC + "partition/column_test.go", "ticdc-cols", (22, 11, 33), "columns", "", ("col2", "col1"), 16, 1, 5),
    (TICDC + "partition/column_test.go", "ticdc-cols", (22, 11, 33), "columns", "", ("COL2", "Col1"), 16, 1, 5),
]

NAMED_TABLES = {
    # tiflow's index1 is its table's primary key; here it is a NOT NULL unique key named index1 (the handle).
    "tiflow-index1": table(
        "test", "t1", ["col2", "col1", "col3"], unique={"index1": ("col2", "col1")}, not_null=("col2", "col1")
    ),
    "ticdc-index1": table(
        "test", "t1", ["COL2", "Col1", "col3"], unique={"index1": ("COL2", "Col1")}, not_null=("COL2", "Col1")
    ),
    "tiflow-cols": table("test", "t1", ["col2", "col1", "col3", ColumnInfo("col4", "int", generated="virtual")]),
    "tiflow-COLS": table("test", "t1", ["COL2", "Col1", "col3"]),
    "ticdc-cols": table("test", "t1", ["COL2", "Col1", "col3"]),
}


@pytest.mark.parametrize(
    ("source", "info", "values", "rule", "index", "columns", "partitions", "commit_ts", "expected"),
    VECTORS,
    ids=[f"{i}-{v[3]}-{v[8]}" for i, v in enumerate(VECTORS)],
)
def test_ticdc_partition_vector(
    source: str,
    info: Any,
    values: tuple[Any, ...],
    rule: str,
    index: str,
    columns: tuple[str, ...],
    partitions: int,
    commit_ts: int,
    expected: int,
) -> None:
    resolved = NAMED_TABLES[info] if isinstance(info, str) else info
    row = insert(resolved, *values, commit_ts=commit_ts)
    assert partition_generator(rule, index, columns).partition(row, partitions).index == expected, source


def test_index_value_uses_the_deleted_image() -> None:
    """A DELETE has only the old image: it must land where its INSERT did."""
    gen = partition_generator("index-value")
    assert gen.partition(delete(SINGLE_PK, 22, 5), 16).index == 11


# tiflow event_router_test.go newReplicaConfig4DispatcherTest, identical in ticdc's newSinkConfig4Test.
ROUTER_RULES = (
    DispatchRule(("test_default1.*",), "default"),
    DispatchRule(("test_default2.*",), "unknown-dispatcher"),
    DispatchRule(("test_table.*",), "table", topic="hello_{schema}_world"),
    DispatchRule(("test_index_value.*",), "index-value", topic="{schema}_world"),
    DispatchRule(("test.*",), "rowid", topic="hello_{schema}"),
    DispatchRule(("*.*", "!*.test"), "ts", topic="{schema}_{table}"),
    DispatchRule(("hard_code_schema.*",), "default", topic="hard_code_topic"),
)


@pytest.mark.parametrize(
    ("source", "info", "values", "partitions", "commit_ts", "expected"),
    [
        (TIFLOW + "event_router_test.go", table("test_default1", "table", ["id"], pk=("id",)), (1,), 16, 1, 14),
        (TIFLOW + "event_router_test.go", table("test_default2", "table", ["id"], pk=("id",)), (1,), 16, 1, 0),
        (TIFLOW + "event_router_test.go", table("test_table", "table", ["x"]), (1,), 16, 1, 15),
        (
            TIFLOW + "event_router_test.go",
            table("test_index_value", "table", ["a", "b"], pk=("a",)),
            (11, 22),
            10,
            1,
            1,
        ),
        (TIFLOW + "event_router_test.go", table("a", "table", ["x"]), (1,), 2, 1, 1),
        (TICDC + "event_router_test.go", table("test_default1", "table", ["x"]), (1,), 16, 0, 14),
        (TICDC + "event_router_test.go", table("test_default2", "table", ["x"]), (1,), 16, 0, 0),
        (TICDC + "event_router_test.go", table("test_table", "table", ["x"]), (1,), 16, 1, 15),
        (
            TICDC + "event_router_test.go",
            table("test_index_value", "table1", ["a", "b"], pk=("a",)),
            (11, 22),
            10,
            2,
            9,
        ),
        (TICDC + "event_router_test.go", table("a", "table", ["x"]), (1,), 2, 1, 1),
    ],
)
def test_ticdc_router_partition_vector(
    source: str, info: Any, values: tuple[Any, ...], partitions: int, commit_ts: int, expected: int
) -> None:
    router = EventRouter(ROUTER_RULES, "test")
    assert router.partition_for_row(insert(info, *values, commit_ts=commit_ts), partitions).index == expected, source


@pytest.mark.parametrize(
    ("info", "rule", "index", "columns", "message"),
    [
        # tiflow columns_test.go / ticdc column_test.go
        ("tiflow-cols", "columns", "", ("col2", "col-not-found"), "columns not found"),
        ("tiflow-cols", "columns", "", ("col4",), "found virtual generated columns"),
        ("ticdc-cols", "columns", "", ("col-2", "col-not-found"), "columns not found"),
        # index_value_test.go (both): index2 does not exist
        ("ticdc-index1", "index-value", "index2", (), "index not found"),
    ],
)
def test_ticdc_dispatch_errors(info: str, rule: str, index: str, columns: tuple[str, ...], message: str) -> None:
    row = insert(NAMED_TABLES[info], *([1] * len(NAMED_TABLES[info].columns)))
    with pytest.raises(ConfigError, match=message) as err:
        partition_generator(rule, index, columns).partition(row, 16)
    assert err.value.code == "CDC:ErrDispatcherFailed"
