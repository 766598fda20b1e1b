"""Pure SQL building: literals, compaction into multi-row statements, downstream URIs."""

from __future__ import annotations

from decimal import Decimal

import pytest

from sparkcdc.consumer.check import checksum_sql, parse_tables
from sparkcdc.consumer.table_def import create_database_sql, create_table_sql, table_info
from sparkcdc.errors import ConfigError, CorruptDataError, EncodeError
from sparkcdc.masking import mask_uri
from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo
from sparkcdc.mysql.sql_values import literal, row_tuple
from sparkcdc.mysql.statements import plan_batch
from sparkcdc.mysql.target import MysqlTarget, lossy_write_error
from sparkcdc.storage.schema_file import TableDefinition

T = TableInfo("db", "t", 1, (
    ColumnInfo("id", "int", primary_key=True, handle_key=True, nullable=False),
    ColumnInfo("v", "varchar"),
))  # fmt: skip
NOKEY = TableInfo("db", "k", 2, (ColumnInfo("a", "int"), ColumnInfo("b", "varchar")))


@pytest.mark.parametrize(
    ("value", "sql"),
    [
        (None, "NULL"), (0, "0"), (-(2**63), "-9223372036854775808"), (2**64 - 1, "18446744073709551615"),
        (True, "1"), (0.1, "0.1"), (1e300, "1e+300"), (Decimal("-12.50"), "-12.50"),
        ("it's \\ \n \0 \x1a \"", "'it\\'s \\\\ \\n \\0 \\Z \\\"'"), ("", "''"), (b"", "''"),
        (b"\x00\xff'", "X'00ff27'"), ("héllo", "'héllo'"),
    ],
)  # fmt: skip
def test_literals(value: object, sql: str) -> None:
    assert literal(value) == sql
    assert row_tuple([value, 1]) == f"({sql},1)"


def test_unrenderable_values_are_errors() -> None:
    with pytest.raises(EncodeError, match="nan"):
        literal(float("nan"))
    with pytest.raises(EncodeError, match="object"):
        row_tuple([object()])


def _r(op: RowOp, before: tuple[object, ...] | None, after: tuple[object, ...] | None, t: TableInfo = T) -> RowChange:
    return RowChange(1, t, op, before, after)


def test_compaction_last_image_wins_and_key_change_deletes_old() -> None:
    plan = plan_batch([
        _r(RowOp.INSERT, None, (1, "a")), _r(RowOp.UPDATE, (1, "a"), (1, "b")),
        _r(RowOp.UPDATE, (1, "b"), (2, "b")), _r(RowOp.INSERT, None, (3, "c")), _r(RowOp.DELETE, (3, "c"), None),
    ])  # fmt: skip
    assert plan.statements == (
        "DELETE FROM `db`.`t` WHERE `id` IN (1,3)",
        "REPLACE INTO `db`.`t` (`id`,`v`) VALUES (2,'b')",
    )
    assert (plan.upserts, plan.deletes, plan.rows_in) == (1, 2, 5)


def test_statements_split_under_the_size_limit() -> None:
    rows = [_r(RowOp.INSERT, None, (i, "x" * 50)) for i in range(100)]
    plan = plan_batch(rows, max_bytes=1000)
    assert len(plan.statements) > 5 and all(len(s) <= 1000 for s in plan.statements)
    assert sum(s.count("),(") + 1 for s in plan.statements) == 100


def test_keyless_tables_apply_in_order_null_safe() -> None:
    plan = plan_batch([
        _r(RowOp.INSERT, None, (1, None), NOKEY), _r(RowOp.UPDATE, (1, None), (1, "z"), NOKEY),
        _r(RowOp.DELETE, (1, "z"), None, NOKEY),
    ])  # fmt: skip
    assert plan.statements == (
        "INSERT INTO `db`.`k` (`a`,`b`) VALUES (1,NULL)",
        "UPDATE `db`.`k` SET `a`=1,`b`='z' WHERE `a` <=> 1 AND `b` <=> NULL LIMIT 1",
        "DELETE FROM `db`.`k` WHERE `a` <=> 1 AND `b` <=> 'z' LIMIT 1",
    )


def test_composite_keys_and_quoted_identifiers() -> None:
    t = TableInfo("d`b", "t t", 3, (
        ColumnInfo("a", "int", primary_key=True, handle_key=True, nullable=False),
        ColumnInfo("b`", "varchar", primary_key=True, handle_key=True, nullable=False),
    ))  # fmt: skip
    plan = plan_batch([_r(RowOp.DELETE, (1, "x"), None, t)])
    assert plan.statements == ("DELETE FROM `d``b`.`t t` WHERE (`a`,`b```) IN ((1,'x'))",)


