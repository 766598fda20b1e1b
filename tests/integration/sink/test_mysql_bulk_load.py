"""The MySQL sink's bulk path on a real MariaDB: rendered rows' final images go in by ``LOAD DATA LOCAL INFILE …
REPLACE`` in the batch's transaction and end exactly as the REPLACE statements store them, for every column type
and any text or bytes; a value a column cannot hold fails the batch naming the table and column as the statement
does, with nothing applied; a warning or a server without LOCAL leaves the batch to statements. Generated tables and
rows of every type the capture decodes (``tests.unit.native.test_generated_rows``) end the same either way, or fail
alike."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sparkcdc.errors import SparkcdcError
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.steps import Checkpoint, RenderedRow
from sparkcdc.model.table import with_handle_keys
from sparkcdc.mysql import bulk_load
from sparkcdc.mysql.applier import MysqlApplier
from sparkcdc.mysql.bulk_load import BulkLoad
from sparkcdc.mysql.sql_values import literal
from sparkcdc.mysql.statements import plan_batch
from sparkcdc.mysql.target import MysqlTarget, quote_ident
from sparkcdc.sink.mysql.encoder import render_rows
from sparkcdc.sink.mysql.session import CHECKPOINT_SCHEMA
from tests.integration.consumer.servers import run_sql
from tests.unit.native.test_generated_rows import transactions

pytestmark = pytest.mark.integration

DB = "bulk_db"
_PK = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
# every kind of column the sink renders, and the clauses a load needs (CAST for bit/enum/set/year, UNHEX for bytes)
COLUMNS = (
    ("id", "int", "INT NOT NULL PRIMARY KEY"),
    ("i8", "tinyint", "TINYINT"),
    ("u64", "bigint", "BIGINT UNSIGNED"),
    ("b64", "bit", "BIT(64)"),
    ("b1", "bit", "BIT(1)"),
    ("e", "enum", "ENUM('x','y','z')"),
    ("s", "set", "SET('a','b','c')"),
    ("y", "year", "YEAR"),
    ("f", "float", "FLOAT"),
    ("d", "double", "DOUBLE"),
    ("dc", "decimal", "DECIMAL(30,10)"),
    ("c", "char", "CHAR(8)"),
    ("v", "varchar", "VARCHAR(200)"),
    ("tx", "text", "TEXT"),
    ("bn", "binary", "BINARY(4)"),
    ("vb", "varbinary", "VARBINARY(200)"),
    ("bl", "blob", "BLOB"),
    ("dt", "date", "DATE"),
    ("ts", "datetime", "DATETIME(6)"),
    ("tm", "time", "TIME(3)"),
    ("js", "json", "JSON"),
)
T = TableInfo(DB, "t", 1, with_handle_keys(tuple(
    ColumnInfo(n, t, unsigned=(n == "u64"), nullable=(n != "id"),
               elements=(("x", "y", "z") if t == "enum" else ("a", "b", "c") if t == "set" else ()))
    for n, t, _ in COLUMNS), _PK), _PK, 1)  # fmt: skip
S = replace(T, table="s", table_id=2)
NASTY = ["", "NULL", "\\N", "it's", "a\\", "\\", "'", '"', "\n", "\r\n", "\t", "\0", "\x1a", ",", ")", "(", "),(",
         ")\n(", "X'41'", "  spaced  ", "中文😀𠀋", "é", "\\'", "'\\"]  # fmt: skip


def _row(i: int, text: str = "plain", blob: bytes = b"\x00\xff", number: float = 1.5) -> tuple[Any, ...]:
    return (i, -128, 2**64 - 1, 2**64 - 1, 1, 3, 5, 0, 0.1, number, Decimal("-1234567890.0123456789"), "ab ",
            text, text, b"\x00\x01\x00\x00", blob, blob, "0000-00-00", "2024-02-30 23:59:59.000001", "-838:59:59.000",
            '{"a": [1, "x"]}')  # fmt: skip


@pytest.fixture
def downstream(target: MysqlTarget, monkeypatch: pytest.MonkeyPatch) -> Iterator[MysqlTarget]:
    """The test tables, and loads from one row (the applier's threshold, ``bulk_load.MIN_ROWS``, is for speed)."""
    monkeypatch.setattr(bulk_load, "MIN_ROWS", 1)
    definition = ", ".join(f"`{n}` {sql}" for n, _, sql in COLUMNS)
    run_sql(target, f"DROP DATABASE IF EXISTS {DB}", f"DROP DATABASE IF EXISTS {CHECKPOINT_SCHEMA}",
            f"CREATE DATABASE {DB} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
            *(f"CREATE TABLE {DB}.{t} ({definition})" for t in ("t", "s")))  # fmt: skip
    yield target
    run_sql(target, "SET GLOBAL local_infile=1", f"DROP DATABASE IF EXISTS {DB}")


def _status(t: MysqlTarget) -> dict[str, int]:
    return {k: int(v) for k, v in run_sql(t, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_load', 'Com_replace')")}


def _apply(t: MysqlTarget, rows: list[Any], table: str = "t", ts: int = 10) -> MysqlApplier:
    applier = MysqlApplier(t, changefeed="bulk", checkpoint_schema=CHECKPOINT_SCHEMA)
    applier.apply(rows, Checkpoint(DB, table, -2, commit_ts=ts))
    return applier


def _contents(t: MysqlTarget, table: str) -> list[tuple[Any, ...]]:
    cols = ",".join(f"HEX(`{n}`)" if n in ("b64", "b1") else f"`{n}`" for n, _, _ in COLUMNS)
    return run_sql(t, f"SELECT {cols} FROM {DB}.{table} ORDER BY id")


def _checkpoints(t: MysqlTarget) -> list[tuple[Any, ...]]:
    return run_sql(t, f"SELECT tbl, commit_ts FROM {CHECKPOINT_SCHEMA}.checkpoint WHERE changefeed='bulk' ORDER BY tbl")


def _statements_only(t: MysqlTarget) -> MysqlTarget:
    return replace(t, params=(*t.params, ("bulk-load", "false")))


def _s_rows(values: list[tuple[Any, ...]]) -> list[RowChange]:
    return [RowChange(10, S, RowOp.INSERT, None, v) for v in values]


def _both(t: MysqlTarget, values: list[tuple[Any, ...]]) -> None:
    """The rows rendered into ``t`` (bulk) and as RowChanges into ``s`` by statements (``bulk-load=false``), each
    with its checkpoint."""
    rows = [RowChange(10, T, RowOp.INSERT, None, v) for v in values]
    before = _status(t)
    _apply(t, render_rows(rows)).close()
    _apply(_statements_only(t), _s_rows(values), table="s").close()
    after = _status(t)
    assert after["Com_load"] == before["Com_load"] + 1  # one load for the rendered rows, no REPLACE statement
    assert after["Com_replace"] == before["Com_replace"] + 1  # the RowChanges' REPLACE (checkpoints are INSERTs)


def test_a_load_stores_exactly_what_the_statements_store(downstream: MysqlTarget) -> None:
    values = [_row(i, text, text.encode("utf-8")) for i, text in enumerate(NASTY)]
    values += [_row(100, "x", b"", 0.0), _row(101, "y", b"\\", -0.0), _row(102, "z", b"'", 1e300),
               _row(103, "w", b"\n", 5e-324), (104, *[None] * (len(COLUMNS) - 1))]  # fmt: skip
    _both(downstream, values)
    got = _contents(downstream, "t")
    assert got == _contents(downstream, "s")
    assert [r[12] for r in got[: len(NASTY)]] == NASTY  # the text itself, not its literal
    assert got[-1][1:] == (None,) * (len(COLUMNS) - 1)  # NULL, not the word
    assert _checkpoints(downstream) == [("s", 10), ("t", 10)]


def test_row_changes_of_their_columns_kinds_load_too(downstream: MysqlTarget) -> None:
    """The Python path and the consumers hand the applier RowChanges: loaded when every value is of its column's
    kind, stored as the statements store them."""
    values = [_row(i, text, text.encode("utf-8")) for i, text in enumerate(NASTY)] + [(99, *[None] * 20)]
    before = _status(downstream)
    _apply(downstream, [RowChange(10, T, RowOp.INSERT, None, v) for v in values]).close()
    assert _status(downstream)["Com_load"] == before["Com_load"] + 1
    _apply(_statements_only(downstream), _s_rows(values), table="s").close()
    assert _contents(downstream, "t") == _contents(downstream, "s")


_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_TEXT, st.binary(max_size=40), st.floats(allow_nan=False, allow_infinity=False),
                          st.integers(-128, 127)), min_size=1, max_size=20))  # fmt: skip
