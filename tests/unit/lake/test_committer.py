"""The lake sink's DDL path replicates the tables the changefeed replicates (TiCDC's eligibility): a table without a
key makes no lake table unless ``force-replicate`` (the source passes on no DDL of it), and one that gains a key is
replicated from that DDL on (the source passes it on as the table's creation)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.changefeed.config import replicated_ddl
from sparkcdc.errors import ConfigError
from sparkcdc.lake.as_of import read_as_of
from sparkcdc.lake.keyless import COMMIT_TS_COLUMN, OP_COLUMN
from sparkcdc.model import DDLEvent
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo
from sparkcdc.sink.base import SinkContext
from sparkcdc.sink.lake.committer import LakeCommitter
from sparkcdc.sink.lake.config import LakeSinkConfig
from tests.unit.lake.support import apply, ins, key_col, lake, rows_of, table

NOKEY = table(ColumnInfo("a", "int"), ColumnInfo("_tidb_op", "varchar"), name="k")  # a change log could not keep it
KEYED = table(key_col("a"), ColumnInfo("_tidb_op", "varchar"), name="k", version=30)


def committer(uri: str, tmp_path: Path) -> LakeCommitter:
    return LakeCommitter(LakeSinkConfig.from_uri(uri), SinkContext("cf", 0, str(tmp_path)))


def passed_on(ddls: list[DDLEvent], force_replicate: bool) -> list[DDLEvent]:
    """What the source's transform passes on to every sink (the filter rules matched these)."""
    return [d for d in (replicated_ddl(ddl, force_replicate) for ddl in ddls) if d is not None]


def test_a_keyless_table_the_changefeed_does_not_replicate_gets_no_lake_table_until_it_gains_a_key(
        uri: str, tmp_path: Path) -> None:  # fmt: skip
    """Without force-replicate a key-less table's DDLs make or change nothing (not even its ``_tidb_op`` column fails
    the changefeed); its ALTER adding a primary key makes the lake table, which takes the rows from then on."""
    c = committer(uri, tmp_path)
    c.commit([], passed_on([DDLEvent(10, DDLAction.CREATE_TABLE, "CREATE TABLE k (a INT, _tidb_op VARCHAR(9))", "db",
                                     "k", NOKEY)], False))  # fmt: skip
    c.commit([], passed_on([DDLEvent(20, DDLAction.TRUNCATE_TABLE, "TRUNCATE k", "db", "k", NOKEY, NOKEY)], False))
    with pytest.raises(ConfigError, match=r"^db\.k: no (Delta|Iceberg) table in "):
        read_as_of(uri, "db.k", 30)
    c.commit([], passed_on([DDLEvent(30, DDLAction.ADD_PRIMARY_KEY, "ALTER TABLE k ADD PRIMARY KEY (a)", "db", "k",
                                     KEYED, NOKEY)], False))  # fmt: skip
    assert read_as_of(uri, "db.k", 30).column_names == ["a", "_tidb_op"]
    t = lake(uri)
    apply(t, [ins(40, 1, "x", t=KEYED), ins(40, 2, "y", t=KEYED)])
    assert rows_of(uri, 40, "db.k") == [(1, "x"), (2, "y")]


def test_a_keyless_table_under_force_replicate_gets_its_change_log_at_its_create(uri: str, tmp_path: Path) -> None:
    plain = table(ColumnInfo("a", "int"), ColumnInfo("b", "varchar"), name="k")
    committer(uri, tmp_path).commit(
        [], passed_on([DDLEvent(10, DDLAction.CREATE_TABLE, "CREATE TABLE k (a INT, b VARCHAR(9))", "db", "k", plain)],
                      True))  # fmt: skip
    assert read_as_of(uri, "db.k", 10).column_names == ["a", "b", OP_COLUMN, COMMIT_TS_COLUMN]
