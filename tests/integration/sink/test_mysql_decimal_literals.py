"""DECIMAL values reach a MariaDB column exactly through the MySQL sink's literals, on both paths: a value below
1e-6 written as ``str(Decimal)`` (``1.2345E-7``) is an approximate DOUBLE literal to the server, and a
DECIMAL(65,30) column then stores it rounded to ~17 digits, with no warning."""

from __future__ import annotations

from decimal import Decimal

import pytest

from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from sparkcdc.mysql.sql_values import literal
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.sink.mysql.encoder import render_rows
from tests.integration.consumer.servers import run_sql
from tests.unit.native.differential import mysql_native

pytestmark = pytest.mark.integration

VALUES = [
    Decimal("0.000000123456789012345678901234"),
    Decimal("-0.000000000000000000000000000001"),
    Decimal("12345678901234567890123456789012345.123456789012345678901234567890"),
    Decimal("0E-30"),
]
_PK = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
_COLUMNS = (ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "decimal", length=65, decimal=30))
TABLE = TableInfo("dec_db", "d", 1, with_handle_keys(_COLUMNS, _PK), _PK, 1)


def _stored(target: MysqlTarget, tuples: list[str]) -> list[Decimal]:
    return [r[0] for r in run_sql(
        target, "DROP DATABASE IF EXISTS dec_db", "CREATE DATABASE dec_db",
        "CREATE TABLE dec_db.d (id INT PRIMARY KEY, v DECIMAL(65,30))",
        f"INSERT INTO dec_db.d VALUES {','.join(tuples)}", "SELECT v FROM dec_db.d ORDER BY id")]  # fmt: skip


def test_the_python_literals_store_every_digit(target: MysqlTarget) -> None:
    assert _stored(target, [f"({i},{literal(v)})" for i, v in enumerate(VALUES)]) == VALUES


def test_the_native_kernel_renders_the_same_exact_literals(target: MysqlTarget) -> None:
    rows = [RowChange(10, TABLE, RowOp.INSERT, None, (i, v)) for i, v in enumerate(VALUES)]
    native = mysql_native(rows)
    assert native is not None, "the kernel must take DECIMAL rows"
    assert native == render_rows(rows)
    assert _stored(target, [r.values for r in native]) == VALUES