def test_mysql_uri_parsing_and_masking() -> None:
    t = MysqlTarget.parse("mysql://u%40x:p%40ss@127.0.0.1:3307/?safe-mode=true&time-zone=UTC")
    assert (t.user, t.password, t.port, t.param("time-zone")) == ("u@x", "p@ss", 3307, "UTC")
    assert "p@ss" not in str(t) and "p@ss" not in repr(t)
    assert t.bulk_load and not MysqlTarget.parse("mysql://h/?bulk-load=false").bulk_load
    assert mask_uri("mysql://root:secret@h:1/") == "mysql://root:xxxxx@h:1/"
    for bad, msg in [
        ("ftp://h/", "unsupported downstream scheme"),
        ("mysql:///", "no host"),
        ("mysql://h/?nope=1", "unknown parameter 'nope'"),
        ("mysql://h:99999/", "invalid MySQL URI"),
        ("mysql://h/?bulk-load=no", "invalid bulk-load 'no' in MySQL URI: use true or false"),
    ]:
        with pytest.raises(ConfigError, match=msg):
            MysqlTarget.parse(bad)  # fmt: skip


def test_tables_option_and_checksum_sql() -> None:
    assert parse_tables("db.t, db2.*") == [("db", "t"), ("db2", "*")]
    with pytest.raises(ConfigError, match="'nodot'"):
        parse_tables("nodot")
    sql = checksum_sql("db", "t", ["a", "b"])
    assert "IFNULL(HEX(CAST(`a` AS BINARY)),'N')" in sql and "FROM `db`.`t`" in sql


def test_schema_file_to_table_info_and_create_table() -> None:
    info = TableInfo("db", "t", 1, (
        ColumnInfo("id", "bigint", unsigned=True, primary_key=True, nullable=False),
        ColumnInfo("d", "decimal", length=10, decimal=2), ColumnInfo("ts", "timestamp", decimal=3),
        ColumnInfo("b", "varbinary", length=8), ColumnInfo("y", "year", unsigned=True),
    ))  # fmt: skip
    defn = TableDefinition.from_table(info, 5)
    got = table_info(defn, source="x")
    assert [(c.name, c.type, c.unsigned, c.primary_key, c.nullable) for c in got.columns] == [
        ("id", "bigint", True, True, False), ("d", "decimal", False, False, True),
        ("ts", "timestamp", False, False, True), ("b", "varbinary", False, False, True),
        ("y", "year", True, False, True),
    ]  # fmt: skip
    assert got.handle_key_positions == (0,) and got.version == 5
    assert create_table_sql(defn, source="x") == (
        "CREATE TABLE IF NOT EXISTS `db`.`t` (`id` BIGINT UNSIGNED NOT NULL, `d` DECIMAL(10,2) NULL, "
        "`ts` TIMESTAMP(3) NULL, `b` VARBINARY(8) NULL, `y` YEAR NULL, PRIMARY KEY (`id`)) "
        "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    )
    assert create_database_sql("d`b") == (
        "CREATE DATABASE IF NOT EXISTS `d``b` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    )
    enum = TableDefinition.from_table(TableInfo("db", "e", 1, (ColumnInfo("e", "enum", elements=("a",)),)), 1)
    assert table_info(enum, source="x").columns[0].type == "varchar"
    with pytest.raises(CorruptDataError, match="create the table in the downstream first"):
        create_table_sql(enum, source="x")


@pytest.mark.parametrize(
    ("code", "message", "column", "fix"),
    [
        # MariaDB 10.11 names the column in full, MySQL only by name; both as the servers print them
        (1366, "Incorrect string value: '\\xE5\\xA5\\xBD...' for column `db`.`t`.`s` at row 2", "s",
         "ALTER TABLE `db`.`t` CONVERT TO CHARACTER SET utf8mb4"),
        (1366, "Incorrect string value: '\\xF0\\x9F\\x98\\x80' for column 'emoji' at row 1", "emoji",
         "CONVERT TO CHARACTER SET utf8mb4"),
        (1366, "Incorrect string value: 'x' for column `db`.`t`.`we``ird.c` at row 1", "we`ird.c",
         "CONVERT TO CHARACTER SET utf8mb4"),
        (1406, "Data too long for column 'short' at row 1", "short", "ALTER TABLE `db`.`t` MODIFY `short`"),
        (1265, "Data truncated for column 'd' at row 3", "d", "MODIFY `d`"),
        (1264, "Out of range value for column 'i' at row 1", "i", "widen it"),
        (1048, "Column 'n' cannot be null", "n", "make `db`.`t` match the upstream definition"),
        (1364, "Field 'extra' doesn't have a default value", "extra", "match the upstream definition"),
        (1366, "Incorrect integer value: 'x' for column `db`.`t`.`i` at row 1", "i", "match the upstream"),
    ],
)
def test_lossy_write_error_names_table_column_and_fix(code: int, message: str, column: str, fix: str) -> None:
    e = lossy_write_error(code, message, target=MysqlTarget.parse("mysql://u:pw@h:1/"), schema="db", table="t")
    assert e.code == "CDC:ErrMySQLTxnError" and not e.retryable
    assert f"writing db.t column {column} would lose data" in e.message
    assert fix in e.message and f"(MySQL error {code})" in e.message
    assert "the checkpoint stays before it" in e.message and "u:xxxxx@h:1" in e.message and ":pw@" not in e.message


def test_lossy_write_error_is_one_line_without_a_column() -> None:
    e = lossy_write_error(1292, "Truncated incorrect DOUBLE value:\n'x'", target=MysqlTarget.parse("mysql://h/"),
                          schema="db", table="t")  # fmt: skip
    assert "\n" not in e.message and "writing db.t would lose data: Truncated incorrect DOUBLE value: 'x'" in e.message
