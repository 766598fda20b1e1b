"""The exact hand-over from a snapshot copy to the stream: which streamed changes the copy already holds (pure,
with the relay log's index as an in-memory SQLite table)."""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparkcdc.capture.snapshot_plan import Chunk
from sparkcdc.errors import StorageError
from sparkcdc.model.events import RowChange, RowOp
from sparkcdc.model.table import ColumnInfo, TableInfo
from sparkcdc.pipeline import snapshot_state
from sparkcdc.pipeline.snapshot_handover import TableHandover, key_hasher, pack_keys
from sparkcdc.pipeline.snapshot_state import ChunkRead, SnapshotPlan

COLS = (ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True), ColumnInfo("v", "varchar"))
A = TableInfo("db", "a", 1, COLS)
B = TableInfo("db", "b", 2, COLS)
C = TableInfo("db", "c", 3, (ColumnInfo("v", "int"),))  # no key: copied whole (force-replicate)
FILE = "bin.000001"


def _spec(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(state_dir=str(tmp_path), snapshot_plan_path=tmp_path / "plan",
                           snapshot_progress_path=tmp_path / "snapshot.json")  # fmt: skip


def _relay(*txns: tuple[int, str, int]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE txn(commit_ts INTEGER PRIMARY KEY, binlog_file TEXT, binlog_pos INTEGER)")
    db.executemany("INSERT INTO txn VALUES (?, ?, ?)", txns)
    return db


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
    db = _relay((115, FILE, 200), (120, FILE, 300), (140, FILE, 400), (150, FILE, 500), (160, FILE, 600))
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
    db = _relay((115, FILE, 200), (120, FILE, 300), (140, FILE, 400))
    a = snapshot_state.streamed_handover(spec, 120, db)[("db", "a")]
    assert [u for _, u in a.chunks] == [139, 2**63 - 1]  # the relay log has not passed chunk 1's read yet
    assert a.keep(_upd(140, 7, 7)) is None
    db.execute("INSERT INTO txn VALUES (150, ?, 500), (160, ?, 600)", (FILE, FILE))
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


def test_the_read_position_maps_to_the_last_commit_within_it() -> None:
    rng = random.Random(7)
    txns, ts, pos, seq = [], 1000, 4, 1
    for _ in range(300):
        ts += rng.randint(1, 5000)
        pos += rng.randint(10, 300)
        if rng.random() < 0.05:
            seq, pos = seq + 1, 4 + rng.randint(10, 300)  # binlog rotated
        txns.append((ts, f"bin.{seq:06d}", pos))
    db = _relay(*txns)
    for _ in range(200):
        point = rng.choice(txns)
        p = (point[1], point[2] + rng.choice((0, 0, 5)))
        after = [t for t, f, q in txns if (int(f[-6:]), q) > (int(p[0][-6:]), p[1])]
        expected = after[0] - 1 if after else None
        assert snapshot_state.last_commit_at(db, p, 1000) == expected
    assert snapshot_state.last_commit_at(db, ("bin.000001", 0), txns[-1][0]) == txns[-1][0]


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
