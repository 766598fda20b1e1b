"""The bytes hashed for each column value: TiCDC's ``model.ColumnValueString`` of the mounter's Go value.

The mounter (tiflow ``cdc/entry/mounter.go`` formatColVal) gives int64/uint64 for integers, BIT, ENUM and SET,
float32/float64 for FLOAT/DOUBLE, strings for DECIMAL, temporal types and JSON, []byte for strings and binary;
ColumnValueString prints integers in decimal, floats with ``FormatFloat(v, 'f', -1, bits)``, strings and bytes as
they are and nil as ``null``. Expected bytes below follow those rules (derived), and the hash itself is checked
against the spec's CRC vector.
"""

from __future__ import annotations

import zlib
from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.model import ColumnInfo
from sparkcdc.sink.kafka.partition import IndexValuePartition, position_inertia, value_bytes
from tests import vectors
from tests.unit.sink.kafka.tables import insert, table


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        (ColumnInfo("c", "int"), None, b"null"),
        (ColumnInfo("c", "int"), -2147483648, b"-2147483648"),
        (ColumnInfo("c", "bigint", unsigned=True), 18446744073709551615, b"18446744073709551615"),
        (ColumnInfo("c", "tinyint"), True, b"1"),
        (ColumnInfo("c", "year"), 2020, b"2020"),
        (ColumnInfo("c", "bit", length=8), 65, b"65"),
        (ColumnInfo("c", "enum", elements=("a", "b", "c")), 2, b"2"),
        (ColumnInfo("c", "set", elements=("a", "b", "c")), 3, b"3"),
        (ColumnInfo("c", "float"), 90.5, b"90.5"),
        (ColumnInfo("c", "float"), 3.140000104904175, b"3.14"),  # the float32 nearest 3.14
        (ColumnInfo("c", "float"), 1e10, b"10000000000"),
        (ColumnInfo("c", "float"), 1.0000000000000001e-05, b"0.00001"),
        (ColumnInfo("c", "double"), 1234567.5, b"1234567.5"),
        (ColumnInfo("c", "double"), 1.5e-07, b"0.00000015"),
        (ColumnInfo("c", "double"), 0.0, b"0"),
        (ColumnInfo("c", "decimal", length=10, decimal=2), Decimal("-12.50"), b"-12.50"),
        (ColumnInfo("c", "decimal", length=20, decimal=10), Decimal("0E-10"), b"0.0000000000"),
        (ColumnInfo("c", "date"), "0000-00-00", b"0000-00-00"),
        (ColumnInfo("c", "datetime", decimal=3), "2024-03-11 08:51:01.461", b"2024-03-11 08:51:01.461"),
        (ColumnInfo("c", "time"), "-838:59:59", b"-838:59:59"),
        (ColumnInfo("c", "json"), '{"k": 1}', b'{"k": 1}'),
        (ColumnInfo("c", "varchar"), "中文", "中文".encode()),
        (ColumnInfo("c", "varchar"), b"\xff\xfe".decode("utf-8", "surrogateescape"), b"\xff\xfe"),
        (ColumnInfo("c", "varbinary"), b"\x00\xffA", b"\x00\xffA"),
        (ColumnInfo("c", "binary", length=4), b"ab\x00\x00", b"ab\x00\x00"),
        (ColumnInfo("c", "vector"), "[1,2,3]", b"[1,2,3]"),
    ],
)
def test_value_bytes(column: ColumnInfo, value: Any, expected: bytes) -> None:
    assert value_bytes(value, column) == expected


def test_position_inertia_of_one_write_is_crc32() -> None:
    vector = next(v for v in vectors.load("misc") if v["id"] == "worker-dispatch-hash")
    schema, name = vector["input"]["schema"].encode(), vector["input"]["table"].encode()
    assert position_inertia([(schema, name)]) == vector["expected"]["crc32"]
    assert position_inertia([(schema, name)]) % vector["input"]["worker_count"] == vector["expected"]["worker"]


def test_position_inertia_xors_writes() -> None:
    a, b = (b"col1", b"11"), (b"col2", b"22")
    assert position_inertia([a, b]) == zlib.crc32(b"col111") ^ zlib.crc32(b"col222")
    assert position_inertia([]) == 0


def test_string_and_binary_keys_hash_their_bytes() -> None:
    text = table("d", "t", [ColumnInfo("k", "varchar", nullable=False)], pk=("k",))
    blob = table("d", "t", [ColumnInfo("k", "varbinary", nullable=False)], pk=("k",))
    gen = IndexValuePartition()
    assert gen.partition(insert(text, "ab"), 1000) == gen.partition(insert(blob, b"ab"), 1000)
    expected = position_inertia([(b"d", b"t"), (b"k", b"ab")])
    assert gen.partition(insert(text, "ab"), 1000).key == str(expected)
