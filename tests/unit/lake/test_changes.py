"""The batch's net change per key: the last change in commit order wins, key-changing UPDATEs move the row."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.lake.changes import net_change
from tests.unit.lake.support import dele, ins, upd


def test_last_change_per_key_wins() -> None:
    c = net_change([ins(1, 1, "a"), upd(2, (1, "a"), (1, "b")), ins(2, 2, "x"), upd(3, (1, "b"), (1, "c"))], [0])
    assert c.upserts == {(1,): (1, "c"), (2,): (2, "x")}
    assert c.deletes == frozenset()
    assert c.last_ts == 3


def test_insert_then_delete_leaves_a_delete() -> None:
    """The key may exist in the lake table from an earlier batch: the delete must reach it."""
    c = net_change([ins(1, 1, "a"), dele(2, 1, "a")], [0])
    assert c.upserts == {}
    assert c.deletes == {(1,)}


def test_delete_then_reinsert_is_an_upsert() -> None:
    c = net_change([dele(1, 1, "a"), ins(2, 1, "b")], [0])
    assert c.upserts == {(1,): (1, "b")}
    assert c.deletes == frozenset()


def test_key_changing_update_deletes_the_old_key() -> None:
    c = net_change([upd(5, (1, "a"), (2, "a"))], [0])
    assert c.upserts == {(2,): (2, "a")}
    assert c.deletes == {(1,)}


def test_key_swap_in_one_transaction() -> None:
    """1->3, 2->1, 3->2 (a swap through a spare key): both keys end upserted with the swapped values."""
    rows = [upd(5, (1, "a"), (3, "a")), upd(5, (2, "b"), (1, "b")), upd(5, (3, "a"), (2, "a"))]
    c = net_change(rows, [0])
    assert c.upserts == {(1,): (1, "b"), (2,): (2, "a")}
    assert c.deletes == {(3,)}


def test_rows_at_or_below_after_ts_are_skipped() -> None:
    c = net_change([ins(1, 1, "a"), ins(2, 2, "b"), upd(3, (1, "a"), (1, "z"))], [0], after_ts=2)
    assert c.upserts == {(1,): (1, "z")}
    assert c.last_ts == 3


def test_all_replayed_is_empty() -> None:
    c = net_change([ins(1, 1, "a")], [0], after_ts=1)
    assert c.empty and c.last_ts == 0


def test_negative_zero_is_the_zero_key() -> None:
    from tests.unit.lake.support import key_col, table

    t = table(key_col("f", "double"))
    c = net_change([ins(1, 0.0, t=t), dele(2, -0.0, t=t)], [0])
    assert c.upserts == {} and c.deletes == {(0.0,)}


def test_a_batch_that_only_creates_keys_touches_no_existing_row() -> None:
    assert not net_change([ins(1, 1, "a"), upd(2, (1, "a"), (2, "a")), ins(3, 3, "c"), dele(4, 3, "c")],
                          [0]).touches_existing  # fmt: skip
    assert net_change([ins(1, 1, "a"), upd(2, (5, "a"), (5, "b"))], [0]).touches_existing
    assert net_change([dele(1, 7, "a"), ins(2, 7, "b")], [0]).touches_existing


def test_no_key_is_refused() -> None:
    with pytest.raises(ValueError, match="key"):
        net_change([ins(1, 1, "a")], [])


@given(st.lists(st.tuples(st.sampled_from("iud"), st.integers(0, 4), st.integers(0, 4)), max_size=40))
def test_equals_applying_row_by_row(ops: list[tuple[str, int, int]]) -> None:
    """Folding then applying to any starting table = applying every change in order (a model check)."""
    start = {k: (k, "old") for k in (0, 2, 4)}
    state = dict(start)
    rows = []
    for ts, (op, k, k2) in enumerate(ops, 1):
        if op == "i" and k not in state:
            rows.append(ins(ts, k, f"v{ts}"))
            state[k] = (k, f"v{ts}")
        elif op == "u" and k in state and (k2 == k or k2 not in state):
            rows.append(upd(ts, state.pop(k), (k2, f"v{ts}")))
            state[k2] = (k2, f"v{ts}")
        elif op == "d" and k in state:
            rows.append(dele(ts, *state.pop(k)))
    c = net_change(rows, [0])
    folded = dict(start)
    for k in c.deletes:
        folded.pop(k[0], None)
    folded.update({k[0]: v for k, v in c.upserts.items()})
    assert folded == state
    assert not set(c.upserts) & c.deletes
    if not c.touches_existing:  # then appending the upserts to the starting table is the whole change
        assert not {k[0] for k in c.upserts} & set(start)
        assert start | {k[0]: v for k, v in c.upserts.items()} == state
