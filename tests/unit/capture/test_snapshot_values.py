"""Pure parts of the snapshot value reader: quoting, the select list and the row converter on raw bytes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from sparkcdc.capture.snapshot_values import connection_options, read_as, row_converter, select_list
from sparkcdc.capture.values import read_timestamp2
from sparkcdc.errors import ConfigError
from sparkcdc.model.table import ColumnInfo, TableInfo
from sparkcdc.mysql.target import quote_ident

TABLE = TableInfo(
    "db",
    "t",
    1,
    (
        ColumnInfo("id", "bigint", unsigned=True, nullable=False, primary_key=True, handle_key=True),
        ColumnInfo("we`ird", "float"),
        ColumnInfo("d", "double"),
        ColumnInfo("m", "decimal", length=6, decimal=2),
        ColumnInfo("y", "year"),
        ColumnInfo("b", "bit", length=10),
        ColumnInfo("e", "enum", elements=("a", "b")),
        ColumnInfo("s", "set", elements=("x", "y")),
        ColumnInfo("ts", "timestamp", decimal=3),
        ColumnInfo("dt", "datetime", decimal=2),
        ColumnInfo("l1", "varchar", charset="latin1"),
        ColumnInfo("u", "text"),
        ColumnInfo("j", "json", charset="utf8mb4"),
        ColumnInfo("bn", "binary", length=4),
        ColumnInfo("g", "geometry", generated="virtual"),
    ),
)


def test_identifiers_are_backtick_quoted_with_backticks_doubled() -> None:
    assert quote_ident("a") == "`a`"
    assert quote_ident("we`ird col") == "`we``ird col`"
    assert quote_ident("``") == "``````"


def test_select_list_uses_exact_expressions() -> None:
    assert select_list(TABLE) == (
        "`id`, CAST(`we``ird` AS DOUBLE), `d`, `m`, YEAR(`y`), `b`, CAST(`e` AS UNSIGNED), CAST(`s` AS UNSIGNED), "
        "UNIX_TIMESTAMP(`ts`), `dt`, `l1`, `u`, `j`, `bn`, `g`"
    )


def test_row_converter_turns_raw_bytes_into_model_values() -> None:
    raw = (
        b"18446744073709551615", b"1.0000001192092896", b"-1e22", b"0001.50", b"1900", b"\x02\x01", b"2",
        b"9223372036854775809", b"1717243200.250", b"2024-06-01 12:00:00.10", b"\x80\x81", "é".encode(),
        b'{"k": 1}', b"ab\x00\x00", b"\x00\x00\x00\x00\x01",
    )  # fmt: skip
    got = row_converter(TABLE, ZoneInfo("Asia/Shanghai"))(raw)
    assert got == (
        2**64 - 1, 1.0000001192092896, -1e22, Decimal("1.50"), 0, 513, 2, 1 << 63 | 1,
        "2024-06-01 20:00:00.250", "2024-06-01 12:00:00.10", "€\x81", "é", '{"k": 1}', b"ab\x00\x00",
        b"\x00\x00\x00\x00\x01",
    )  # fmt: skip
    assert str(got[3]) == "1.50" and type(got[0]) is int and type(got[1]) is float


def test_nulls_stay_none_and_zero_timestamps_match_the_decoder() -> None:
    convert = row_converter(TABLE, UTC)
    assert convert((None,) * len(TABLE.columns)) == (None,) * len(TABLE.columns)
    zero = convert((b"1",) + (None,) * 7 + (b"0.000",) + (None,) * 6)[8]
    assert zero == "0000-00-00 00:00:00.000" == read_timestamp2(bytes(6), 0, 3, UTC)


@pytest.mark.parametrize("fsp", [0, 1, 2, 3, 4, 5, 6])
def test_timestamp_fraction_digits_match_read_timestamp2(fsp: int) -> None:
    table = TableInfo("db", "t", 1, (ColumnInfo("ts", "timestamp", decimal=fsp),))
    digits = "123456"[:fsp]
    got = row_converter(table, UTC)((f"2147483647.{digits}".encode() if fsp else b"2147483647",))
    assert got == ("2038-01-19 03:14:07" + (f".{digits}" if fsp else ""),)


def test_vector_is_refused_with_the_column_named() -> None:
    table = TableInfo("db", "t", 1, (ColumnInfo("id", "int"), ColumnInfo("emb", "vector")))
    with pytest.raises(ConfigError, match=r"db\.t: column 'emb' has type VECTOR"):
        select_list(table)
    with pytest.raises(ConfigError, match="VECTOR"):
        row_converter(table, UTC)


def test_connection_options_ask_for_raw_unconverted_bytes() -> None:
    opts = connection_options()
    assert opts["use_unicode"] is False and opts["sql_mode"] == ""
    assert not any(isinstance(k, int) for k in opts["conv"])  # no decoders: every value stays bytes
    assert "character_set_results = binary" in opts["init_command"]


def _altered(**columns: ColumnInfo) -> TableInfo:
    """TABLE with the named columns replaced, as a DDL since start-ts left it (plus a column ADDed)."""
    cols = (*(columns.get(c.name, c) for c in TABLE.columns), ColumnInfo("region", "varchar", length=8))
    return replace(TABLE, columns=cols)


def test_a_copy_reads_each_start_ts_column_as_it_is_now_while_it_holds_the_same_kind_of_value() -> None:
    now = _altered(**{"l1": ColumnInfo("l1", "varchar", charset="utf8mb4", length=64),  # CONVERT, widened
                      "ts": ColumnInfo("ts", "timestamp", decimal=6), "d": ColumnInfo("d", "float"),
                      "m": ColumnInfo("m", "decimal", length=12, decimal=4), "id": ColumnInfo("id", "int"),
                      "e": ColumnInfo("e", "enum", elements=("a", "b", "c")),
                      "u": ColumnInfo("u", "varchar")})  # fmt: skip
    got = read_as(TABLE, now)
    assert [c.name for c in got.columns] == [c.name for c in TABLE.columns]  # the added column is not copied
    assert got.column("l1").charset == "utf8mb4" and got.column("ts").fsp == 6  # read exactly as it is now
    assert select_list(got).split(", ")[2] == "CAST(`d` AS DOUBLE)"  # a DOUBLE made FLOAT reads as a FLOAT
    raw = row_converter(got, UTC)([b"1", b"1.5", b"2.5", b"1.2345", b"99", b"1", b"3", b"1", b"0.000001",
                                   b"2020-01-01 00:00:00.00", "\u00e9".encode(), b"u", b"{}", b"ab", b"g"])  # fmt: skip
    assert raw[10] == "\u00e9" and raw[3] == Decimal("1.2345") and raw[6] == 3
    assert read_as(TABLE, TABLE) == TABLE


@pytest.mark.parametrize(
    ("column", "words"),
    [
        (ColumnInfo("m", "varchar"), "column 'm' changed from DECIMAL to VARCHAR"),
        (ColumnInfo("dt", "date"), "column 'dt' changed from DATETIME to DATE"),
        (ColumnInfo("ts", "datetime"), "column 'ts' changed from TIMESTAMP to DATETIME"),
        (ColumnInfo("u", "blob"), "column 'u' changed from TEXT to BLOB"),
        (ColumnInfo("e", "enum", elements=("b", "a")), "the members of ENUM column 'e' changed"),
        (ColumnInfo("s", "set", elements=("x",)), "the members of SET column 's' changed"),
        (ColumnInfo("y", "int"), "column 'y' changed from YEAR to INT"),
    ],
)
def test_a_column_that_holds_another_kind_of_value_now_cannot_be_copied(column: ColumnInfo, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        read_as(TABLE, _altered(**{column.name: column}))
    gone = replace(TABLE, columns=tuple(c for c in TABLE.columns if c.name != "b"))
    with pytest.raises(ValueError, match="column 'b' is gone"):
        read_as(TABLE, gone)
