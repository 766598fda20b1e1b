"""What a simple topic's offset commits say about where the schemas in use came from (``kafka_schemas``)."""

from __future__ import annotations

import logging

import pytest

from sparkcdc.consumer.kafka_schemas import MAX_METADATA, PREFIX, SchemaOffsets, parse, schema_tables
from sparkcdc.model import BootstrapEvent, ColumnInfo, DDLAction, DDLEvent, ResolvedEvent, TableInfo

A = TableInfo("db", "a", 1, (ColumnInfo("id", "int"),), (), 1)


def test_per_table_the_last_schema_message_before_the_committed_offset() -> None:
    s = SchemaOffsets()
    s.saw(0, 3, [("db", "a")])
    s.saw(0, 5, [("db", "b")])
    s.saw(0, 9, [("db", "a")])
    s.saw(1, 4, [("db", "a")])
    assert parse(s.metadata(0, 9)) == [3, 5]  # a's message at 9 is read again from offset 9 anyway
    assert parse(s.metadata(0, 10)) == [5, 9]
    assert parse(s.metadata(0, 11)) == [5, 9]  # older offsets were forgotten, the last ones kept
    assert parse(s.metadata(1, 5)) == [4]
    assert s.metadata(2, 7) == PREFIX  # a partition without schema messages


def test_metadata_too_long_for_kafka_keeps_the_newest_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    s = SchemaOffsets()
    for i in range(1000):
        s.saw(0, 10**9 + i, [("db", f"t{i}")])
    with caplog.at_level(logging.WARNING):
        first = s.metadata(0, 2 * 10**9)
        s.metadata(0, 2 * 10**9)
    kept = parse(first)
    assert len(first) <= MAX_METADATA and kept == list(range(10**9 + 1000 - len(kept), 10**9 + 1000))
    assert caplog.text.count("do not fit in the commit metadata") == 1


@pytest.mark.parametrize("metadata", [None, "", "someone else's", PREFIX + "1,x"])
def test_metadata_this_consumer_did_not_write_names_nothing(metadata: str | None) -> None:
    assert parse(metadata) == []


def test_the_tables_a_message_announces() -> None:
    drop_db = DDLEvent(7, DDLAction.DROP_SCHEMA, "DROP DATABASE db", "db")
    b = TableInfo("db", "b", 2, (ColumnInfo("id", "int"),), (), 1)
    add = DDLEvent(8, DDLAction.ADD_COLUMN, "ALTER TABLE b ADD c INT", "db", "b", b, b)
    assert schema_tables([BootstrapEvent(A, 0), add, drop_db, ResolvedEvent(9)]) == {("db", "a"), ("db", "b")}