def test_any_text_bytes_and_numbers_load_as_the_statements_store_them(
    downstream: MysqlTarget, values: list[tuple[str, bytes, float, int]]
) -> None:
    run_sql(downstream, f"DELETE FROM {DB}.t", f"DELETE FROM {DB}.s")
    rows = []
    for i, (text, blob, number, small) in enumerate(values):
        row = list(_row(i, text, blob, number))
        row[1] = small
        rows.append(tuple(row))
    _both(downstream, rows)
    assert _contents(downstream, "t") == _contents(downstream, "s")


@pytest.mark.parametrize(("column", "value", "reason"), [
    ("v", "x" * 201, "Data too long"), ("i8", 128, "Out of range"), ("dt", "2024-13-45", "Incorrect date value"),
    ("dc", Decimal("1.00000000001"), "Data truncated"), ("bn", b"12345", "Data too long"),
    ("e", 4, "Data truncated"),
])  # fmt: skip
def test_a_value_the_column_cannot_hold_fails_the_batch_naming_table_and_column(
    downstream: MysqlTarget, column: str, value: Any, reason: str
) -> None:
    pos = [n for n, _, _ in COLUMNS].index(column)
    good, bad = _row(1), list(_row(2))
    bad[pos] = value
    rows = [RowChange(10, T, RowOp.INSERT, None, good), RowChange(10, T, RowOp.INSERT, None, tuple(bad))]
    before = _status(downstream)
    with pytest.raises(SparkcdcError) as bulk:
        _apply(downstream, render_rows(rows)).close()
    assert _status(downstream)["Com_load"] == before["Com_load"] + 1
    with pytest.raises(SparkcdcError) as statement:
        _apply(_statements_only(downstream), rows).close()
    assert f"writing {DB}.t column {column} would lose data: {reason}" in bulk.value.message
    assert bulk.value.message == statement.value.message  # as today's, word for word
    assert bulk.value.code == "CDC:ErrMySQLTxnError" and not bulk.value.retryable
    assert run_sql(downstream, f"SELECT COUNT(*) FROM {DB}.t") == [(0,)]  # the good row went back too
    assert _checkpoints(downstream) == []


