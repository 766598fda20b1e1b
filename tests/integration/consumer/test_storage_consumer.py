"""The storage source applied by the consumer loop on hand-made TiCDC-shaped trees into a real MariaDB downstream."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.consumer.runner import Consumer
from sparkcdc.consumer.storage_consumer import StorageSource
from sparkcdc.consumer.storage_reader import ReaderConfig
from sparkcdc.errors import CorruptDataError, SparkcdcError
from sparkcdc.model import ColumnInfo, DDLAction
from sparkcdc.mysql.downstream_guard import ERR_AHEAD
from sparkcdc.mysql.engine import ApplyEngine
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.storage.external import ExternalStorage
from tests.integration.consumer.servers import run_sql
from tests.unit.consumer.trees import PARTITIONED_ROWS, Tree, csv_row, partitioned_canal_tree, table

pytestmark = pytest.mark.integration

V1 = 440000000000000000
CSV = ReaderConfig("csv", "auto", (("include-commit-ts", True),))
CANAL = ReaderConfig("canal-json", "auto", (("enable-tidb-extension", True),))


@pytest.fixture()
def down(target: MysqlTarget) -> MysqlTarget:
    run_sql(target, "DROP DATABASE IF EXISTS db", "DROP DATABASE IF EXISTS db2",
            "DROP DATABASE IF EXISTS sparkcdc_consumer")  # fmt: skip
    return target


def _consumer(root: Path, target: MysqlTarget, cfg: ReaderConfig = CSV, batch_rows: int = 20000) -> Consumer:
    source = StorageSource(ExternalStorage.from_uri(f"file://{root}"), cfg, batch_rows=batch_rows)
    return Consumer(source, ApplyEngine(target, workers=2))


def _rows(t: MysqlTarget, sql: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in run_sql(t, sql)]


def test_ddl_order_dedup_checkpoint_cutoff_and_rename(tmp_path: Path, down: MysqlTarget) -> None:
    t, u = table("db", "t"), table("db", "u")
    tree = Tree(tmp_path, width=6)
    tree.db_schema("db", V1, "CREATE DATABASE `db`", DDLAction.CREATE_SCHEMA)
    tree.schema(t, V1 + 10, "CREATE TABLE `t` (id INT PRIMARY KEY, v VARCHAR(20))", DDLAction.CREATE_TABLE)
    tree.schema(u, V1 + 11, "CREATE TABLE `u` (id INT PRIMARY KEY, v VARCHAR(20))", DDLAction.CREATE_TABLE)
    tree.data(
        "db", "t", V1 + 10, 1, [csv_row("I", "db", "t", V1 + 20, 1, "a"), csv_row("I", "db", "t", V1 + 20, 2, "b")]
    )
    tree.data(
        "db", "t", V1 + 10, 2, [csv_row("U", "db", "t", V1 + 30, 1, "a2"), csv_row("D", "db", "t", V1 + 40, 2, "b")]
    )
    # producer restart: file 3 replays the rows of ts 20 and 30, then continues
    tree.data("db", "t", V1 + 10, 3, [
        csv_row("I", "db", "t", V1 + 20, 1, "a"), csv_row("I", "db", "t", V1 + 20, 2, "b"),
        csv_row("U", "db", "t", V1 + 30, 1, "a2"), csv_row("I", "db", "t", V1 + 50, 3, "c"),
    ])  # fmt: skip
    tree.data("db", "u", V1 + 11, 1, [csv_row("I", "db", "u", V1 + 21, 7, "u7")])
    # ADD COLUMN at V1+60 for t, and rows after it in the new version directory
    t2 = table("db", "t", ColumnInfo("w", "int"))
    tree.schema(t2, V1 + 60, "ALTER TABLE `t` ADD COLUMN `w` INT", DDLAction.ADD_COLUMN)
    tree.data("db", "t", V1 + 60, 1, [csv_row("I", "db", "t", V1 + 70, 4, "d", 44)])
    # u's row at ts 65 lies between the DDL (60) and the checkpoint
    tree.data(
        "db", "u", V1 + 11, 2, [csv_row("I", "db", "u", V1 + 65, 8, "u8"), csv_row("I", "db", "u", V1 + 90, 9, "u9")]
    )
    tree.metadata(V1 + 80)

    c = _consumer(tmp_path, down)
    assert c.run_once()
    c.close()
    assert _rows(down, "SELECT id, v, w FROM db.t ORDER BY id") == [(1, "a2", None), (3, "c", None), (4, "d", 44)]
    assert _rows(down, "SELECT id FROM db.u ORDER BY id") == [(7,), (8,)]  # ts 90 > checkpoint 80: not yet
    assert c.stats.replayed_skipped == 3
    assert c.stats.ddls_executed == 4

    # the checkpoint advances; RENAME u -> u_new arrives with data in the new tree
    un = table("db", "u_new")
    tree.schema(un, V1 + 100, "RENAME TABLE `db`.`u` TO `db`.`u_new`", DDLAction.RENAME_TABLE)
    tree.data("db", "u_new", V1 + 100, 1, [csv_row("D", "db", "u_new", V1 + 110, 7, "u7")])
    tree.metadata(V1 + 120)
    c = _consumer(tmp_path, down)
    c.run_once()
    c.close()
    assert _rows(down, "SELECT id FROM db.u_new ORDER BY id") == [(8,), (9,)]
    assert _rows(down, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='db' AND table_name='u'") == [
        (0,)
    ]
    # nothing new: a third run changes nothing and skips nothing new
    c = _consumer(tmp_path, down)
    c.run_once()
    c.close()
    assert c.stats.rows_applied == 0 and c.stats.ddls_executed == 0


def test_canal_json_partitions_and_missing_table_created(tmp_path: Path, down: MysqlTarget) -> None:
    run_sql(down, "CREATE DATABASE db2")
    partitioned_canal_tree(tmp_path, V1)
    c = _consumer(tmp_path, down, CANAL)
    c.run_once()
    c.close()
    assert _rows(down, "SELECT id, v FROM db2.p ORDER BY id") == PARTITIONED_ROWS


def test_corrupt_file_stops_without_advancing_then_resumes(tmp_path: Path, down: MysqlTarget) -> None:
    t = table("db", "t")
    tree = Tree(tmp_path)
    tree.schema(t, V1)
    run_sql(down, "CREATE DATABASE db", "CREATE TABLE db.t (id INT PRIMARY KEY, v VARCHAR(20))")
    tree.data("db", "t", V1, 1, [csv_row("I", "db", "t", V1 + 1, 1, "a")])
    good = csv_row("I", "db", "t", V1 + 2, 2, "b")
    bad = tree.data("db", "t", V1, 2, [good[:10]])
    tree.data("db", "t", V1, 3, [csv_row("I", "db", "t", V1 + 3, 3, "c")])
    tree.metadata(V1 + 10)
    c = _consumer(tmp_path, down, batch_rows=1)
    with pytest.raises(CorruptDataError, match=bad):
        c.run_once()
    c.close()
    assert _rows(down, "SELECT id FROM db.t ORDER BY id") == [(1,)]
    assert _rows(down, "SELECT file_index, row_offset FROM sparkcdc_consumer.checkpoint WHERE part=0") == [(1, 1)]
    (tmp_path / bad).write_bytes(good.encode())  # repaired
    c = _consumer(tmp_path, down)
    c.run_once()
    c.close()
    assert _rows(down, "SELECT id FROM db.t ORDER BY id") == [(1,), (2,), (3,)]


def _age_checkpoints(t: MysqlTarget) -> None:
    """The consumer's last writes as if a minute ago (CREATE_TIME has whole seconds: a table recreated in the same
    second as the last checkpoint would not show as newer)."""
    run_sql(t, "UPDATE sparkcdc_consumer.checkpoint SET updated_at = updated_at - INTERVAL 1 MINUTE")


def test_a_dropped_or_recreated_downstream_stops_it_until_the_checkpoints_are_reset(
    tmp_path: Path, down: MysqlTarget
) -> None:
    """Issue 26, item 7: the checkpoints survive a DROP DATABASE of the user's schema, and a new run applied nothing
    without a word. Now it refuses in one line naming the table, missing or recreated empty, until it starts over."""
    t = table("db", "t")
    tree = Tree(tmp_path, width=6)
    tree.db_schema("db", V1, "CREATE DATABASE `db`", DDLAction.CREATE_SCHEMA)
    tree.schema(t, V1 + 10, "CREATE TABLE `t` (id INT PRIMARY KEY, v VARCHAR(20))", DDLAction.CREATE_TABLE)
    tree.data("db", "t", V1 + 10, 1, [csv_row("I", "db", "t", V1 + 20, 1, "a"),
                                      csv_row("I", "db", "t", V1 + 21, 2, "b")])  # fmt: skip
    tree.metadata(V1 + 80)
    c = _consumer(tmp_path, down)
    assert c.run_once()
    c.close()
    run_sql(down, "DROP DATABASE db")

    again = _consumer(tmp_path, down)
    with pytest.raises(SparkcdcError) as e:
        again.run_once()
    assert e.value.code == ERR_AHEAD and "\n" not in e.value.message
    assert "consumer 'default' applied rows to db.t (last at " in e.value.message
    assert "but that table is missing" in e.value.message and "--reset-checkpoints" in e.value.message
    again.close()
    assert run_sql(down, "SHOW DATABASES LIKE 'db'") == []  # nothing was done: not even t recreated from its schema

    _age_checkpoints(down)
    run_sql(down, "CREATE DATABASE db", "CREATE TABLE db.t (id INT PRIMARY KEY, v VARCHAR(20))")  # by hand, empty
    recreated = _consumer(tmp_path, down)
    with pytest.raises(SparkcdcError, match=r"applied rows to db\.t .*but that table is empty and was created after"):
        recreated.run_once()
    recreated.close()

    over = _consumer(tmp_path, down)
    assert over.target.reset_checkpoints() == 3  # the database's and the table's DDL streams, the data stream
    assert over.run_once()
    over.close()
    assert _rows(down, "SELECT id, v FROM db.t ORDER BY id") == [(1, "a"), (2, "b")]
    assert over.stats.rows_applied == 2


def test_a_table_the_consumer_dropped_itself_is_no_reason_to_stop(tmp_path: Path, down: MysqlTarget) -> None:
    t = table("db", "t")
    tree = Tree(tmp_path, width=6)
    tree.db_schema("db", V1, "CREATE DATABASE `db`", DDLAction.CREATE_SCHEMA)
    tree.schema(t, V1 + 10, "CREATE TABLE `t` (id INT PRIMARY KEY, v VARCHAR(20))", DDLAction.CREATE_TABLE)
    tree.data("db", "t", V1 + 10, 1, [csv_row("I", "db", "t", V1 + 20, 1, "a")])
    tree.schema(t, V1 + 30, "DROP TABLE `t`", DDLAction.DROP_TABLE)
    tree.metadata(V1 + 80)
    c = _consumer(tmp_path, down)
    assert c.run_once() and c.stats.ddls_executed == 3
    c.close()
    assert run_sql(down, "SHOW TABLES FROM db") == []
    again = _consumer(tmp_path, down)
    assert again.run_once()  # no refusal: the consumer's own DROP TABLE explains the missing table
    again.close()
    assert again.stats.rows_applied == 0
