"""A snapshot SELECT (select_list + row_converter + connection_options) gives exactly the binlog's values."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import tzinfo
from pathlib import Path
from typing import Any

import pymysql
import pytest

from sparkcdc.capture.decode import resolve_tz
from sparkcdc.capture.snapshot_values import connection_options, row_converter, select_list
from sparkcdc.model.events import RowChange, RowOp
from sparkcdc.model.table import TableInfo
from sparkcdc.mysql.target import quote_ident
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.capture.conftest import decode_all, for_schema, make_puller
from tests.integration.capture.test_types import COLUMNS, ROWS

pytestmark = pytest.mark.integration


@contextmanager
def _snapshot_conn(db: FreshDatabase, session_tz: str = "+05:30") -> Iterator[Any]:
    """A connection opened as a snapshot reader would, in a session time zone unlike the capture's."""
    conn = pymysql.connect(**db.server.connect_kwargs("root", database=db.name, **connection_options()))
    try:
        with conn.cursor() as cur:
            cur.execute(f"SET SESSION time_zone = '{session_tz}'")
        yield conn
    finally:
        conn.close()


def _captured(db: FreshDatabase, tmp_path: Path, statements: list[str], tz: str = "UTC") -> list[RowChange]:
    """Runs ``statements`` under a puller and returns the decoded INSERTs of the test's database."""
    puller = make_puller(db, tmp_path)
    start = puller.catch_up(30).resolved_ts
    db.execute(*statements)
    puller.catch_up(60)
    puller.close()
    events = for_schema(decode_all(tmp_path, start, tz=tz), db.name)
    return [e for e in events if isinstance(e, RowChange) and e.op is RowOp.INSERT]


def _snapshot(db: FreshDatabase, table: TableInfo, tz: tzinfo) -> list[tuple[Any, ...]]:
    convert = row_converter(table, tz)
    with _snapshot_conn(db) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT {select_list(table)} FROM {quote_ident(table.table)} ORDER BY 1")
        return [convert(row) for row in cur.fetchall()]


def _assert_same(table: TableInfo, got: list[tuple[Any, ...]], want: list[RowChange]) -> None:
    assert len(got) == len(want) > 0
    for row, change in zip(got, want):
        assert change.after is not None and len(row) == len(change.after) == len(table.columns)
        for col, value, binlog in zip(table.columns, row, change.after):
            assert value == binlog, f"{table.table}.{col.name}: snapshot {value!r}, binlog {binlog!r}"
            assert type(value) is type(binlog), f"{table.table}.{col.name}: {type(value)} vs {type(binlog)}"
            assert str(value) == str(binlog), col.name  # DECIMAL scale, fsp digits


