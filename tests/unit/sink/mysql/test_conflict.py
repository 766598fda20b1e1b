"""Conflict detection of the MySQL sink: which transactions of a table may run side by side, and which checkpoints
each downstream transaction moves."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib

from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from sparkcdc.sink.mysql.conflict import SLOTS, KeySlots, plan_steps, slot_partition, table_waves

PK = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)


def table(name: str = "t", *, collation: str | None = None, indexes: tuple[IndexInfo, ...] = PK,
          key_type: str = "int") -> TableInfo:  # fmt: skip
    cols = (ColumnInfo("id", key_type, nullable=False, collation=collation), ColumnInfo("u", "int"))
    return TableInfo("db", name, 1, with_handle_keys(cols, indexes), indexes, 1)


def slot_of(key: object) -> int:
    return zlib.crc32(repr((key,)).encode()) % SLOTS


def keys_in_distinct_slots(n: int) -> list[int]:
    out: list[int] = []
    k = 0
    while len(out) < n:
        k += 1
        if slot_of(k) not in {slot_of(x) for x in out}:
            out.append(k)
    return out


def put(t: TableInfo, ts: int, k: int, u: int | None = None) -> RowChange:
    return RowChange(ts, t, RowOp.INSERT, None, (k, u))


def test_independent_transactions_go_to_their_slots_in_commit_order() -> None:
    t = table()
    a, b = keys_in_distinct_slots(2)
    rows = [put(t, 10, a), put(t, 20, b), put(t, 30, a)]
    [wave] = table_waves(rows, batch_rows=100)
    assert set(wave) == {("db", "t", slot_partition(slot_of(a))), ("db", "t", slot_partition(slot_of(b)))}
    [batch] = wave[("db", "t", slot_partition(slot_of(a)))]
    assert [r.commit_ts for r in batch.rows] == [10, 30] and batch.position.commit_ts == 30


def test_a_transaction_on_several_slots_is_a_barrier_in_slot_0s_stream() -> None:
    t = table()
    a, b = keys_in_distinct_slots(2)
    rows = [put(t, 10, a), put(t, 20, a), put(t, 20, b), put(t, 21, a), put(t, 21, b), put(t, 30, b)]
    waves = table_waves(rows, batch_rows=100)
    assert len(waves) == 3
    [(key, [batch])] = waves[1].items()
    assert key == ("db", "t", slot_partition(0)) and batch.position.commit_ts == 21
    assert [r.commit_ts for r in batch.rows] == [20, 20, 21, 21]  # consecutive barriers share one stream
    assert [r.commit_ts for b in waves[2].values() for r in b[0].rows] == [30]


def test_a_key_change_touches_the_old_and_the_new_key() -> None:
    t = table()
    a, b = keys_in_distinct_slots(2)
    change = RowChange(10, t, RowOp.UPDATE, (a, 1), (b, 1))
    assert KeySlots(t).of(change) == {slot_of(a), slot_of(b)}


def test_unique_keys_count_and_nulls_do_not_conflict() -> None:
    indexes = (*PK, IndexInfo("u", ("u",), unique=True))
    t = table(indexes=indexes)
    assert KeySlots(t).of(put(t, 1, 5, 7)) == {slot_of(5), slot_of(7)}
    assert KeySlots(t).of(put(t, 1, 5, None)) == {slot_of(5)}


def test_text_keys_under_a_case_insensitive_collation_and_keyless_tables_go_serially() -> None:
    ci = table(key_type="varchar", collation="utf8mb4_general_ci")
    assert KeySlots(ci).of(RowChange(1, ci, RowOp.INSERT, None, ("a", 1))) == set(range(SLOTS))
    binary = table(key_type="varchar", collation="utf8mb4_bin")
    assert len(KeySlots(binary).of(RowChange(1, binary, RowOp.INSERT, None, ("a", 1)))) == 1
    keyless = TableInfo("db", "k", 1, (ColumnInfo("x", "int"),))
    waves = table_waves([RowChange(1, keyless, RowOp.INSERT, None, (1,))], batch_rows=10)
    assert [list(w) for w in waves] == [[("db", "k", slot_partition(0))]]


def test_slots_do_not_depend_on_the_process_hash_seed() -> None:
    code = ("from tests.unit.sink.mysql.test_conflict import table, put; from sparkcdc.sink.mysql.conflict import "
            "KeySlots; t = table('t', key_type='varchar', collation='utf8mb4_bin'); "
            "from sparkcdc.model import RowChange, RowOp; "
            "print(sorted(KeySlots(t).of(RowChange(1, t, RowOp.INSERT, None, ('k\\u00e9y', 1)))))")
    seen = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed},
                           capture_output=True, text=True, check=True).stdout for seed in ("1", "2", "3")}  # fmt: skip
    assert len(seen) == 1


def test_steps_run_the_waves_of_different_tables_side_by_side() -> None:
    t, u = table("t"), table("u")
    a, b = keys_in_distinct_slots(2)
    rows = [put(t, 10, a), put(t, 10, b), put(t, 20, a), put(u, 15, a)]
    steps = plan_steps(rows, upto=20, batch_rows=100)
    assert len(steps) == 2 and all(s.upto == 20 for s in steps)
    assert {k[1] for k in steps[0].streams} == {"t", "u"}  # t's barrier beside u's slot stream
    assert {k[1] for k in steps[1].streams} == {"t"}
