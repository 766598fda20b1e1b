"""MySQL columns -> Arrow: every value held exactly, none truncated."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from sparkcdc.lake.types import arrow_schema, arrow_type, to_arrow
from sparkcdc.model.table import ColumnInfo
from tests.unit.lake.support import key_col, table


@pytest.mark.parametrize(("col", "expected"), [
    (ColumnInfo("c", "tinyint"), pa.int32()),
    (ColumnInfo("c", "int", unsigned=True), pa.int64()),
    (ColumnInfo("c", "int"), pa.int32()),
    (ColumnInfo("c", "bigint"), pa.int64()),
    (ColumnInfo("c", "bigint", unsigned=True), pa.decimal128(20, 0)),
    (ColumnInfo("c", "bit", length=64), pa.decimal128(20, 0)),
    (ColumnInfo("c", "bit", length=8), pa.int64()),
    (ColumnInfo("c", "float"), pa.float32()),
    (ColumnInfo("c", "decimal", length=38, decimal=10), pa.decimal128(38, 10)),
    (ColumnInfo("c", "decimal"), pa.decimal128(10, 0)),
    (ColumnInfo("c", "decimal", length=65, decimal=30), pa.string()),
    (ColumnInfo("c", "datetime", decimal=6), pa.string()),
    (ColumnInfo("c", "varbinary", length=4), pa.binary()),
    (ColumnInfo("c", "enum", elements=("a", "b")), pa.string()),
    (ColumnInfo("c", "json"), pa.string()),
])  # fmt: skip
def test_type_mapping(col: ColumnInfo, expected: pa.DataType) -> None:
    assert arrow_type(col) == expected


def test_values_convert_exactly() -> None:
    t = table(
        key_col("id", "bigint", unsigned=True),
        ColumnInfo("big", "decimal", length=65, decimal=30),
        ColumnInfo("e", "enum", elements=("x", "y")),
        ColumnInfo("s", "set", elements=("a", "b", "c")),
        ColumnInfo("d", "date"),
        ColumnInfo("b", "blob"),
    )
    zero = Decimal("0." + "0" * 30)
    out = to_arrow(t, [(2**64 - 1, zero, 2, 0b101, "0000-00-00", b"\x00\xff"), (0, None, 0, 0, None, None)])
    assert out.schema == arrow_schema(t)
    assert out.to_pylist() == [
        {"id": Decimal(2**64 - 1), "big": "0." + "0" * 30, "e": "y", "s": "a,c", "d": "0000-00-00", "b": b"\x00\xff"},
        {"id": Decimal(0), "big": None, "e": "", "s": "", "d": None, "b": None},
    ]


def test_a_value_that_does_not_fit_fails_instead_of_truncating() -> None:
    t = table(key_col("id"), ColumnInfo("d", "decimal", length=5, decimal=1))
    with pytest.raises(pa.ArrowInvalid):
        to_arrow(t, [(1, Decimal("1.25"))])


def test_key_columns_not_null_others_nullable() -> None:
    s = arrow_schema(table(key_col("id"), ColumnInfo("v", "int", nullable=False)))
    assert [f.nullable for f in s] == [False, True]