def test_a_latin1_column_cannot_take_text_outside_latin1(downstream: MysqlTarget) -> None:
    run_sql(downstream, f"ALTER TABLE {DB}.t MODIFY v VARCHAR(200) CHARACTER SET latin1")
    with pytest.raises(SparkcdcError, match=f"writing {DB}.t column v would lose data: Incorrect string value"):
        _apply(downstream, render_rows([RowChange(10, T, RowOp.INSERT, None, _row(1, "中文"))])).close()
    assert run_sql(downstream, f"SELECT COUNT(*) FROM {DB}.t") == [(0,)]


def test_a_refused_load_rolls_back_and_statements_apply_the_batch(
    downstream: MysqlTarget, caplog: pytest.LogCaptureFixture
) -> None:
    applier = _apply(downstream, render_rows([RowChange(10, T, RowOp.INSERT, None, _row(1))]))  # bulk-loaded
    run_sql(downstream, "SET GLOBAL local_infile=0")  # after the connection found LOCAL allowed
    before = _status(downstream)
    with caplog.at_level(logging.WARNING, logger="sparkcdc.mysql.applier"):
        applier.apply(render_rows([RowChange(11, T, RowOp.DELETE, _row(1), None),
                                   RowChange(11, T, RowOp.INSERT, None, _row(2))]),
                      Checkpoint(DB, "t", -2, commit_ts=11))  # fmt: skip
    after = _status(downstream)
    assert after["Com_load"] == before["Com_load"] + 1  # tried, refused, rolled back (with the DELETE before it)
    assert after["Com_replace"] == before["Com_replace"] + 1  # the batch's REPLACE
    assert "LOAD DATA LOCAL failed" in caplog.text and "go as statements" in caplog.text
    run_sql(downstream, "SET GLOBAL local_infile=1")
    applier.apply(render_rows([RowChange(12, T, RowOp.INSERT, None, _row(3))]), Checkpoint(DB, "t", -2, commit_ts=12))
    applier.close()
    assert _status(downstream)["Com_load"] == after["Com_load"]  # this connection keeps to statements
    assert [r[0] for r in run_sql(downstream, f"SELECT id FROM {DB}.t ORDER BY id")] == [2, 3]
    assert _checkpoints(downstream) == [("t", 12)]


