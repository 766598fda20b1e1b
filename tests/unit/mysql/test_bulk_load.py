"""The bulk path's planning, pure: which batches become a LOAD DATA, the file it sends and the clauses that read it
back (the server side is ``tests/integration/sink/test_mysql_bulk_load.py``)."""

from __future__ import annotations

from decimal import Decimal

from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo
from sparkcdc.mysql.bulk_load import LOAD_FORMAT, BulkLoad, load_columns
from sparkcdc.mysql.statements import plan_batch
from sparkcdc.sink.mysql.encoder import render_rows

T = TableInfo("db", "t", 1, (
    ColumnInfo("id", "int", primary_key=True, handle_key=True, nullable=False),
    ColumnInfo("v", "varchar"), ColumnInfo("b", "blob"), ColumnInfo("bits", "bit"), ColumnInfo("y", "year"),
    ColumnInfo("d", "decimal"), ColumnInfo("g", "int", generated="virtual"),
))  # fmt: skip
NOKEY = TableInfo("db", "k", 2, (ColumnInfo("a", "int"), ColumnInfo("b", "varchar")))


def _ins(values: tuple[object, ...], t: TableInfo = T) -> RowChange:
    return RowChange(1, t, RowOp.INSERT, None, values)


def test_load_columns_read_bytes_through_unhex_and_numbers_cast_for_bit_and_year() -> None:
    assert load_columns(T, (0, 1, 2, 3, 4, 5)) == (
        "(`id`,`v`,@c2,@c3,@c4,`d`) SET `b`=UNHEX(SUBSTRING(@c2,3,CHAR_LENGTH(@c2)-3)),"
        "`bits`=CAST(@c3 AS UNSIGNED),`y`=CAST(@c4 AS UNSIGNED)"
    )
    assert load_columns(T, (0, 1)) == "(`id`,`v`)"


def test_a_load_sends_the_replace_statements_tuples_one_per_line() -> None:
    load = BulkLoad("`db`.`t`", "(`id`,`v`)", ["(1,'a\\n')", "(2,NULL)"])
    assert load.data() == b"(1,'a\\n')\n(2,NULL)\n"
    assert load.statement("/tmp/x'y") == (
        f"LOAD DATA LOCAL INFILE '/tmp/x\\'y' REPLACE INTO TABLE `db`.`t` {LOAD_FORMAT} (`id`,`v`)"
    )


def test_row_changes_of_their_columns_kinds_load_after_the_deletes() -> None:
    row = (1, "it's", b"\x00", 5, 2024, Decimal("1.50"), 2)
    rows = [_ins(row), _ins((3, None, b"", None, None, None, 4)),
            RowChange(2, T, RowOp.DELETE, (3, None, b"", None, None, None, 4), None)]  # fmt: skip
    plan = plan_batch(rows, load_from=1)
    assert plan.statements[0] == "DELETE FROM `db`.`t` WHERE `id` IN (3)"
    load = plan.statements[1]
    assert isinstance(load, BulkLoad) and len(plan.statements) == 2
    assert list(load.items) == ["(1,'it\\'s',X'00',5,2024,1.50)"]  # the generated column is not written
    assert load.columns == load_columns(T, (0, 1, 2, 3, 4, 5))
    assert (plan.upserts, plan.deletes, plan.rows_in) == (1, 1, 3)
    replace = "REPLACE INTO `db`.`t` (`id`,`v`,`b`,`bits`,`y`,`d`) VALUES "
    assert plan_batch(rows).statements[1] == replace + load.items[0]


def test_rendered_rows_load_the_tuples_they_carry() -> None:
    rows = [_ins((1, "x", b"\x01", 1, 1999, Decimal(2), 2)), _ins((2, "y", None, 0, 2000, None, 3))]
    plan = plan_batch(render_rows(rows), load_from=1)
    (load,) = plan.statements
    assert isinstance(load, BulkLoad)
    assert list(load.items) == [r.values for r in render_rows(rows)]


def test_a_value_not_of_its_columns_kind_keeps_the_batch_to_statements() -> None:
    """A load reads each column's field in one form: text where bytes are due (or bytes in a text column, a float
    in a DECIMAL) would be stored differently from the statement's literal."""
    for odd in [(1, "x", "text in a blob", 1, 2000, None, 2), (1, b"bytes in text", None, 1, 2000, None, 2),
                (1, "x", None, 1, 2000, 1.5, 2)]:  # fmt: skip
        plan = plan_batch([_ins((2, "ok", None, None, None, None, 3)), _ins(odd)], load_from=1)
        assert all(isinstance(s, str) for s in plan.statements), odd
        assert plan.statements[0].startswith("REPLACE INTO")


def test_tables_without_a_key_never_load() -> None:
    plan = plan_batch([_ins((1, "x"), NOKEY)], load_from=1)
    assert plan.statements == ("INSERT INTO `db`.`k` (`a`,`b`) VALUES (1,'x')",)


def test_a_batch_below_the_threshold_keeps_to_statements() -> None:
    rows = [_ins((i, "x", None, None, None, None, i + 1)) for i in range(3)]
    assert all(isinstance(s, str) for s in plan_batch(rows, load_from=4).statements)
    assert isinstance(plan_batch(rows, load_from=3).statements[0], BulkLoad)
    assert all(isinstance(s, str) for s in plan_batch(rows).statements)  # 0: never
