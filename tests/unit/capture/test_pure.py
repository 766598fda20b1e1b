"""Pure capture pieces: value decoders, binary JSON, DDL parsing, relay framing, TSO allocation."""

from __future__ import annotations

import struct
from decimal import Decimal
from pathlib import Path

import pytest

from sparkcdc.capture.ddl import DDLApplier, SchemaState, parse_create_table
from sparkcdc.capture.json_binary import decode_json_binary
from sparkcdc.capture.relay_log import (
    FRAME,
    MAGIC,
    ChunkRef,
    Progress,
    RelayLog,
    iter_frames,
    open_chunk,
)
from sparkcdc.capture.relay_writer import RelayLogWriter
from sparkcdc.capture.values import decimal_size, read_datetime2, read_decimal, read_time2
from sparkcdc.errors import CorruptDataError, StorageError
from sparkcdc.model.ddl_action import DDLAction


def _mysql_decimal(text: str, precision: int, scale: int) -> bytes:
    """Encode like MySQL (test helper): groups of 9 digits, sign bit, negatives inverted."""
    neg = text.startswith("-")
    ip, _, fp = text.lstrip("-").partition(".")
    fp = fp.ljust(scale, "0")
    intg = precision - scale
    ip = ip.rjust(intg, "0")
    dig2 = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    out = bytearray()
    lead = intg % 9
    if lead:
        out += int(ip[:lead]).to_bytes(dig2[lead], "big")
    for k in range(lead, intg, 9):
        out += int(ip[k : k + 9]).to_bytes(4, "big")
    for k in range(0, scale - scale % 9, 9):
        out += int(fp[k : k + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(fp[scale - scale % 9 :]).to_bytes(dig2[scale % 9], "big")
    out[0] |= 0x80
    if neg:
        out = bytearray(b ^ 0xFF for b in out)
    return bytes(out)


@pytest.mark.parametrize(
    ("text", "precision", "scale"),
    [("1234.50", 10, 2), ("-1234.50", 10, 2), ("0.00", 10, 2), ("-0.000000001", 18, 9), ("99999", 5, 0),
     ("-12345678901234567890.123456789012", 40, 12)],
)
def test_decimal_keeps_exact_scale(text: str, precision: int, scale: int) -> None:
    raw = _mysql_decimal(text, precision, scale)
    assert len(raw) == decimal_size(precision, scale)
    value = read_decimal(raw, 0, precision, scale, len(raw))
    assert value == Decimal(text) and value.as_tuple().exponent == -scale


def test_temporal_decoders() -> None:
    # DATETIME2(0) 2020-02-29 12:34:56: ym = 2020*13+2, packed per MySQL's layout
    ym = 2020 * 13 + 2
    packed = ((ym << 5 | 29) << 17 | (12 << 12 | 34 << 6 | 56)) + 0x8000000000
    assert read_datetime2(packed.to_bytes(5, "big"), 0, 0) == "2020-02-29 12:34:56"
    assert read_datetime2(packed.to_bytes(5, "big") + (123456).to_bytes(3, "big"), 0, 6) == "2020-02-29 12:34:56.123456"
    # TIME2(0) -838:59:59
    hms = 838 << 12 | 59 << 6 | 59
    assert read_time2((0x800000 - hms).to_bytes(3, "big"), 0, 0) == "-838:59:59"
    # TIME2(3) -00:00:00.001: int part 0, fraction -10 (in 1/10000 s) as one 5-byte signed value
    raw = ((0x800000 << 16) - 10).to_bytes(5, "big")
    assert read_time2(raw, 0, 3) == "-00:00:00.001"


def test_binary_json_rendering() -> None:
    # {"a": 1, "b": [true, "x"]}: small object with 2 keys
    arr = bytearray()
    arr += struct.pack("<HH", 2, 0)
    arr += bytes([4]) + struct.pack("<H", 1)  # literal true inlined
    arr += bytes([12]) + struct.pack("<H", 10)  # string at offset 10
    arr += bytes([1]) + b"x"
    struct.pack_into("<H", arr, 2, len(arr))
    obj = bytearray(struct.pack("<HH", 2, 0))
    key_off = 4 + 2 * 4 + 2 * 3
    obj += struct.pack("<HH", key_off, 1) + struct.pack("<HH", key_off + 1, 1)
    obj += bytes([5]) + struct.pack("<h", 1)
    obj += bytes([2]) + struct.pack("<H", key_off + 2)
    obj += b"ab" + arr
    struct.pack_into("<H", obj, 2, len(obj))
    assert decode_json_binary(bytes([0]) + bytes(obj)) == '{"a": 1, "b": [true, "x"]}'
    assert decode_json_binary(bytes([11]) + struct.pack("<d", 1e20)) == "1e20"
    with pytest.raises(CorruptDataError):
        decode_json_binary(bytes([0, 5]))


def test_create_table_parse_and_keys() -> None:
    info = parse_create_table(
        "CREATE TABLE `t` (\n  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n"
        "  `name` varchar(64) CHARACTER SET latin1 COLLATE latin1_bin DEFAULT 'x',\n"
        "  `j` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)),\n"
        "  `e` enum('a','b') NOT NULL,\n  `ts` timestamp(3) NULL DEFAULT current_timestamp(3),\n"
        "  `u` int(11) NOT NULL,\n  PRIMARY KEY (`id`),\n  UNIQUE KEY `uk` (`u`),\n  KEY `k` (`name`(10))\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
        "db", 7, 99,
    )
    assert [c.name for c in info.columns] == ["id", "name", "j", "e", "ts", "u"]
    assert info.column("id").unsigned and info.column("id").handle_key and not info.column("id").nullable
    assert info.column("name").charset == "latin1" and info.column("name").default == "x"
    assert info.column("j").type == "json"
    assert info.column("e").elements == ("a", "b")
    assert info.column("ts").decimal == 3 and info.column("ts").default == "CURRENT_TIMESTAMP(3)"
    assert info.column("u").unique_key and info.version == 99 and info.table_id == 7


@pytest.mark.parametrize(
    ("sql", "action", "columns"),
    [
        ("ALTER TABLE t ADD COLUMN c INT AFTER id", DDLAction.ADD_COLUMN, ["id", "c", "v"]),
        ("ALTER TABLE t ADD c INT FIRST", DDLAction.ADD_COLUMN, ["c", "id", "v"]),
        ("ALTER TABLE t DROP COLUMN v", DDLAction.DROP_COLUMN, ["id"]),
        ("ALTER TABLE t CHANGE v w TEXT", DDLAction.MODIFY_COLUMN, ["id", "w"]),
        ("ALTER TABLE t MODIFY COLUMN IF EXISTS v TEXT FIRST", DDLAction.MODIFY_COLUMN, ["v", "id"]),
        ("ALTER TABLE t CHANGE COLUMN id k BIGINT AFTER v", DDLAction.MODIFY_COLUMN, ["v", "k"]),
        ("ALTER TABLE t RENAME COLUMN v TO z", DDLAction.MODIFY_COLUMN, ["id", "z"]),
        ("ALTER TABLE t ADD INDEX iv (v)", DDLAction.ADD_INDEX, ["id", "v"]),
        ("ALTER TABLE t ADD c INT, ADD d INT", DDLAction.MULTI_SCHEMA_CHANGE, ["id", "v", "c", "d"]),
        ("ALTER TABLE t COMMENT = 'x'", DDLAction.MODIFY_TABLE_COMMENT, ["id", "v"]),
        ("CREATE INDEX i2 ON t (v)", DDLAction.ADD_INDEX, ["id", "v"]),
        ("ALTER TABLE t PARTITION BY HASH(id) PARTITIONS 4", DDLAction.ALTER_TABLE_PARTITIONING, ["id", "v"]),
        ("ALTER TABLE t REMOVE PARTITIONING", DDLAction.REMOVE_PARTITIONING, ["id", "v"]),
        ("ALTER TABLE t TRUNCATE PARTITION p0, p1", DDLAction.TRUNCATE_TABLE_PARTITION, ["id", "v"]),
        ("ALTER TABLE t ADD PARTITION (PARTITION p9 VALUES LESS THAN (10))", DDLAction.ADD_TABLE_PARTITION,
         ["id", "v"]),
        ("ALTER TABLE t DROP PARTITION p0", DDLAction.DROP_TABLE_PARTITION, ["id", "v"]),
        ("ALTER TABLE `db`.`t` ADD COLUMN `w` INT AS (id * 2) VIRTUAL", DDLAction.ADD_COLUMN, ["id", "v", "w"]),
        ("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id, v)", DDLAction.MULTI_SCHEMA_CHANGE, ["id", "v"]),
    ],
)
def test_alter_table_actions(sql: str, action: DDLAction, columns: list[str]) -> None:
    state = SchemaState(databases={"db": "utf8mb4"})
    applier = DDLApplier(state)
    applier.apply("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "db", 1)
    changes = applier.apply(sql, "db", 2)
    assert [c.action for c in changes] == [action]
    post = changes[0].post
    assert post is not None and [c.name for c in post.columns] == columns and post.version == 2


@pytest.mark.parametrize("sql", ["ALTER TABLE t MODIFY w INT", "ALTER TABLE t CHANGE w x INT"])
def test_changing_an_unknown_column_is_unsupported(sql: str) -> None:
    applier = DDLApplier(SchemaState(databases={"db": "utf8mb4"}))
    applier.apply("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "db", 1)
    with pytest.raises(CorruptDataError, match=f"{sql.split()[3]} of unknown column w"):
        applier.apply(sql, "db", 2)


def test_a_changed_key_column_keeps_its_key_under_the_new_name() -> None:
    applier = DDLApplier(SchemaState(databases={"db": "utf8mb4"}))
    applier.apply("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "db", 1)
    [change] = applier.apply("ALTER TABLE t CHANGE id k BIGINT NOT NULL", "db", 2)
    assert change.post is not None and change.post.column("k").handle_key
    [change] = applier.apply("ALTER TABLE t MODIFY k INT NOT NULL", "db", 3)
    assert change.post is not None and change.post.column("k").handle_key and change.post.column("k").type == "int"


def test_statements_that_are_not_schema_changes() -> None:
    applier = DDLApplier(SchemaState())
    assert applier.apply("GRANT SELECT ON *.* TO 'x'@'%'", "db", 1) == []
    assert applier.apply("/* comment */ FLUSH PRIVILEGES", "db", 1) == []
    with pytest.raises(CorruptDataError):
        applier.apply("ALTER TABLE missing ADD c INT", "db", 1)


def test_relay_writer_frames_spill_and_recover(tmp_path: Path) -> None:
    w = RelayLogWriter(tmp_path)
    event = bytearray(struct.pack("<IBIIIH", 1, 16, 1, 19 + 8, 100, 0) + b"\x00" * 8)
    w.begin()
    w.append(bytes(event))
    w.commit(10, 0, "mysql-bin.000001", 100, "0-1-1", "0-1-1")
    big = bytes(struct.pack("<IBIIIH", 1, 30, 1, 19 + 70000, 200, 0) + b"\x01" * 70000)
    w.begin()
    for _ in range(20):  # > SPILL_BYTES: streamed to disk
        w.append(big)
    w.commit(11, 0, "mysql-bin.000001", 200, "0-1-2", "0-1-2")
    w.begin()
    w.append(bytes(event))  # never committed: a crash mid-transaction
    w.flush(Progress(11, 11, "mysql-bin.000001", 200, "0-1-2"))
    relay = RelayLog(tmp_path)
    chunks = relay.chunks(0, 100, 1 << 30)
    assert relay.resolved_ts() == 11 and [(c.first_ts, c.last_ts, c.txn_count) for c in chunks] == [(10, 11, 2)]
    stream, length, name = open_chunk(chunks[0])
    seen = []
    for frame, events in iter_frames(stream, length, name):
        seen.append((frame.commit_ts, sum(len(e) for e in events)))
    stream.close()
    assert seen == [(10, 27), (11, 20 * 70019)]
    # Reopen: the uncommitted tail is truncated.
    w2 = RelayLogWriter(tmp_path)
    assert w2.offset == chunks[0].length
    w2.close()
    bad = ChunkRef(chunks[0].path, 0, FRAME.size + 27, 10, 10, 1)
    data = bytearray(Path(chunks[0].path).read_bytes()[: bad.length])
    assert data[:4] == MAGIC
    data[-1] ^= 0xFF
    from sparkcdc.capture import decode_chunk
    from sparkcdc.capture.schema_history import SchemaHistory

    with pytest.raises(CorruptDataError):
        list(decode_chunk(bytes(data), SchemaHistory({}, {})))


def _txn(w: RelayLogWriter, ts: int, size: int = 500) -> None:
    w.begin()
    w.append(struct.pack("<IBIIIH", 1, 16, 1, 19 + size, 100, 0) + b"\x00" * size)
    w.commit(ts, 0, "mysql-bin.000001", 100 + ts, f"0-1-{ts}", f"0-1-{ts}")


def test_segments_rotate_and_gc_below_checkpoint(tmp_path: Path) -> None:
    w = RelayLogWriter(tmp_path, segment_bytes=1500)
    for ts in range(1, 11):
        _txn(w, ts)
    w.flush(Progress(10, 10, "mysql-bin.000001", 110, "0-1-10"))
    segments = sorted((tmp_path / "relay").glob("*.seg"))
    assert len(segments) == 4  # 3 frames of ~550 bytes per 1500-byte segment
    relay = RelayLog(tmp_path)
    assert all(c.txn_count <= 3 for c in relay.chunks(0, 10, 1 << 30))  # chunks never span segments
    deleted = relay.gc(7)  # transactions 1..6 are below the checkpoint: segments 1 and 2 go
    assert [Path(p).name for p in deleted] == [s.name for s in segments[:2]]
    assert [t.commit_ts for t in relay.transactions()] == [7, 8, 9, 10]
    assert relay.gc(100) == [str(segments[2])]  # never the newest segment
    w.close()


def test_rewind_and_reopen(tmp_path: Path) -> None:
    from sparkcdc.capture.relay_writer import rewind

    w = RelayLogWriter(tmp_path)
    for ts in range(1, 6):
        _txn(w, ts)
    w.flush(Progress(5, 5, "mysql-bin.000001", 105, "0-1-5"))
    w.close()
    progress = rewind(tmp_path, 3)
    assert progress == Progress(3, 3, "mysql-bin.000001", 103, "0-1-3")
    relay = RelayLog(tmp_path)
    assert relay.resolved_ts() == 3 and [t.commit_ts for t in relay.transactions()] == [1, 2, 3]
    w2 = RelayLogWriter(tmp_path)
    assert w2.offset == sum(t.length for t in relay.transactions())
    w2.close()
    with pytest.raises(StorageError):
        rewind(tmp_path, 99)


@pytest.mark.parametrize(("precision", "scale"), [(10, 2), (18, 9), (65, 30), (5, 0), (40, 12), (1, 1), (27, 9)])
def test_generated_decimal_reader_matches_reference(precision: int, scale: int) -> None:
    import random

    from sparkcdc.capture.row_decoder import RowDecoder
    from sparkcdc.capture.table_map import T_NEWDECIMAL, TableMap

    rng = random.Random(precision * 100 + scale)
    dec = RowDecoder(TableMap(1, "d", "t", (T_NEWDECIMAL,), ((precision, scale),), (True,)))
    for _ in range(300):
        ip = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, precision - scale))) or "0"
        fp = "".join(rng.choice("0123456789") for _ in range(scale))
        text = ("-" if rng.random() < 0.5 else "") + ip + ("." + fp if scale else "")
        raw = _mysql_decimal(text, precision, scale)
        body = b"\x01\x01\x00" + raw  # column count 1, present bitmap, null bitmap, value
        got = dec.decode_rows(body, 0, len(body), False)[0][0]
        assert got == Decimal(text) and got.as_tuple().exponent == -scale
        assert str(got) == str(read_decimal(raw, 0, precision, scale, len(raw)))


@pytest.mark.parametrize("fsp", range(7))
def test_generated_datetime_reader_matches_reference(fsp: int) -> None:
    import random

    from sparkcdc.capture.row_decoder import RowDecoder
    from sparkcdc.capture.table_map import T_DATETIME2, TableMap

    rng = random.Random(fsp)
    dec = RowDecoder(TableMap(1, "d", "t", (T_DATETIME2,), (fsp,), (True,)))
    fb = (fsp + 1) // 2
    for _ in range(300):
        ymd = rng.randint(0, 9999 * 13 + 12) << 5 | rng.randint(0, 31)
        hms = rng.randint(0, 23) << 12 | rng.randint(0, 59) << 6 | rng.randint(0, 59)
        frac = [0, rng.randint(0, 99), rng.randint(0, 9999), rng.randint(0, 999999)][fb]
        frac -= frac % 10 if fsp in (1, 3, 5) else 0
        raw = ((ymd << 17 | hms) + 0x8000000000).to_bytes(5, "big") + (frac.to_bytes(fb, "big") if fb else b"")
        body = b"\x01\x01\x00" + raw
        assert dec.decode_rows(body, 0, len(body), False)[0][0] == read_datetime2(raw, 0, fsp)


def test_tracker_ignores_system_schemas_and_marks_unparsed_tables_stale(tmp_path: Path) -> None:
    import sqlite3

    from sparkcdc.capture.schema_history import SchemaTracker

    tracker = SchemaTracker(sqlite3.connect(":memory:"))
    assert tracker.apply_ddl("CREATE TABLE t (id INT PRIMARY KEY)", "db", 10)[0].action is DDLAction.CREATE_TABLE
    assert tracker.apply_ddl("ALTER TABLE mysql.user ADD COLUMN x INT", "db", 11) == []
    assert tracker.apply_ddl("CREATE TABLE mysql.zz (id INT)", "db", 12) == []
    changes = tracker.apply_ddl("ALTER TABLE t WEIRD SYNTAX HERE(", "db", 13)
    assert [c.action for c in changes] == [DDLAction.NONE]
    assert changes[0].post is not None and changes[0].post.version == 13
    assert tracker.needs_table_map("db", "t") and not tracker.needs_table_map("mysql", "user")


def test_commit_ts_rule() -> None:
    from sparkcdc.capture.puller import next_commit_ts
    from sparkcdc.model import tso

    first = next_commit_ts(1_700_000_000, 0)
    assert tso.split(first) == (1_700_000_000_000, 0)
    same_second = next_commit_ts(1_700_000_000, first)
    assert tso.split(same_second) == (1_700_000_000_000, 1)
    backwards = next_commit_ts(1_600_000_000, same_second)
    assert tso.split(backwards) == (1_700_000_000_000, 2)
    later = next_commit_ts(1_700_000_001, backwards)
    assert tso.split(later) == (1_700_000_001_000, 0)
    full = tso.compose(1_700_000_000_000, tso.MAX_LOGICAL)
    assert tso.split(next_commit_ts(1_700_000_000, full)) == (1_700_000_000_001, 0)