def test_every_type_snapshots_like_the_binlog(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("SET SESSION sql_mode = ''", "SET SESSION time_zone = '+00:00'")
    cols = ", ".join(f"`{n}` {t}" for n, t, _ in COLUMNS)
    db.execute(f"CREATE TABLE ty (id INT PRIMARY KEY, {cols})")
    nulls = ", ".join(["4"] + ["NULL"] * len(COLUMNS))
    inserts = _captured(
        db, tmp_path, [*(f"INSERT INTO ty VALUES ({v})" for v in ROWS), f"INSERT INTO ty VALUES ({nulls})"]
    )
    assert len(inserts) == 4
    table = inserts[0].table
    _assert_same(table, _snapshot(db, table, resolve_tz("UTC")), inserts)


def test_edge_values_snapshot_like_the_binlog(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("SET SESSION sql_mode = ''")
    members = ",".join(f"'s{i}'" for i in range(64))
    db.execute(
        "CREATE TABLE `odd ``name`` t` (id INT PRIMARY KEY, `we``ird col` INT, fl FLOAT, db DOUBLE, y2 YEAR(2), "
        f"y4 YEAR, s SET({members}), e ENUM('a','b'), b3 BIT(3), z INT(5) ZEROFILL, dz DECIMAL(6,2) ZEROFILL, "
        "l1 CHAR(8) CHARACTER SET latin1, g VARCHAR(8) CHARACTER SET gbk, u3 TINYTEXT CHARACTER SET utf8mb3)"
    )
    rng = random.Random(7)
    floats: list[tuple[float, float]] = []
    while len(floats) < 300:
        f32 = struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0]
        f64 = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if all(v == v and abs(v) != float("inf") for v in (f32, f64)):
            floats.append((f32, f64))
    statements = [
        "INSERT INTO `odd ``name`` t` VALUES (1, -1, 1.0000001, 5e-324, 70, 0, 's0,s63', 'zz', 5, 7, 1.5, "
        "X'80818D8F909DFF', '中', 'ü'), (2, 2, 1e-45, -0.1, 69, 2155, '', '', 0, 0, 0, 'a  ', '', ''), "
        "(3, 3, 3.4028234e38, 1e22, 'abc', 1901, 's63', 'b', 7, 12345, 9999.99, '', X'81', X'')",
        *(
            f"INSERT INTO `odd ``name`` t` (id, fl, db) VALUES ({10 + i}, {f!r}, {d!r})"
            for i, (f, d) in enumerate(floats)
        ),
    ]
    inserts = _captured(db, tmp_path, statements)
    table = inserts[0].table
    assert table.column("y2").length == 2 and table.column("l1").charset == "latin1"
    got = _snapshot(db, table, resolve_tz("UTC"))
    _assert_same(table, got, inserts)
    # The values that SELECT renders differently from the binlog all came out as the binlog has them.
    first, second, third = got[:3]
    assert (first[4], second[4], third[4]) == (1970, 2069, 0)  # YEAR(2): full years; the zero byte stays 0
    assert first[6] == 1 | 1 << 63 and third[6] == 1 << 63  # SET member 64 is unsigned
    assert first[2] == struct.unpack("<f", struct.pack("<f", 1.0000001))[0] != 1.0  # FLOAT: no 6-digit rounding
    assert first[11] == "€\x81\x8d\x8f\x90\x9dÿ"  # latin1 as the decoder maps it (cp1252 with its 5 holes)


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "Europe/Berlin"])
def test_timestamp_renders_in_the_capture_zone(fresh_db: FreshDatabase, tmp_path: Path, zone: str) -> None:
    db = fresh_db
    db.execute(
        "SET SESSION sql_mode = ''", "SET SESSION time_zone = '+00:00'",
        "CREATE TABLE tz (id INT PRIMARY KEY, t0 TIMESTAMP NULL, t1 TIMESTAMP(1) NULL, t3 TIMESTAMP(3) NULL, "
        "t6 TIMESTAMP(6) NULL)",
    )  # fmt: skip
    inserts = _captured(db, tmp_path, [
        "INSERT INTO tz VALUES (1, '2024-06-01 12:00:00', '2024-06-01 12:00:00.5', '2024-06-01 12:00:00.250', "
        "'2024-06-01 12:00:00.000001')",
        # 00:30 and 01:30 UTC on 2024-10-27 are both 02:30 in Berlin (the hour that repeats)
        "INSERT INTO tz VALUES (2, '2024-10-27 00:30:00', '2024-10-27 01:30:00.1', '2024-10-27 00:30:00.999', "
        "'2024-10-27 01:30:00.999999')",
        "INSERT INTO tz VALUES (3, 0, 0, 0, 0), (4, '1970-01-01 00:00:01', NULL, '2038-01-19 03:14:07.999', "
        "'2038-01-19 03:14:07.999999')",
    ], tz=zone)  # fmt: skip
    table = inserts[0].table
    got = _snapshot(db, table, resolve_tz(zone))
    _assert_same(table, got, inserts)
    assert got[2] == (3, "0000-00-00 00:00:00", "0000-00-00 00:00:00.0", "0000-00-00 00:00:00.000",
                      "0000-00-00 00:00:00.000000")  # fmt: skip
    if zone == "Asia/Shanghai":
        assert got[0][3] == "2024-06-01 20:00:00.250"
    else:
        assert got[1][1] == got[1][2][:19] == "2024-10-27 02:30:00"


def test_generated_columns_snapshot_like_the_binlog(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute(
        "CREATE TABLE gen (id INT PRIMARY KEY, a INT, v INT AS (a * 2) VIRTUAL, s VARCHAR(20) AS (CONCAT('x', a)) "
        "PERSISTENT, b VARCHAR(10), vt VARCHAR(30) AS (CONCAT(b, '!')) VIRTUAL)"
    )
    inserts = _captured(db, tmp_path, ["INSERT INTO gen (id, a, b) VALUES (1, 5, 'q'), (2, NULL, NULL), (3, -7, 'é')"])
    table = inserts[0].table
    assert [c.generated for c in table.columns] == [None, None, "virtual", "stored", None, "virtual"]
    got = _snapshot(db, table, resolve_tz("UTC"))
    _assert_same(table, got, inserts)
    assert got[0][3] == "x5"