def test_a_downstream_without_local_infile_gets_statements(downstream: MysqlTarget) -> None:
    run_sql(downstream, "SET GLOBAL local_infile=0")
    before = _status(downstream)
    _apply(downstream, render_rows([RowChange(10, T, RowOp.INSERT, None, _row(1))])).close()
    after = _status(downstream)
    assert after["Com_load"] == before["Com_load"] and after["Com_replace"] == before["Com_replace"] + 1
    assert run_sql(downstream, f"SELECT id FROM {DB}.t") == [(1,)]


def test_the_connection_sends_no_local_file_outside_its_own_loads(downstream: MysqlTarget, tmp_path: Any) -> None:
    applier = _apply(downstream, render_rows([RowChange(10, T, RowOp.INSERT, None, _row(1))]))
    secret = tmp_path / "secret.txt"
    secret.write_text("2\n")
    try:
        with applier._connection().cursor() as cur, pytest.raises(RuntimeError, match="local_infile option is false"):
            cur.execute(f"LOAD DATA LOCAL INFILE '{secret}' INTO TABLE {DB}.t (id)")
    finally:
        applier.close()
    assert run_sql(downstream, f"SELECT id FROM {DB}.t") == [(1,)]


def test_rendered_rows_keep_their_deletes_and_updates(downstream: MysqlTarget) -> None:
    """Compaction before the load: the last image of each key, deleted keys gone, a key change moves the row."""
    rows = [RowChange(10, T, RowOp.INSERT, None, _row(i)) for i in range(1, 6)]
    rows += [RowChange(11, T, RowOp.DELETE, _row(2), None), RowChange(11, T, RowOp.UPDATE, _row(3), _row(30, "moved")),
             RowChange(12, T, RowOp.UPDATE, _row(4), _row(4, "changed"))]  # fmt: skip
    rendered = render_rows(rows)
    assert all(isinstance(r, RenderedRow) for r in rendered)
    _apply(downstream, rendered, ts=12).close()
    assert run_sql(downstream, f"SELECT id, v FROM {DB}.t ORDER BY id") == [
        (1, "plain"), (4, "changed"), (5, "plain"), (30, "moved")]  # fmt: skip


