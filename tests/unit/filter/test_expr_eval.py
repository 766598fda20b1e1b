"""The expression evaluator against TiDB's semantics: a row of every kind of value, as the capture types them
(``sparkcdc.model.column_type``), and expressions whose TiDB result is known (1 = the row matches)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.filter.expr_compile import compile_predicate, parse_expression
from sparkcdc.filter.expr_errors import ExprEvalError
from sparkcdc.model.table import ColumnInfo, TableInfo

TABLE = TableInfo("db", "t", 1, (
    ColumnInfo("id", "int"),
    ColumnInfo("big", "bigint", unsigned=True),
    ColumnInfo("name", "varchar", collation="utf8mb4_general_ci"),
    ColumnInfo("empty", "varchar"),
    ColumnInfo("nothing", "int"),
    ColumnInfo("price", "decimal", length=10, decimal=2),
    ColumnInfo("ratio", "double"),
    ColumnInfo("color", "enum", elements=("red", "green", "blue")),
    ColumnInfo("tags", "set", elements=("a", "b", "c")),
    ColumnInfo("born", "date"),
    ColumnInfo("seen", "datetime", decimal=3),
    ColumnInfo("zero", "date"),
    ColumnInfo("span", "time"),
    ColumnInfo("raw", "varbinary"),
    ColumnInfo("doc", "json"),
    ColumnInfo("flag", "bit"),
))  # fmt: skip
ROW = (7, 18446744073709551615, "Zoë Ab", "", None, Decimal("12.50"), 0.25, 2, 0b101, "2024-02-29",
       "2024-03-01 08:09:10.500", "0000-00-00", "-12:30:00", b"\x00ab", '{"a": 1}', 1)  # fmt: skip


def value(expr: str, row: tuple[Any, ...] = ROW) -> Any:
    return compile_predicate(parse_expression(expr), expr, TABLE)(row)


MATCH = [
    # comparisons and coercions
    "id = 7", "id = '7'", "id = '7abc'", "id = 7.0", "id <> 8", "id != 8", "id >= 7 AND id <= 7", "'10' > 9",
    "big = 18446744073709551615", "big > 9223372036854775807", "price = 12.5", "price = '12.50'", "price > 12",
    "ratio = 0.25", "ratio < price", "id + 0.5 = 7.5", "'abc' = 0", "flag = 1",
    # strings: binary comparison (TiCDC runs TiDB without new collations), trailing spaces count
    "name = 'Zoë Ab'", "NOT name = 'zoë ab'", "name > 'Z'", "empty = ''", "NOT empty = ' '", "raw = x'006162'",
    "doc = '{\"a\": 1}'",
    # ENUM by name or index, SET by names or bitmask
    "color = 'green'", "color = 2", "NOT color = 'GREEN'", "color IN ('blue', 'green')", "tags = 'a,c'", "tags = 5",
    "color + 0 = 2",
    # temporal values against text, other temporal values and numbers
    "born = '2024-02-29'", "born = '2024/2/29'", "born = '20240229'", "born < seen", "seen > '2024-03-01 08:09:10'",
    "seen = '2024-03-01 08:09:10.5'", "seen BETWEEN '2024-03-01' AND '2024-03-02'", "born = 20240229",
    "zero < born", "zero = '0000-00-00'", "span < '00:00:00'", "span = '-12:30'",
    # NULL: = and arithmetic give NULL (no match); IS, <=>, IFNULL see it
    "nothing IS NULL", "NOT nothing IS NOT NULL", "nothing <=> NULL", "NULL <=> NULL", "IFNULL(nothing, 3) = 3",
    "COALESCE(nothing, NULL, id) = 7", "(nothing = 1) IS NULL", "NOT (nothing IN (1, 2)) IS NOT NULL",
    "id IN (1, NULL, 7)", "nothing IS UNKNOWN", "NULLIF(id, 7) IS NULL",
    # logic: three-valued
    "id = 7 OR nothing = 1", "NOT (id = 8 AND nothing = 1)", "(id = 7 AND nothing = 1) IS NULL",
    "id = 7 XOR id = 8", "id = 7 && 1", "id = 8 || id = 7", "!(id = 8)", "id = 7 IS TRUE", "id = 8 IS FALSE",
    # LIKE: % and _, escape, binary case
    "name LIKE 'Zo%'", "name LIKE 'Z_ë Ab'", "NOT name LIKE 'zo%'", "name NOT LIKE '%x%'",
    "'50%' LIKE '50|%' ESCAPE '|'",
    "'a_c' LIKE 'a\\\\_c'", "NOT 'abc' LIKE 'a\\\\_c'", "raw LIKE CONCAT(x'0061', '%')", "name REGEXP '^Zo'",
    "NOT name RLIKE '^zo'",
    # arithmetic: MySQL's types
    "id / 2 = 3.5", "1 / 3 = 0.3333", "id DIV 2 = 3", "-7 DIV 2 = -3", "id % 4 = 3", "-7 % 4 = -3", "MOD(id, 4) = 3",
    "id / 0 IS NULL", "id DIV 0 IS NULL", "price * 2 = 25", "ratio * 4 = 1", "-id = -7", "id - 10 = -3",
    "id & 3 = 3", "id | 8 = 15", "id ^ 1 = 6", "id << 2 = 28", "~0 = 18446744073709551615",
    # functions
    "LENGTH(name) = 7", "CHAR_LENGTH(name) = 6", "OCTET_LENGTH(name) = 7", "UPPER(name) = 'ZOË AB'",
    "LOWER(name) = 'zoë ab'", "SUBSTRING(name, 1, 3) = 'Zoë'", "SUBSTRING(name, -2) = 'Ab'", "SUBSTR(name, 0) = ''",
    "MID(name, 5, 2) = 'Ab'", "LEFT(name, 2) = 'Zo'", "RIGHT(name, 2) = 'Ab'", "CONCAT(name, '-', id) = 'Zoë Ab-7'",
    "CONCAT(name, nothing) IS NULL", "CONCAT_WS(',', id, nothing, 'x') = '7,x'", "TRIM('  x  ') = 'x'",
    "LTRIM('  x') = 'x'", "RTRIM('x  ') = 'x'", "TRIM(BOTH 'x' FROM 'xxaxx') = 'a'",
    "REPLACE(name, 'Ab', 'Cd') = 'Zoë Cd'",
    "REVERSE('abc') = 'cba'", "LOCATE('Ab', name) = 5", "INSTR(name, 'Ab') = 5", "LOCATE('Ab', name, 6) = 0",
    "LPAD(id, 3, '0') = '007'", "RPAD('ab', 4, 'xy') = 'abxy'", "REPEAT('ab', 2) = 'abab'", "STRCMP('a', 'b') = -1",
    "ABS(-id) = 7", "SIGN(-2.5) = -1", "ROUND(price) = 13", "ROUND(2.5) = 3", "ROUND(-2.5) = -3",
    "ROUND(price, 1) = 12.5",
    "ROUND(ratio, 1) = 0.2", "ROUND(1234, -2) = 1200", "TRUNCATE(price, 1) = 12.5", "FLOOR(price) = 12",
    "CEIL(price) = 13",
    "CEILING(-1.5) = -1", "POW(2, 10) = 1024", "POWER(2, 0.5) > 1.41", "SQRT(16) = 4", "SQRT(-1) IS NULL",
    "GREATEST(id, 3, 9) = 9", "LEAST(id, 3, 9) = 3", "GREATEST(id, nothing) IS NULL",
    "IF(id > 5, 'big', 'small') = 'big'",
    "IF(nothing, 1, 0) = 0", "CASE WHEN id > 10 THEN 'a' WHEN id > 5 THEN 'b' ELSE 'c' END = 'b'",
    "CASE color WHEN 'green' THEN 1 ELSE 0 END = 1", "CAST(price AS SIGNED) = 13", "CAST('12abc' AS UNSIGNED) = 12",
    "CAST(id AS CHAR) = '7'", "CAST(ratio AS DECIMAL(10,1)) = 0.3", "CAST(seen AS DATE) = '2024-03-01'",
    "CAST('2024-1-2' AS DATETIME) = '2024-01-02 00:00:00'", "CONVERT(id, CHAR) = '7'",
    "DATE(seen) = '2024-03-01'", "YEAR(born) = 2024", "MONTH(born) = 2", "DAY(born) = 29", "DAYOFMONTH(seen) = 1",
    "HOUR(seen) = 8", "MINUTE(seen) = 9", "SECOND(seen) = 10", "HOUR(span) = 12", "QUARTER(seen) = 1",
    "DAYOFWEEK(born) = 5", "WEEKDAY(born) = 3", "DAYOFYEAR(seen) = 61", "DATEDIFF(seen, born) = 1",
    "YEAR(zero) = 0", "DAYOFWEEK(zero) IS NULL", "YEAR('2024-05-06') = 2024", "DATE('junk') IS NULL",
    # literals
    "1", "TRUE", "_utf8mb4'x' = 'x'", "N'x' = 'x'", "b'101' = 5", "0x41 = 'A'", "'x' COLLATE utf8mb4_bin = 'x'",
    "1e1 = 10",
]  # fmt: skip

NO_MATCH = [
    "id = 8", "nothing = 1", "nothing <> 1", "NOT nothing = 1", "nothing IN (1, 2)", "id IN (1, NULL)",
    "id NOT IN (1, NULL)", "nothing LIKE '%'", "nothing + 1 = 1", "NULL", "0", "FALSE", "name", "price", "ratio",
    "'1'", "1.0", "id = 7 AND nothing = 1", "color = 'GREEN'", "name = 'zoë ab'", "name LIKE 'zo%'",
    "span > '00:00:00'", "NULL = NULL", "id BETWEEN 8 AND 10", "id NOT BETWEEN 1 AND 10", "empty IS NULL",
    "IF(nothing = 1, 1, 0)", "CASE WHEN nothing THEN 1 END", "zero > born",
]  # fmt: skip


@pytest.mark.parametrize("expr", MATCH)
def test_matches(expr: str) -> None:
    assert value(expr) == 1


@pytest.mark.parametrize("expr", NO_MATCH)
def test_does_not_match(expr: str) -> None:
    assert value(expr) != 1


def test_enum_value_one_matches_as_ticdc_reads_it() -> None:
    """A bare ENUM result is read as its index (TiCDC's GetInt64 of an enum datum)."""
    assert value("color", (*ROW[:7], 1, *ROW[8:])) == 1


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("born > 'tomorrow'", "'tomorrow' is not a valid DATETIME value"),
        ("span > 'x'", "'x' is not a valid TIME value"),
        ("name REGEXP '('", "invalid regular expression '('"),
        ("SUBSTRING(name)", "SUBSTRING takes 2 or 3 arguments"),
        ("9223372036854775807 * 9223372036854775807 = 1", "BIGINT value is out of range"),
        ("name LIKE 'a' ESCAPE 'ab'", "Incorrect arguments to ESCAPE"),
        ("NOW() > seen", "function NOW() is not supported by sparkcdc"),
        ("id IN (SELECT 1)", "is not supported"),
        ("id = @v", "'@v' is not supported"),
        ("id = ?", "is not supported"),
        ("id = 1 ORDER BY id", "not a single expression"),
        ("id = 1; DROP TABLE t", "not a single expression"),
        ("id =", "There is a syntax error in: 'id ='"),
        ("id = 'open", "an unterminated string"),
    ],
)
def test_refused_when_compiled(expr: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as e:
        value(expr)
    assert e.value.code == "CDC:ErrInvalidFilterExpression"
    assert fragment in e.value.message


def test_row_errors_and_unknown_columns() -> None:
    with pytest.raises(ExprEvalError) as e:
        value("big + 1 > 0")  # past BIGINT UNSIGNED: TiDB's out-of-range error, on the row
    assert e.value.code == "CDC:ErrFailedToFilterDML"
    with pytest.raises(ExprEvalError):
        value("name REGEXP empty", (*ROW[:3], "(", *ROW[4:]))
    with pytest.raises(ConfigError) as c:
        value("Name = 'x' AND nope = 1")  # column names are case-insensitive; 'nope' is missing
    assert c.value.code == "CDC:ErrExpressionColumnNotFound" and "Cannot find column 'nope'" in c.value.message
    with pytest.raises(ConfigError) as c:
        value("other.id = 7")
    assert "Cannot find column 'other.id'" in c.value.message
    assert value("t.id = 7") == 1 and value("`id` = 7") == 1 and value("ID = 7") == 1


def test_non_constant_patterns_and_temporal_text() -> None:
    row = (*ROW[:3], "Z%", *ROW[4:])
    assert value("name LIKE empty", row) == 1
    assert value("empty LIKE 'Z\\\\%'", row) == 1
    row = (*ROW[:3], "2024-02-29 00:00:00", *ROW[4:])
    assert value("born = empty", row) == 1  # a string column against a DATE: compared as date-times
    assert value("HOUR(empty) = 0", row) == 1
