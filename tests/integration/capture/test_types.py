"""Every MySQL/MariaDB type decodes to exactly what SELECT returns (model/column_type.py mapping)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.model.events import RowChange, RowOp
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.capture.conftest import decode_all, for_schema, make_puller

pytestmark = pytest.mark.integration

# name, type, how SELECT must render it to match our value
COLUMNS: list[tuple[str, str, str]] = [
    ("ti", "TINYINT", "plain"), ("tiu", "TINYINT UNSIGNED", "plain"),
    ("si", "SMALLINT", "plain"), ("siu", "SMALLINT UNSIGNED", "plain"),
    ("mi", "MEDIUMINT", "plain"), ("miu", "MEDIUMINT UNSIGNED", "plain"),
    ("i", "INT", "plain"), ("iu", "INT UNSIGNED", "plain"),
    ("bi", "BIGINT", "plain"), ("biu", "BIGINT UNSIGNED", "plain"),
    ("d65", "DECIMAL(65,30)", "plain"), ("d2", "DECIMAL(10,2)", "plain"), ("d0", "DECIMAL(5,0)", "plain"),
    ("d9", "DECIMAL(18,9)", "plain"),
    ("fl", "FLOAT", "float32"), ("db", "DOUBLE", "plain"),
    ("b1", "BIT(1)", "num"), ("b10", "BIT(10)", "num"), ("b64", "BIT(64)", "num"),
    ("y", "YEAR", "plain"), ("dt", "DATE", "char"),
    ("t0", "TIME", "char"), ("t1", "TIME(1)", "char"), ("t3", "TIME(3)", "char"), ("t6", "TIME(6)", "char"),
    ("dt0", "DATETIME", "char"), ("dt2", "DATETIME(2)", "char"), ("dt5", "DATETIME(5)", "char"),
    ("dt6", "DATETIME(6)", "char"),
    ("ts0", "TIMESTAMP NULL", "char"), ("ts3", "TIMESTAMP(3) NULL", "char"), ("ts6", "TIMESTAMP(6) NULL", "char"),
    ("c", "CHAR(10)", "plain"), ("vc", "VARCHAR(300)", "plain"), ("vl", "VARCHAR(20) CHARACTER SET latin1", "plain"),
    ("vg", "VARCHAR(20) CHARACTER SET gbk", "plain"), ("c3", "CHAR(5) CHARACTER SET utf8mb3", "plain"),
    ("tx", "TEXT", "plain"), ("tt", "TINYTEXT", "plain"), ("lt", "LONGTEXT", "plain"),
    ("bn", "BINARY(8)", "plain"), ("vb", "VARBINARY(20)", "plain"), ("bl", "BLOB", "plain"),
    ("tb", "TINYBLOB", "plain"), ("mb", "MEDIUMBLOB", "plain"),
    ("e", "ENUM('a','b','c')", "num"), ("s", "SET('x','y','z')", "num"), ("j", "JSON", "plain"),
    ("g", "GEOMETRY", "plain"),
]  # fmt: skip

ROWS = [
    # minimums / negative edges
    "1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, "
    "-99999999999999999999999999999999999.999999999999999999999999999999, -99999999.99, -99999, -0.000000001, "
    "-3.40282e38, -1.7976931348623157e308, 0, 0, 0, 1901, '1000-01-01', '-838:59:59', '-838:59:58.9', "
    "'-00:00:00.001', '-00:00:01.000001', '1000-01-01 00:00:00', '1000-01-01 00:00:00.01', "
    "'1000-01-01 00:00:00.00001', '1000-01-01 00:00:00.000001', '1970-01-01 00:00:01', '1970-01-01 00:00:01.001', "
    "'1970-01-01 00:00:01.000001', '', '', '', '', '', '', '', '', X'', X'', X'', X'', X'', 1, 0, '[]', "
    "ST_GeomFromText('POINT(1 2)')",
    # maximums
    "2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, "
    "18446744073709551615, 99999999999999999999999999999999999.999999999999999999999999999999, 99999999.99, "
    "99999, 123456789.123456789, 3.40282e38, 1.7976931348623157e308, 1, 1023, 18446744073709551615, 2155, "
    "'9999-12-31', '838:59:59', '838:59:59.9', '838:59:59.999', '838:59:59.999999', '9999-12-31 23:59:59', "
    "'9999-12-31 23:59:59.99', '9999-12-31 23:59:59.99999', '9999-12-31 23:59:59.999999', "
    "'2038-01-19 03:14:07', '2038-01-19 03:14:07.999', '2038-01-19 03:14:07.999999', 'abcdefghij', "
    "REPEAT('é', 300), 'Ãéñ€', '中文字符', 'ab€', REPEAT('x', 70000 DIV 1000), 'tiny', REPEAT('L', 100000), "
    "X'0102030405060708', X'00FF00', X'DEADBEEF00', X'00', REPEAT(X'AB', 70000), 3, 7, "
    "'{\"k\": [1, 2.5, \"s\", null, true], \"u\": \"\\\\u00e9\"}', "
    "ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))')",
    # zero values and padding
    "3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.00, 0, 0, 0, 0, 0, 0, 0, 0, '0000-00-00', '00:00:00', '00:00:00.0', "
    "'00:00:00.000', '12:34:56.000001', '0000-00-00 00:00:00', '0000-00-00 00:00:00.00', "
    "'2020-02-29 12:00:00.10000', '0000-00-00 00:00:00.000000', '0000-00-00 00:00:00', "
    "'0000-00-00 00:00:00.000', '0000-00-00 00:00:00.000000', 'pad  ', 'trailing  ', ' ', '', 'a', "
    "'😀 emoji', '', '', X'61', X'6100', X'00000000', X'', X'', 0, 0, '{}', ST_GeomFromText('POINT(0 0)')",
]


def _select_expr(name: str, mode: str) -> str:
    if mode == "char":
        return f"CAST(`{name}` AS CHAR)"
    if mode == "num":
        return f"`{name}` + 0"
    return f"`{name}`"


def _normalise(value: Any, mode: str) -> Any:
    if value is None:
        return None
    if mode == "float32":
        return struct.unpack("<f", struct.pack("<f", value))[0]
    if mode == "num":
        return int(value)
    return value


def _expected(db: FreshDatabase, where: str) -> list[tuple[Any, ...]]:
    exprs = ", ".join(["id", *(_select_expr(n, m) for n, _, m in COLUMNS)])
    rows = db.query(f"SELECT {exprs} FROM ty WHERE {where} ORDER BY id")
    modes = ["plain"] + [m for _, _, m in COLUMNS]
    return [tuple(_normalise(v, m) for v, m in zip(row, modes)) for row in rows]


def test_every_type_decodes_like_select(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("SET SESSION sql_mode = ''", "SET SESSION time_zone = '+00:00'")
    cols = ", ".join(f"`{n}` {t}" for n, t, _ in COLUMNS)
    db.execute(f"CREATE TABLE ty (id INT PRIMARY KEY, {cols})")
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    for values in ROWS:
        db.execute(f"INSERT INTO ty VALUES ({values})")
    nulls = ", ".join(["4"] + ["NULL"] * len(COLUMNS))
    db.execute(f"INSERT INTO ty VALUES ({nulls})")
    inserted = _expected(db, "1=1")
    db.execute(
        "UPDATE ty SET ti = 5, d2 = -0.01, dt6 = '2001-02-03 04:05:06.7', vc = NULL, bn = X'01', j = '[1]', "
        "e = 2, s = 5, ts6 = '2001-01-01 00:00:00.5' WHERE id IN (1, 4)"
    )
    updated = _expected(db, "id IN (1, 4)")
    db.execute("DELETE FROM ty WHERE id IN (2, 3)")
    puller.catch_up(30)
    puller.close()

    events = [e for e in for_schema(decode_all(tmp_path, start), db.name) if isinstance(e, RowChange)]
    inserts = [e.after for e in events if e.op is RowOp.INSERT]
    updates = [(e.before, e.after) for e in events if e.op is RowOp.UPDATE]
    deletes = [e.before for e in events if e.op is RowOp.DELETE]
    assert len(inserted) == 4 and len(inserts) == 4
    for got, want in zip(inserts, inserted):
        for k, (name, _, _) in enumerate([("id", "", ""), *COLUMNS]):
            assert got is not None
            assert got[k] == want[k], f"column {name}: decoded {got[k]!r}, SELECT {want[k]!r}"
            assert type(got[k]) is type(want[k]) or want[k] is None, name
    assert [u[0] for u in updates] == [inserted[0], inserted[3]]
    assert [u[1] for u in updates] == updated
    assert deletes == [inserted[1], inserted[2]]
    # Exact decimal scale is kept and the table info knows MariaDB's JSON alias.
    assert inserts[0] is not None and str(inserts[0][12]) == "-99999999.99"
    table = events[0].table
    assert table.column("j").type == "json" and table.column("bn").type == "binary"
    assert table.column("vl").charset == "latin1" and table.column("tx").type == "text"


def test_timestamp_renders_in_requested_zone(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("SET SESSION time_zone = '+00:00'", "CREATE TABLE tz (id INT PRIMARY KEY, ts TIMESTAMP(3) NULL)")
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    db.execute("INSERT INTO tz VALUES (1, '2024-06-01 12:00:00.250')")
    puller.catch_up(30)
    puller.close()
    utc = [e for e in for_schema(decode_all(tmp_path, start), db.name) if isinstance(e, RowChange)]
    shanghai = [e for e in for_schema(decode_all(tmp_path, start, tz="Asia/Shanghai"), db.name)
                if isinstance(e, RowChange)]
    assert utc[0].after == (1, "2024-06-01 12:00:00.250")
    assert shanghai[0].after == (1, "2024-06-01 20:00:00.250")


def test_huge_row_spans_packets_and_spills(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("CREATE TABLE huge (id INT PRIMARY KEY, b LONGBLOB, t LONGTEXT)")
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    db.execute("INSERT INTO huge VALUES (1, REPEAT(X'00FF', 10 * 1024 * 1024), REPEAT('é', 3 * 1024 * 1024))")
    puller.catch_up(60)
    puller.close()
    rows = [e for e in for_schema(decode_all(tmp_path, start), db.name) if isinstance(e, RowChange)]
    assert len(rows) == 1 and rows[0].after is not None
    _, blob, text = rows[0].after
    assert blob == b"\x00\xff" * (10 * 1024 * 1024)  # a 20 MiB event: several 16 MiB packets
    assert text == "é" * (3 * 1024 * 1024)


def test_wide_columns_use_two_byte_lengths(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    enum = ",".join(f"'e{i}'" for i in range(300))
    members = ",".join(f"'s{i}'" for i in range(64))
    db.execute(
        f"CREATE TABLE w (id INT PRIMARY KEY, c100 CHAR(100), c255 CHAR(255), b255 BINARY(255), e ENUM({enum}), "
        f"s SET({members}), cl CHAR(200) CHARACTER SET latin1)"
    )
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    db.execute("INSERT INTO w VALUES (1, REPEAT('é', 100), REPEAT('€', 255), X'01', 'e299', 's0,s63', "
               "REPEAT('x', 199))")
    puller.catch_up(30)
    puller.close()
    want = db.query("SELECT id, c100, c255, b255, e + 0, cl FROM w")[0]
    got = next(e for e in for_schema(decode_all(tmp_path, start), db.name) if isinstance(e, RowChange)).after
    assert got is not None
    assert got[:5] + got[6:] == want[:5] + want[5:]
    assert len(got[3]) == 255 and got[3][0] == 1 and got[3][1:] == bytes(254)  # BINARY keeps its 0x00 padding
    assert got[5] == 1 | 1 << 63  # SET bitmask: s0 and s63 (unsigned; SELECT s+0 would be signed)


def test_unsigned_columns_after_a_year_column_keep_their_sign(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    # MariaDB's SIGNEDNESS bitmap has a bit for YEAR: reading it without shifted the flags of the columns after it
    db = fresh_db
    db.execute("CREATE TABLE yu (id INT PRIMARY KEY, y YEAR, f DOUBLE, u TINYINT UNSIGNED, s SMALLINT UNSIGNED, "
               "i INT)")  # fmt: skip
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    db.execute("INSERT INTO yu VALUES (1, 2008, -1.5, 218, 65000, -7)")
    puller.catch_up(30)
    puller.close()
    events = [e for e in for_schema(decode_all(tmp_path, start), db.name) if isinstance(e, RowChange)]
    assert [e.after for e in events] == [(1, 2008, -1.5, 218, 65000, -7)]
