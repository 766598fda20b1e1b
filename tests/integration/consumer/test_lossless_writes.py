"""No silent loss of text or digits in the downstream: tables the consumer creates are utf8mb4 whatever the
database's default, and a value an existing downstream column cannot hold stops the consumer with an error
naming the table and column, before its checkpoint moves past the row (issue 10, item 2)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from sparkcdc.consumer.runner import Consumer
from sparkcdc.consumer.storage_consumer import StorageSource
from sparkcdc.consumer.storage_reader import ReaderConfig
from sparkcdc.errors import SparkcdcError
from sparkcdc.model import ColumnInfo, DDLAction
from sparkcdc.mysql.engine import ApplyEngine
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.storage.external import ExternalStorage
from tests.integration.consumer.servers import run_sql
from tests.unit.consumer.trees import Tree, canal_row, csv_row, table

pytestmark = pytest.mark.integration

V1 = 440000000000000000
CSV = ReaderConfig("csv", "auto", (("include-commit-ts", True),))
CANAL = ReaderConfig("canal-json", "auto", (("enable-tidb-extension", True),))
# Chinese (3-byte UTF-8), emoji and other 4-byte characters (outside the BMP), accents, all with spaces kept
TEXTS = {1: " 好学生 ", 2: "😀🎉 ok", 3: "𠀋𝄞𝕏", 4: "é ß ñ", 5: "中文😀𠀋"}


@pytest.fixture()
def latin1_db(target: MysqlTarget) -> MysqlTarget:
    """A downstream whose database ``lat`` defaults to latin1 (as MariaDB's stock ``test`` database)."""
    run_sql(target, "DROP DATABASE IF EXISTS lat", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            "CREATE DATABASE lat CHARACTER SET latin1")  # fmt: skip
    assert run_sql(target, "SELECT default_character_set_name FROM information_schema.schemata "
                   "WHERE schema_name='lat'") == [("latin1",)]  # fmt: skip
    return target


def _consumer(root: Path, target: MysqlTarget, cfg: ReaderConfig = CSV, batch_rows: int = 20000) -> Consumer:
    source = StorageSource(ExternalStorage.from_uri(f"file://{root}"), cfg, batch_rows=batch_rows)
    return Consumer(source, ApplyEngine(target, workers=2))


def _run(root: Path, target: MysqlTarget, cfg: ReaderConfig = CSV, batch_rows: int = 20000) -> None:
    c = _consumer(root, target, cfg, batch_rows)
    try:
        c.run_once()
    finally:
        c.close()


def _hex_rows(t: MysqlTarget, sql: str) -> dict[int, str]:
    return {int(r[0]): r[1] for r in run_sql(t, sql)}


def _utf8_hex(texts: dict[int, str]) -> dict[int, str]:
    return {k: v.encode("utf-8").hex().upper() for k, v in texts.items()}


def _checkpoint(t: MysqlTarget) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in run_sql(t, "SELECT file_index, row_offset FROM sparkcdc_consumer.checkpoint "
                                                   "WHERE tbl='t' AND part >= 0")]  # fmt: skip


@pytest.mark.parametrize("protocol", ["csv", "canal-json"])
def test_created_table_is_utf8mb4_in_a_latin1_database(tmp_path: Path, latin1_db: MysqlTarget, protocol: str) -> None:
    tree = Tree(tmp_path, protocol=protocol)
    tree.schema(table("lat", "t"), V1)  # no CREATE TABLE in the tree: the consumer creates the table
    if protocol == "csv":
        lines = [csv_row("I", "lat", "t", V1 + i, i, v) for i, v in TEXTS.items()]
    else:
        lines = [canal_row("INSERT", "lat", "t", V1 + i, {"id": i, "v": v}) for i, v in TEXTS.items()]
    tree.data("lat", "t", V1, 1, lines)
    tree.metadata(V1 + 100)
    _run(tmp_path, latin1_db, CSV if protocol == "csv" else CANAL)
    # the stored bytes are exactly the UTF-8 of the upstream text (a latin1 column would hold '?' or fail)
    assert _hex_rows(latin1_db, "SELECT id, HEX(v) FROM lat.t") == _utf8_hex(TEXTS)
    column = "SELECT character_set_name, collation_name FROM information_schema.columns WHERE table_schema='lat'"
    assert run_sql(latin1_db, f"{column} AND table_name='t' AND column_name='v'") == [("utf8mb4", "utf8mb4_bin")]
    assert _checkpoint(latin1_db) == [(1, len(TEXTS))]


def test_created_database_is_utf8mb4(tmp_path: Path, latin1_db: MysqlTarget) -> None:
    run_sql(latin1_db, "DROP DATABASE IF EXISTS newdb")
    tree = Tree(tmp_path)
    tree.schema(table("newdb", "t"), V1)
    tree.data("newdb", "t", V1, 1, [csv_row("I", "newdb", "t", V1 + 1, 1, TEXTS[5])])
    tree.metadata(V1 + 100)
    # a server whose default is latin1 (the test server's is utf8mb4): a database created without a charset
    # would take it
    ((charset, collation),) = run_sql(latin1_db, "SELECT @@GLOBAL.character_set_server, @@GLOBAL.collation_server")
    run_sql(latin1_db, "SET GLOBAL character_set_server = latin1")
    try:
        _run(tmp_path, latin1_db)
    finally:
        run_sql(latin1_db, f"SET GLOBAL character_set_server = {charset}", f"SET GLOBAL collation_server = {collation}")
    try:
        assert run_sql(latin1_db, "SELECT default_character_set_name FROM information_schema.schemata "
                       "WHERE schema_name='newdb'") == [("utf8mb4",)]  # fmt: skip
        assert _hex_rows(latin1_db, "SELECT id, HEX(v) FROM newdb.t") == _utf8_hex({1: TEXTS[5]})
    finally:
        run_sql(latin1_db, "DROP DATABASE IF EXISTS newdb")


