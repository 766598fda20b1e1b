"""The snapshot's config, plan SQL and progress bookkeeping (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkcdc.capture.snapshot_plan import Chunk, key_after
from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.errors import ConfigError, StorageError
from sparkcdc.model.table import ColumnInfo, TableInfo
from sparkcdc.pipeline import snapshot_state
from sparkcdc.pipeline.snapshot_state import ChunkRead, SnapshotPlan


def test_snapshot_table_defaults_round_trips_and_refuses_bad_values() -> None:
    assert ReplicaConfig().snapshot.mode == "never"
    cfg = ReplicaConfig.from_toml({"snapshot": {"mode": "initial-only", "chunk-size": 500, "parallelism": 2}})
    assert (cfg.snapshot.mode, cfg.snapshot.chunk_size, cfg.snapshot.parallelism) == ("initial-only", 500, 2)
    assert ReplicaConfig.from_toml(cfg.to_toml()) == cfg
    assert ReplicaConfig.from_api(json.loads(json.dumps(cfg.to_api()))) == cfg
    assert cfg.to_api()["snapshot"] == {"mode": "initial-only", "chunk_size": 500, "parallelism": 2}
    for bad, words in [
        ({"mode": "always"}, "snapshot.mode: 'always' is not one of never, initial, initial-only"),
        ({"chunk-size": 0}, "snapshot.chunk-size: 0 is not an integer from 1"),
        ({"parallelism": "4"}, "snapshot.parallelism: '4' is not an integer"),
        ({"chunk-size": True}, "snapshot.chunk-size: True"),
        ({"chunk_size": 10}, "snapshot.chunk_size: unknown key"),
    ]:
        with pytest.raises(ConfigError) as e:
            ReplicaConfig.from_toml({"snapshot": bad})
        assert words in e.value.message


def test_chunk_ranges_are_half_open_and_composite_keys_are_spelled_out() -> None:
    sql, params = key_after(("a", "b"), (1, "x"))
    assert sql == "((`a` > %s) OR (`a` = %s AND `b` > %s))"
    assert params == [1, 1, "x"]
    chunk = Chunk(3, "db", "t`x", 7, ("id",), (10,), (20,), 10)
    where, params = chunk.where()
    assert where == " WHERE ((`id` > %s)) AND NOT ((`id` > %s))"
    assert params == [10, 20]
    assert chunk.from_clause() == "`db`.`t``x`"
    assert chunk.order_by() == " ORDER BY `id`"
    whole = Chunk(0, "db", "t", 1, (), None, None, 5)
    assert whole.where() == ("", []) and whole.order_by() == ""


def _plan() -> SnapshotPlan:
    cols = (ColumnInfo("id", "int", primary_key=True, handle_key=True),)
    a, b = TableInfo("db", "a", 1, cols), TableInfo("db", "b", 2, cols)
    chunks = (
        Chunk(0, "db", "a", 1, ("id",), None, (5,), 5),
        Chunk(1, "db", "a", 1, ("id",), (5,), None, 3),
        Chunk(2, "db", "b", 2, ("id",), None, None, 4),
    )
    return SnapshotPlan(100, chunks, {"db.a": a, "db.b": b})


def test_progress_counts_each_chunk_once_and_keeps_the_lowest_watermark(tmp_path: Path) -> None:
    plan = _plan()
    p = snapshot_state.record_chunks(plan, None, [ChunkRead(0, 5, 120)])
    assert p.tables["db.a"].chunks_done == 1 and p.tables["db.a"].rows_estimated == 8
    assert not p.complete and snapshot_state.done_prefix(p, plan) == 1
    p = snapshot_state.record_chunks(plan, p, [ChunkRead(0, 6, 150), ChunkRead(2, 4, 150)])  # chunk 0 replayed
    assert p.tables["db.a"].rows_done == 5 and p.tables["db.a"].watermark == 120
    assert snapshot_state.done_prefix(p, plan) == 1  # chunk 1 is missing
    p = snapshot_state.record_chunks(plan, p, [ChunkRead(1, 3, 160)])
    assert p.complete and p.rows_done == 12 and snapshot_state.done_prefix(p, plan) == 3
    path = tmp_path / "snapshot.json"
    snapshot_state.write_progress(path, p)
    assert snapshot_state.read_progress(path) == p
    assert (p.tables["db.a"].watermark, p.tables["db.b"].watermark) == (120, 150)
    shown = p.to_api()
    assert shown["state"] == "finished" and shown["rows_done"] == 12
    assert shown["tables"][0] == {"table": "db.a", "chunks": 2, "chunks_done": 2, "rows_done": 8,
                                  "rows_estimated": 8}  # fmt: skip


def test_a_damaged_plan_is_reported_and_a_missing_one_is_none(tmp_path: Path) -> None:
    path = tmp_path / "plan"
    assert snapshot_state.load_plan(path) is None
    snapshot_state.save_plan(path, _plan())
    assert snapshot_state.load_plan(path) == _plan()
    path.write_bytes(b"\x80garbage")
    with pytest.raises(StorageError) as e:
        snapshot_state.load_plan(path)
    assert "snapshot plan is damaged" in e.value.message and "delete it" in e.value.message
    assert snapshot_state.read_progress(tmp_path / "none.json") is None
