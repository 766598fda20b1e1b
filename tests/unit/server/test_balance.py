"""Balance by count: where changefeeds go when captures come, go, or are drained."""

from __future__ import annotations

from sparkcdc.server.balance import Move, plan


def _apply(placed: dict, moves: list[Move]) -> dict:
    out = dict(placed)
    for m in moves:
        assert out[m.key] == m.source or (m.source is None and out[m.key] not in ("a", "b", "c", "d"))
        out[m.key] = m.target
    return out


def _counts(placed: dict) -> dict:
    return {c: list(placed.values()).count(c) for c in set(placed.values())}


def test_new_changefeeds_go_to_the_emptiest_capture_the_owner_then_the_lowest_id_first() -> None:
    placed = {("default", f"cf{i}"): None for i in range(5)}
    moves = plan(placed, ["b", "a", "c"])
    assert [m.target for m in moves] == ["a", "b", "c", "a", "b"]
    assert all(m.source is None for m in moves)
    assert [m.target for m in plan(placed, ["b", "a", "c"], first="c")] == ["c", "a", "b", "c", "a"]


def test_a_new_capture_gets_its_share_and_nothing_moves_when_balanced() -> None:
    placed = {("default", f"cf{i}"): "a" if i < 3 else "b" for i in range(6)}
    moves = plan(placed, ["a", "b", "c"])
    after = _apply(placed, moves)
    assert _counts(after) == {"a": 2, "b": 2, "c": 2}
    assert len(moves) == 2 and {m.source for m in moves} == {"a", "b"}
    assert plan(after, ["a", "b", "c"]) == []
    assert plan({("default", "x"): "a", ("default", "y"): "a", ("default", "z"): "b"}, ["a", "b"]) == []  # 2 vs 1 stays


def test_a_dead_captures_changefeeds_restart_and_a_drained_one_hands_all_on() -> None:
    placed = {("default", "cf1"): "a", ("default", "cf2"): "gone", ("default", "cf3"): "b", ("default", "cf4"): "b"}
    moves = plan(placed, ["a", "b"])
    assert moves == [Move(("default", "cf2"), None, "a")]
    after = _apply(placed, moves)
    drained = plan(after, ["a", "b"], draining=["b"])
    assert {m.key for m in drained} == {("default", "cf3"), ("default", "cf4")}
    assert all(m.source == "b" and m.target == "a" for m in drained)


def test_nothing_is_planned_when_no_capture_can_take_changefeeds() -> None:
    assert plan({("default", "cf"): "a"}, ["a"], draining=["a"]) == []
    assert plan({("default", "cf"): None}, []) == []
