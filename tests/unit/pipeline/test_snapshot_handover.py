"""The exact hand-over from a snapshot copy to the stream: which streamed changes the copy already holds (pure,
with the relay log's index as an in-memory SQLite table)."""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparkcdc.capture.relay_log import RelayLog, connect_index
from sparkcdc.capture.schema_history import SchemaHistory, SchemaTracker
from sparkcdc.capture.snapshot_plan import Chunk
from sparkcdc.errors import StorageError, UpstreamError
from sparkcdc.model.events import RowChange, RowOp
from sparkcdc.model.table import ColumnInfo, TableInfo
from sparkcdc.pipeline import snapshot_state
from sparkcdc.pipeline.snapshot_handover import NEVER, TableHandover, changed_during_copy, key_hasher, pack_keys
from sparkcdc.pipeline.snapshot_state import ChunkRead, SnapshotPlan

COLS = (ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True), ColumnInfo("v", "varchar"))
A = TableInfo("db", "a", 1, COLS)
B = TableInfo("db", "b", 2, COLS)
C = TableInfo("db", "c", 3, (ColumnInfo("v", "int"),))  # no key: copied whole (force-replicate)
FILE = "bin.000001"


def _spec(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(state_dir=str(tmp_path), snapshot_plan_path=tmp_path / "plan",
                           snapshot_progress_path=tmp_path / "snapshot.json")  # fmt: skip


def _relay(tmp_path: Path, *txns: tuple[int, str, int]) -> RelayLog:
    """A relay log index under ``tmp_path`` holding transactions (commit-ts, binlog file, end position)."""
    (tmp_path / "capture" / "relay").mkdir(parents=True)
    relay = RelayLog(tmp_path / "capture")
    _add(relay, *txns)
    return relay


def _add(relay: RelayLog, *txns: tuple[int, str, int]) -> None:
    db = connect_index(relay.dir)
    db.executemany("INSERT INTO txn VALUES (?, 0, 0, 1, ?, ?, '', '', 0)", txns)
    db.close()


def _keys(table: TableInfo, *ids: int) -> bytes:
    h = key_hasher(table, ("id",))
    return pack_keys(h((i, "x")) for i in ids)


def _copied(tmp_path: Path) -> SimpleNamespace:
    """Table a in two chunks read at binlog positions 300 and 500 (ids 1-2, 7), b in one without a position,
    c (no key) in one read at 400."""
    spec = _spec(tmp_path)
    chunks = (Chunk(0, "db", "a", 1, ("id",), None, (5,), 2), Chunk(1, "db", "a", 1, ("id",), (5,), None, 1),
              Chunk(2, "db", "b", 2, ("id",), None, None, 1), Chunk(3, "db", "c", 3, (), None, None, 1))  # fmt: skip
    tables = {"db.a": A, "db.b": B, "db.c": C}
    snapshot_state.save_plan(spec.snapshot_plan_path, SnapshotPlan(100, chunks, tables))
    snapshot_state.record_reads(spec, [ChunkRead(0, 2, 110, FILE, 300, _keys(A, 1, 2)),
                                       ChunkRead(1, 1, 130, FILE, 500, _keys(A, 7)),
                                       ChunkRead(2, 1, 110), ChunkRead(3, 1, 110, FILE, 400)])  # fmt: skip
    return spec


def _ins(t: int, i: int) -> RowChange:
    return RowChange(t, A, RowOp.INSERT, None, (i, "x"))


def _del(t: int, i: int) -> RowChange:
    return RowChange(t, A, RowOp.DELETE, (i, "x"), None)


def _upd(t: int, old: int, new: int) -> RowChange:
    return RowChange(t, A, RowOp.UPDATE, (old, "x"), (new, "x"))


def test_each_change_goes_once_by_whether_the_chunk_that_read_its_key_holds_it(tmp_path: Path) -> None:
    spec = _copied(tmp_path)
    # relay: txns end at 200 (ts 115), 300 (ts 120), 400 (ts 140), 500 (ts 150), 600 (ts 160)
    db = _relay(tmp_path, (115, FILE, 200), (120, FILE, 300), (140, FILE, 400), (150, FILE, 500), (160, FILE, 600))
    handover = snapshot_state.streamed_handover(spec, 100, db)
    a = handover[("db", "a")]
    assert (a.low, a.high, [u for _, u in a.chunks]) == (110, 159, [139, 159])
    b, c = handover[("db", "b")], handover[("db", "c")]
    assert (b.low, b.high, b.chunks) == (110, 110, ())  # no position: the low watermark only
    assert (c.low, c.high, c.chunks) == (149, 149, ())  # one read holds the whole table: no key needed
    row = RowChange(149, C, RowOp.INSERT, None, (1,))
    assert c.keep(row) is None and c.keep(replace(row, commit_ts=150)) is not None
    assert a.keep(_ins(110, 1)) is None  # before every read
    assert a.keep(_upd(120, 1, 1)) is None and a.keep(_upd(140, 1, 1)) is not None  # chunk 0 read at ts 139
    assert a.keep(_upd(150, 7, 7)) is None and a.keep(_upd(160, 7, 7)) is not None  # chunk 1 read at ts 159
    assert a.keep(_ins(120, 3)) == _ins(120, 3)  # no chunk read id 3: it was gone when read, changes go on
    assert a.keep(_del(120, 3)) == _del(120, 3)
    assert a.keep(_del(120, 2)) is None
    # a key-changing UPDATE is decided half by half
    assert a.keep(_upd(150, 3, 7)) == RowChange(150, A, RowOp.DELETE, (3, "x"), None)  # id 7 is in the copy
    assert a.keep(_upd(120, 1, 9)) == RowChange(120, A, RowOp.INSERT, None, (9, "x"))  # id 1 is in the copy
    assert a.keep(_upd(150, 1, 9)) == _upd(150, 1, 9)  # id 1 was read at 139, id 9 by no chunk
    assert a.keep(_upd(120, 2, 7)) is None  # both halves are in the copy
    assert a.keep(_upd(170, 1, 7)) == _upd(170, 1, 7)  # after every read


def test_the_handover_ends_when_every_table_is_past_its_last_read(tmp_path: Path) -> None:
    spec = _copied(tmp_path)
    db = _relay(tmp_path, (115, FILE, 200), (120, FILE, 300), (140, FILE, 400))
    a = snapshot_state.streamed_handover(spec, 120, db)[("db", "a")]
    assert [u for _, u in a.chunks] == [139, 2**63 - 1]  # the relay log has not passed chunk 1's read yet
    assert a.keep(_upd(140, 7, 7)) is None
    _add(db, (150, FILE, 500), (160, FILE, 600))
    assert set(snapshot_state.streamed_handover(spec, 100, db)) == {("db", "a"), ("db", "b"), ("db", "c")}
    assert set(snapshot_state.streamed_handover(spec, 110, db)) == {("db", "a"), ("db", "c")}
    assert snapshot_state.streamed_handover(spec, 159, db) == {}
    assert (tmp_path / "snapshot_handover.done").exists() and not (tmp_path / "snapshot_keys").exists()
    assert snapshot_state.streamed_handover(spec, 100, db) == {}  # done is done: nothing is read again
    # a new plan (another start-ts) starts its own hand-over
    snapshot_state.reset_handover(spec)
    plan = snapshot_state.load_plan(spec.snapshot_plan_path)
    assert plan is not None
    snapshot_state.save_plan(spec.snapshot_plan_path, replace(plan, start_ts=105))
    snapshot_state.record_reads(spec, [ChunkRead(i, 1, 110) for i in range(4)])
    assert set(snapshot_state.streamed_handover(spec, 100, db)) == {("db", "a"), ("db", "b"), ("db", "c")}


def test_a_damaged_keys_file_is_reported(tmp_path: Path) -> None:
    spec = _copied(tmp_path)
    path = snapshot_state.keys_path(spec, 0)
    path.write_bytes(path.read_bytes()[:-3])
    h = TableHandover(("id",), 0, 200, ((str(path), 150),))
    with pytest.raises(StorageError) as e:
        h.keep(_ins(120, 1))
    assert "truncated" in e.value.message and "re-create the changefeed" in e.value.message


def test_the_read_position_maps_to_the_last_commit_within_it(tmp_path: Path) -> None:
    rng = random.Random(7)
    txns, ts, pos, seq = [], 1000, 4, 1
    for _ in range(300):
        ts += rng.randint(1, 5000)
        pos += rng.randint(10, 300)
        if rng.random() < 0.05:
            seq, pos = seq + 1, 4 + rng.randint(10, 300)  # binlog rotated
        txns.append((ts, f"bin.{seq:06d}", pos))
    db = _relay(tmp_path, *txns)
    for _ in range(200):
        point = rng.choice(txns)
        p = (point[1], point[2] + rng.choice((0, 0, 5)))
        after = [t for t, f, q in txns if (int(f[-6:]), q) > (int(p[0][-6:]), p[1])]
        expected = after[0] - 1 if after else None
        assert db.last_commit_at(p, 1000) == expected
    assert db.last_commit_at(("bin.000001", 0), txns[-1][0]) == txns[-1][0]


def test_keys_equal_under_the_collation_hash_alike() -> None:
    def h(collation: str | None, type_: str = "varchar") -> object:
        t = TableInfo("db", "t", 1, (ColumnInfo("k", type_, nullable=False, primary_key=True, handle_key=True,
                                                collation=collation),))  # fmt: skip
        return key_hasher(t, ("K",))

    ci = h("utf8mb4_general_ci")
    assert ci(("Ábc  ",)) == ci(("abc",)) != ci(("abd",))
    exact = h("utf8mb4_bin")
    assert exact(("a  ",)) == exact(("a",)) != exact(("A",))  # PAD SPACE, case-sensitive
    nopad = h("utf8mb4_nopad_bin")
    assert nopad(("a ",)) != nopad(("a",))
    accents = h("utf8mb4_0900_as_ci")
    assert accents(("A",)) == accents(("a",)) != accents(("á",))
    raw = h(None, "varbinary")
    assert raw((b"a ",)) != raw((b"a",))
    assert h(None, "int")((1,)) != h(None, "int")(("1",))  # values keep their type


# -- a DDL between start-ts and a chunk's read ------------------------------------------------------------------


class _History:
    """The relay log's schema history, made as the puller makes it: DDL applied at commit-ts, in ``db``."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.tracker = SchemaTracker(db)
        self.ddl("CREATE DATABASE db", 1)

    def ddl(self, query: str, ts: int) -> None:
        self.tracker.apply_ddl(query, "db", ts)
        for sql, args in self.tracker.take_pending():
            self.db.execute(sql, args)

    def table(self, name: str, ts: int) -> TableInfo:
        info = SchemaHistory.from_connection(self.db).table_info_at("db", name, ts)
        assert info is not None
        return info

    def changed(self, name: str, start: int, last_read: int) -> int:
        return changed_during_copy(SchemaHistory.from_connection(self.db), self.table(name, start), start, last_read)


def test_the_first_ddl_before_the_last_read_that_changed_the_columns_or_rows_is_found() -> None:
    h = _History(sqlite3.connect(":memory:"))
    h.ddl("CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(16), n INT)", 10)
    h.ddl("ALTER TABLE a ADD INDEX (v)", 110)  # keys, defaults and comments change no stored value
    h.ddl("ALTER TABLE a ALTER COLUMN n SET DEFAULT 5", 115)
    h.ddl("ALTER TABLE a COMMENT 'orders'", 118)
    assert h.changed("a", 100, 200) == NEVER
    h.ddl("ALTER TABLE a ADD COLUMN region VARCHAR(8) DEFAULT 'eu'", 120)
    h.ddl("ALTER TABLE a MODIFY COLUMN v VARCHAR(64)", 130)
    assert h.changed("a", 100, 200) == 120
    assert h.changed("a", 100, 119) == NEVER  # after the last read: the stream sends it all anyway
    assert h.changed("a", 120, 200) == 130  # a start-ts after the first DDL
    for i, ddl in enumerate(("ALTER TABLE b MODIFY COLUMN v VARCHAR(16) CHARACTER SET latin1",
                             "ALTER TABLE b MODIFY n BIGINT", "ALTER TABLE b MODIFY n INT NOT NULL",
                             "TRUNCATE TABLE b", "ALTER TABLE b TRUNCATE PARTITION p0",
                             "ALTER TABLE b DROP PARTITION p0", "ALTER TABLE b FROBNICATE")):  # fmt: skip
        base = 1000 * (i + 1)
        h.ddl("CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(16), n INT) PARTITION BY RANGE (id) "
              "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)", base)  # fmt: skip
        h.ddl(ddl, base + 20)
        assert h.changed("b", base + 10, base + 30) == base + 20, ddl
        h.ddl("DROP TABLE b", base + 40)
    h.ddl("CREATE TABLE p (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 2", 9000)
    h.ddl("ALTER TABLE p COALESCE PARTITION 1", 9010)  # rows move between partitions, none is lost
    assert h.changed("p", 9000, 9100) == NEVER


@pytest.mark.parametrize("ddl", ["DROP TABLE c", "RENAME TABLE c TO c_old", "RENAME TABLE c TO c_old, c_new TO c",
                                 "ALTER TABLE c RENAME TO c_old"])  # fmt: skip
def test_a_table_dropped_renamed_or_replaced_before_its_last_read_fails_the_changefeed(ddl: str) -> None:
    h = _History(sqlite3.connect(":memory:"))
    h.ddl("CREATE TABLE c (id INT PRIMARY KEY, v INT)", 10)
    h.ddl("CREATE TABLE c_new (id INT PRIMARY KEY, v INT)", 20)
    h.ddl(ddl, 150)
    h.ddl("CREATE TABLE IF NOT EXISTS c (id INT PRIMARY KEY, v INT)", 160)  # the same columns, another table
    with pytest.raises(UpstreamError) as e:
        h.changed("c", 100, 200)
    assert e.value.code == "CDC:ErrSnapshotTableChanged" and not e.value.retryable
    assert e.value.message.startswith("[CDC:ErrSnapshotTableChanged] snapshot of db.c: the table was dropped, "
                                      "renamed or replaced at ts=150 while it was being copied")  # fmt: skip
    assert "re-create the changefeed" in e.value.message and "\n" not in e.value.message
    assert h.changed("c", 100, 149) == NEVER  # after its last read: streamed as any DDL


ORDERS = TableInfo("db", "orders", 1, COLS)
NOPK = TableInfo("db", "nopk", 4, (ColumnInfo("id", "int", nullable=False, unique_key=True, handle_key=True),
                                   ColumnInfo("v", "varchar")))  # fmt: skip


def _change(table: TableInfo, op: RowOp, t: int, old: int | None, new: int | None) -> RowChange:
    return RowChange(t, table, op, None if old is None else (old, "x"), None if new is None else (new, "x"))


def _handover(tmp_path: Path, table: TableInfo, changed: int) -> TableHandover:
    """``table`` in two chunks: ids 1-2 read at ts 139, id 7 at ts 159; low watermark 110; the DDL at ``changed``."""
    first, second = tmp_path / "0.keys", tmp_path / "1.keys"
    first.write_bytes(b"{}\n" + _keys(table, 1, 2))
    second.write_bytes(b"{}\n" + _keys(table, 7))
    return TableHandover(("id",), 110, 159, ((str(first), 139), (str(second), 159)), changed)


def test_after_a_ddl_the_copy_holds_nothing_exactly_so_a_table_with_a_primary_key_gets_every_change(
    tmp_path: Path,
) -> None:
    a = _handover(tmp_path, ORDERS, 125)
    ins, upd, dele = (lambda t, i: _change(ORDERS, RowOp.INSERT, t, None, i),
                      lambda t, i, j: _change(ORDERS, RowOp.UPDATE, t, i, j),
                      lambda t, i: _change(ORDERS, RowOp.DELETE, t, i, None))  # fmt: skip
    # up to the DDL, as before: the chunk that read the key holds it
    assert a.keep(ins(110, 1)) is None and a.keep(upd(120, 1, 1)) is None and a.keep(upd(125, 7, 7)) is None
    assert a.keep(upd(120, 3, 3)) == upd(120, 3, 3) and a.keep(upd(120, 1, 9)) == ins(120, 9)
    # after it, what a read holds is sent again, whole: the downstream applies it by key, after the DDL
    assert a.keep(upd(130, 1, 1)) == upd(130, 1, 1) and a.keep(upd(150, 7, 7)) == upd(150, 7, 7)
    assert a.keep(dele(130, 2)) == dele(130, 2) and a.keep(ins(150, 7)) == ins(150, 7)
    assert a.keep(upd(130, 1, 7)) == upd(130, 1, 7)  # key-changing, both halves held: sent as it is
    assert a.keep(upd(150, 3, 7)) == upd(150, 3, 7)  # one half held
    assert a.keep(upd(160, 7, 7)) == upd(160, 7, 7)  # after every read, as always
    # a DDL before the low watermark: even what every read holds is sent after it
    early = replace(a, changed=105)
    assert early.keep(ins(106, 1)) == ins(106, 1) and early.keep(ins(105, 1)) is None
    # a table copied in one read (low = high = that read): the same
    one = TableHandover(("id",), 149, 149, (), 120)
    assert one.keep(upd(120, 1, 1)) is None and one.keep(upd(121, 1, 1)) == upd(121, 1, 1)
    assert replace(a, changed=NEVER).keep(upd(130, 1, 1)) is None


def test_a_table_without_a_primary_key_fails_rather_than_apply_a_change_twice(tmp_path: Path) -> None:
    """Its downstream may have no key (the storage consumer creates tables from schema files, which flag primary
    keys only): a change the copy holds, sent again, would be applied twice."""
    u = _handover(tmp_path, NOPK, 125)
    assert u.keep(_change(NOPK, RowOp.UPDATE, 120, 1, 1)) is None  # before the DDL: left out as before
    fresh = _change(NOPK, RowOp.INSERT, 130, None, 3)
    assert u.keep(fresh) == fresh  # after it, but in no read: sent once
    assert u.keep(_change(NOPK, RowOp.UPDATE, 170, 1, 1)) is not None  # after every read
    with pytest.raises(UpstreamError) as e:
        u.keep(_change(NOPK, RowOp.UPDATE, 130, 1, 1))
    assert e.value.code == "CDC:ErrSnapshotTableChanged" and not e.value.retryable
    assert e.value.message.startswith("[CDC:ErrSnapshotTableChanged] snapshot of db.nopk: a DDL at ts=125 changed "
                                      "the table while it was being copied, and the change at ts=130")  # fmt: skip
    assert "no primary key" in e.value.message and "re-create the changefeed" in e.value.message
    keyless = TableHandover((), 149, 149, (), 120)  # copied whole in one read (force-replicate)
    row = RowChange(140, C, RowOp.INSERT, None, (1,))
    later = replace(row, commit_ts=150)
    assert keyless.keep(replace(row, commit_ts=120)) is None and keyless.keep(later) == later
    with pytest.raises(UpstreamError, match=r"snapshot of db\.c: a DDL at ts=120"):
        keyless.keep(row)


def test_keys_hash_as_the_copy_hashed_them_after_a_ddl_changed_their_collation(tmp_path: Path) -> None:
    def table(collation: str, version: int) -> TableInfo:
        return TableInfo("db", "u", 5, (ColumnInfo("k", "varchar", nullable=False, unique_key=True, handle_key=True,
                                                   collation=collation),), version=version)  # fmt: skip

    start, now = table("utf8mb4_general_ci", 1), table("utf8mb4_bin", 2)
    path = tmp_path / "0.keys"
    path.write_bytes(b"{}\n" + pack_keys([key_hasher(start, ("k",))(("Abc",))]))
    u = TableHandover(("k",), 110, 159, ((str(path), 139),), NEVER, ("utf8mb4_general_ci",))
    assert u.keep(RowChange(120, now, RowOp.DELETE, ("abc",), None)) is None  # "abc" is the key the copy read
    assert u.keep(RowChange(120, now, RowOp.DELETE, ("abd",), None)) is not None


def test_the_handover_says_when_a_table_changed_during_its_copy(tmp_path: Path) -> None:
    """streamed_handover finds the DDL in the relay log's index (the history the puller wrote) and passes it on."""
    db = _relay(tmp_path, (115, FILE, 200), (120, FILE, 300), (125, FILE, 350), (140, FILE, 400), (150, FILE, 500),
                (160, FILE, 600))  # fmt: skip
    h = _History(connect_index(db.dir))
    h.ddl("CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10))", 10)
    h.ddl("CREATE TABLE c (v INT)", 11)
    a, c = h.table("a", 100), h.table("c", 100)
    spec = _spec(tmp_path)
    chunks = (Chunk(0, "db", "a", a.table_id, ("id",), None, (5,), 2), Chunk(1, "db", "a", a.table_id, ("id",),
              (5,), None, 1), Chunk(2, "db", "c", c.table_id, (), None, None, 1))  # fmt: skip
    snapshot_state.save_plan(spec.snapshot_plan_path, SnapshotPlan(100, chunks, {"db.a": a, "db.c": c}))
    snapshot_state.record_reads(spec, [ChunkRead(0, 2, 110, FILE, 300, _keys(a, 1, 2)),
                                       ChunkRead(1, 1, 130, FILE, 500, _keys(a, 7)),
                                       ChunkRead(2, 1, 110, FILE, 400)])  # fmt: skip
    h.ddl("ALTER TABLE a ADD COLUMN region VARCHAR(8) DEFAULT 'eu'", 125)  # between the two reads of a
    h.ddl("ALTER TABLE c ADD INDEX (v)", 125)
    handover = snapshot_state.streamed_handover(spec, 100, db)
    assert (handover[("db", "a")].changed, handover[("db", "c")].changed) == (125, NEVER)
    assert handover[("db", "a")].collations == ("binary",)  # an INT key compares bytes-exact
    h.ddl("RENAME TABLE c TO c_old", 130)
    h.ddl("CREATE TABLE c (v INT)", 131)
    with pytest.raises(UpstreamError, match=r"db\.c: the table was dropped, renamed or replaced at ts=130"):
        snapshot_state.streamed_handover(spec, 100, db)