# (downstream definition of v, the value that does not fit, the column named, what the error says to do, repair)
CASES = {
    "latin1-column": ("VARCHAR(20) CHARACTER SET latin1", TEXTS[1], "v", "CONVERT TO CHARACTER SET utf8mb4",
                      "ALTER TABLE lat.t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"),
    "emoji-in-utf8mb3": ("VARCHAR(20) CHARACTER SET utf8mb3", TEXTS[2], "v", "CONVERT TO CHARACTER SET utf8mb4",
                         "ALTER TABLE lat.t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"),
    "too-short": ("VARCHAR(3)", "abcdef", "v", "ALTER TABLE `lat`.`t` MODIFY `v`",
                  "ALTER TABLE lat.t MODIFY v VARCHAR(20)"),
    "spaces-cut": ("VARCHAR(3)", "ab    ", "v", "MODIFY `v`", "ALTER TABLE lat.t MODIFY v VARCHAR(20)"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_value_the_existing_column_cannot_hold_stops_before_the_row(
    tmp_path: Path, latin1_db: MysqlTarget, case: str
) -> None:
    column_def, bad, column, fix, repair = CASES[case]
    run_sql(latin1_db, f"CREATE TABLE lat.t (id INT PRIMARY KEY, v {column_def})")
    tree = Tree(tmp_path)
    tree.schema(table("lat", "t"), V1)
    tree.data("lat", "t", V1, 1, [csv_row("I", "lat", "t", V1 + 1, 1, "a")])
    tree.data("lat", "t", V1, 2, [csv_row("I", "lat", "t", V1 + 2, 2, bad), csv_row("I", "lat", "t", V1 + 3, 3, "c")])
    tree.metadata(V1 + 100)
    c = _consumer(tmp_path, latin1_db, batch_rows=1)
    with pytest.raises(SparkcdcError) as info:
        c.run_once()
    c.close()
    e = info.value
    assert not e.retryable and e.code == "CDC:ErrMySQLTxnError"
    assert f"writing lat.t column {column} would lose data" in e.message and fix in e.message, e.message
    # nothing from the bad row on is in the downstream, and the checkpoint stays right before it
    assert _hex_rows(latin1_db, "SELECT id, HEX(v) FROM lat.t") == _utf8_hex({1: "a"})
    assert _checkpoint(latin1_db) == [(1, 1)]
    # a restart without a repair stops at the same row again
    with pytest.raises(SparkcdcError, match=f"column {column} would lose data"):
        _run(tmp_path, latin1_db)
    assert _checkpoint(latin1_db) == [(1, 1)]
    run_sql(latin1_db, repair)  # the fix the message names
    _run(tmp_path, latin1_db)
    assert _hex_rows(latin1_db, "SELECT id, HEX(v) FROM lat.t") == _utf8_hex({1: "a", 2: bad, 3: "c"})
    assert _checkpoint(latin1_db) == [(2, 2)]


def test_rounded_decimal_stops_though_strict_mode_only_notes_it(tmp_path: Path, latin1_db: MysqlTarget) -> None:
    # DECIMAL rounding is a note (1265) even in strict mode: only the warnings check catches it
    run_sql(latin1_db, "CREATE TABLE lat.t (id INT PRIMARY KEY, v VARCHAR(20), d DECIMAL(10,1))")
    t = table("lat", "t", ColumnInfo("d", "decimal", length=10, decimal=2))
    tree = Tree(tmp_path)
    tree.schema(t, V1)
    tree.data("lat", "t", V1, 1, [csv_row("I", "lat", "t", V1 + 1, 1, "a", "1.50")])  # 1.5: no digit lost
    tree.data("lat", "t", V1, 2, [csv_row("I", "lat", "t", V1 + 2, 2, "b", "1.25")])
    tree.metadata(V1 + 100)
    with pytest.raises(SparkcdcError, match=r"writing lat\.t column d would lose data: Data truncated .*MODIFY `d`"):
        _run(tmp_path, latin1_db, batch_rows=1)
    assert [tuple(r) for r in run_sql(latin1_db, "SELECT id, d FROM lat.t")] == [(1, Decimal("1.5"))]
    assert _checkpoint(latin1_db) == [(1, 1)]


def test_table_created_by_a_ddl_without_charset_stops_with_the_column(tmp_path: Path, latin1_db: MysqlTarget) -> None:
    # an upstream CREATE TABLE runs as written, so in a latin1 database it makes latin1 columns (as TiCDC's
    # MySQL sink does); the first row that needs more than latin1 then stops the consumer by name
    tree = Tree(tmp_path)
    tree.schema(table("lat", "t"), V1, "CREATE TABLE `t` (id INT PRIMARY KEY, v VARCHAR(20))", DDLAction.CREATE_TABLE)
    tree.data("lat", "t", V1, 1, [csv_row("I", "lat", "t", V1 + 1, 1, "a")])
    tree.data("lat", "t", V1, 2, [csv_row("I", "lat", "t", V1 + 2, 2, "😀")])
    tree.metadata(V1 + 100)
    with pytest.raises(SparkcdcError, match=r"writing lat\.t column v would lose data: Incorrect string value"):
        _run(tmp_path, latin1_db, batch_rows=1)
    assert _hex_rows(latin1_db, "SELECT id, HEX(v) FROM lat.t") == _utf8_hex({1: "a"})
    assert _checkpoint(latin1_db) == [(1, 1)]
