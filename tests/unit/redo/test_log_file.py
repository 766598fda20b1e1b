"""The redo log file format: records round-trip (with and without LZ4), and a file cut short or altered anywhere is
refused naming the file, never read as fewer records."""

from __future__ import annotations

from decimal import Decimal

import pytest

from sparkcdc.errors import CorruptDataError
from sparkcdc.model import ColumnInfo, DDLAction, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from sparkcdc.redo.log_file import DdlRecord, LogEncoder, RowsRecord, decode
from sparkcdc.sink.row_payload import pack, unpack

_IDX = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
T = TableInfo("db", "t", 7, with_handle_keys((ColumnInfo("id", "bigint", nullable=False, unsigned=True),
              ColumnInfo("d", "decimal", decimal=2), ColumnInfo("b", "blob", charset="binary"),
              ColumnInfo("s", "varchar", length=20)), _IDX), _IDX, 100)  # fmt: skip


def rows(ts: int) -> list[RowChange]:
    return [RowChange(ts, T, RowOp.INSERT, None, ((1 << 64) - 1, Decimal("-12.50"), b"\x00\xff", "é\U0001f600")),
            RowChange(ts, T, RowOp.UPDATE, (1, None, b"", ""), (2, Decimal("0.01"), None, "x")),
            RowChange(ts, T, RowOp.DELETE, (3, None, None, None), None)]  # fmt: skip


def encoded(lz4: bool) -> bytes:
    enc = LogEncoder(lz4=lz4)
    enc.add_rows(100, 1, T, 7, 3, pack(rows(100)))
    enc.add_ddl(101, 2, "db", "t", "ALTER TABLE `t` ADD COLUMN `x` INT", int(DDLAction.ADD_COLUMN))
    enc.add_rows(102, 3, T, 7, 3, pack(rows(102)))
    return enc.finish()


@pytest.mark.parametrize("lz4", [False, True])
def test_records_round_trip(lz4: bool) -> None:
    got = list(decode(encoded(lz4), "f.log"))
    assert [type(r) for r in got] == [RowsRecord, DdlRecord, RowsRecord]
    first = got[0]
    assert isinstance(first, RowsRecord) and first.table == T
    assert (first.commit_ts, first.seq, first.nrows) == (100, 1, 3)
    assert unpack(first.payload, first.table) == rows(100)
    assert got[1] == DdlRecord(101, 2, "db", "t", "ALTER TABLE `t` ADD COLUMN `x` INT", int(DDLAction.ADD_COLUMN))


def test_lz4_makes_it_smaller() -> None:
    assert len(encoded(True)) < len(encoded(False))


@pytest.mark.parametrize("lz4", [False, True])
def test_every_cut_is_refused_naming_the_file(lz4: bool) -> None:
    data = encoded(lz4)
    for n in range(len(data)):
        with pytest.raises(CorruptDataError) as e:
            list(decode(data[:n], "cf_x.log"))
        assert e.value.message.startswith("redo log cf_x.log") and "\n" not in e.value.message


def test_every_altered_byte_is_refused() -> None:
    data = encoded(False)
    for i in range(len(data)):
        bad = data[:i] + bytes((data[i] ^ 0x40,)) + data[i + 1 :]
        with pytest.raises(CorruptDataError, match=r"redo log f\.log"):
            list(decode(bad, "f.log"))


def test_bytes_after_the_end_and_another_file_are_refused() -> None:
    with pytest.raises(CorruptDataError, match="bytes after its end record"):
        list(decode(encoded(False) + b"\x00" * 9, "f.log"))
    with pytest.raises(CorruptDataError, match="not a redo log file"):
        list(decode(b"PAR1 something else", "f.log"))
