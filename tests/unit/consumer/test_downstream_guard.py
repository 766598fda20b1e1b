"""The consumers' start check (issue 26, item 7): checkpoints that say rows were applied to a table the downstream
lost (missing, or recreated empty) stop the consumer in one line saying what, which table and how to start over;
what the consumer's own DDLs explain (a replicated DROP or RENAME) does not."""

from __future__ import annotations

import pytest

from sparkcdc.model.steps import DDL_PARTITION
from sparkcdc.mysql.downstream_guard import ERR_AHEAD, Lost, lost_tables, refusal

ORDERED, DATA = -2, 0  # a Kafka table stream, a storage stream
T0 = 1_790_000_000.0  # seconds since the epoch


def never_asked(schema: str, table: str) -> bool:
    raise AssertionError(f"{schema}.{table} need not be read")


def test_a_table_missing_after_its_rows_is_lost() -> None:
    streams = [("shop", "", DDL_PARTITION, T0), ("shop", "orders", DDL_PARTITION, T0 + 1),
               ("shop", "orders", ORDERED, T0 + 5), ("shop", "items", DATA, T0 + 6),
               ("shop", "items", 3, T0 + 9)]  # fmt: skip
    assert lost_tables(streams, {}, never_asked) == [Lost("shop", "items", True, T0 + 9),
                                                     Lost("shop", "orders", True, T0 + 5)]  # fmt: skip
    assert lost_tables(streams, {("shop", "orders"): T0 + 1, ("shop", "items"): T0 + 1}, never_asked) == []
    no_ddl = [s for s in streams if s[2] != DDL_PARTITION]  # a changefeed started after the tables existed
    assert [x.table for x in lost_tables(no_ddl, {}, never_asked)] == ["items", "orders"]


def test_a_ddl_of_the_consumer_after_the_rows_may_have_dropped_the_table() -> None:
    """DROP TABLE, DROP DATABASE and RENAME are recorded under the dropped table, the schema, or the new name."""
    streams = [("shop", "orders", ORDERED, T0 + 5), ("shop", "orders2", DDL_PARTITION, T0 + 7)]
    assert lost_tables(streams, {}, never_asked) == []
    streams.append(("shop", "items", ORDERED, T0 + 8))  # but rows applied after that DDL: their table must exist
    assert lost_tables(streams, {("shop", "orders2"): T0 + 7}, never_asked) == [Lost("shop", "items", True, T0 + 8)]


def test_a_table_recreated_empty_after_its_rows_is_lost() -> None:
    streams = [("shop", "orders", ORDERED, T0 + 5)]
    assert lost_tables(streams, {("shop", "orders"): T0 + 60}, lambda s, t: True) == [
        Lost("shop", "orders", False, T0 + 5)]  # fmt: skip
    assert lost_tables(streams, {("shop", "orders"): T0 + 60}, lambda s, t: False) == []
    assert lost_tables(streams, {("shop", "orders"): T0 + 1}, never_asked) == []  # older: rows deleted upstream?
    assert lost_tables(streams, {("shop", "orders"): None}, never_asked) == []  # the server does not say


def test_the_refusal_is_one_line_naming_the_table_and_how_to_start_over() -> None:
    lost = [Lost("shop", t, t != "b", T0) for t in ("a", "b", "c", "d", "e")]
    e = refusal(lost, "app-replica", "sparkcdc_consumer")
    assert e.code == ERR_AHEAD and not e.retryable and "\n" not in e.message
    assert e.message.startswith("sparkcdc_consumer.checkpoint says consumer 'app-replica' applied rows to shop.a "
                                "(last at 2026-09-21 14:13:20 UTC), but that table is missing (so are shop.b, "
                                "shop.c and 2 more): ")  # fmt: skip
    assert "run with --reset-checkpoints" in e.message
    assert "DELETE FROM sparkcdc_consumer.checkpoint WHERE changefeed='app-replica'" in e.message
    one = refusal([Lost("shop", "a", False, T0)], "c1", "tidb_cdc")
    assert ("tidb_cdc.checkpoint says consumer 'c1' applied rows to shop.a (last at 2026-09-21 14:13:20 UTC), but "
            "that table is empty and was created after that: ") in one.message


@pytest.mark.parametrize("name", ["db.with.dots", "ünïcode", "back`tick"])
def test_any_table_name_is_named_as_it_is(name: str) -> None:
    (lost,) = lost_tables([(name, name, ORDERED, T0)], {}, never_asked)
    assert f"applied rows to {name}.{name} " in refusal([lost], "c", "sparkcdc_consumer").message