def _ddl(table: TableInfo, name: str) -> str:
    """``CREATE TABLE`` for a generated table (``tests.unit.native.test_generated_rows.transactions``)."""
    cols = []
    for c in table.columns:
        t = c.type
        sql = t.upper()
        if t in ("tinyint", "smallint", "mediumint", "int", "bigint"):
            sql += " UNSIGNED" if c.unsigned else ""
        elif t == "decimal":
            sql = f"DECIMAL({c.length or 10},{c.decimal or 0})"
        elif t in ("datetime", "timestamp", "time"):
            sql = f"{sql}({c.decimal or 0})"
        elif t in ("bit", "binary", "varbinary"):
            sql = f"{sql}({c.length})"
        elif t in ("enum", "set"):
            sql = f"{sql}({','.join(literal(e) for e in c.elements)})"
        elif t in ("char", "varchar") or t.endswith("text"):
            sql = (f"{sql}({c.length})" if t in ("char", "varchar") else sql) + f" CHARACTER SET {c.charset}"
        cols.append(f"{quote_ident(c.name)} {sql} {'NULL' if c.nullable else 'NOT NULL'}")
    keys = [f"{'PRIMARY KEY' if i.primary else 'UNIQUE KEY ' + quote_ident(i.name)} "
            f"({','.join(quote_ident(k) for k in i.columns)})" for i in table.indexes]  # fmt: skip
    return f"CREATE TABLE {DB}.{name} ({', '.join(cols + keys)})"


def _outcome(t: MysqlTarget, rows: list[Any], table: str) -> tuple[str, Any]:
    try:
        _apply(t, rows, table=table).close()
    except SparkcdcError as e:
        return "failed", e.message.replace(f"{DB}.{table}", f"{DB}.?").replace(f"`{table}`", "`?`")
    return "applied", run_sql(t, f"SELECT * FROM {DB}.{table} ORDER BY 1")


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(transactions())
def test_generated_rows_of_every_type_load_as_the_statements_store_them_or_fail_alike(
    downstream: MysqlTarget, txn: tuple[TableInfo, list[RowChange]]
) -> None:
    """Every MySQL type the capture decodes, with generated values (edge numbers, zero and invalid dates, every fsp,
    every charset): the bulk load stores exactly what the statements store, or both fail the batch with the same
    message, with nothing of it committed."""
    table, rows = txn
    assume(not any(c.type == "set" and any("," in e for e in c.elements) for c in table.columns))  # no SET form
    assume(not any(c.type in ("enum", "set") and len({e.rstrip() for e in c.elements}) < len(c.elements)
                   for c in table.columns))  # fmt: skip  # the server strips trailing spaces of elements
    for name in ("g_t", "g_s"):
        run_sql(downstream, f"DROP TABLE IF EXISTS {DB}.{name}", _ddl(table, name))
    bulk_table, statement_table = (replace(table, schema=DB, table=n) for n in ("g_t", "g_s"))
    bulk_rows = [replace(r, table=bulk_table) for r in rows]
    rendered = render_rows(bulk_rows)
    loads = sum(isinstance(s, BulkLoad) for s in plan_batch(rendered, load_from=1).statements)  # 0: all deleted
    before = _status(downstream)
    bulk = _outcome(downstream, rendered, "g_t")
    assert _status(downstream)["Com_load"] == before["Com_load"] + loads
    statements = _outcome(_statements_only(downstream), [replace(r, table=statement_table) for r in rows], "g_s")
    assert bulk == statements
    if bulk[0] == "failed":
        assert run_sql(downstream, f"SELECT COUNT(*) FROM {DB}.g_t") == [(0,)]


def test_a_batch_below_the_threshold_goes_as_statements(
    downstream: MysqlTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk_load, "MIN_ROWS", 3)
    before = _status(downstream)
    _apply(downstream, render_rows([RowChange(10, T, RowOp.INSERT, None, _row(i)) for i in (1, 2)])).close()
    assert _status(downstream)["Com_load"] == before["Com_load"]
    _apply(downstream, render_rows([RowChange(11, T, RowOp.INSERT, None, _row(i)) for i in (3, 4, 5)]), ts=11).close()
    assert _status(downstream)["Com_load"] == before["Com_load"] + 1
    assert [r[0] for r in run_sql(downstream, f"SELECT id FROM {DB}.t ORDER BY id")] == [1, 2, 3, 4, 5]
