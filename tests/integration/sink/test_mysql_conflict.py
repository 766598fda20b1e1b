"""The MySQL sink's conflict-detection plan applied by the apply engine on a real MariaDB, interrupted at any
stream of any step and replayed from the start: the downstream ends equal to the upstream's final state, and
exactly what was applied before the interruption is skipped."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.steps import RowsStep
from sparkcdc.model.table import with_handle_keys
from sparkcdc.mysql.engine import ApplyEngine
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.sink.mysql.conflict import plan_steps
from sparkcdc.sink.mysql.session import CHECKPOINT_SCHEMA
from tests.integration.consumer.servers import run_sql

pytestmark = pytest.mark.integration

DB = "conflict_db"
_IDX = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
T = TableInfo(DB, "t", 1, with_handle_keys((ColumnInfo("id", "int", nullable=False), ColumnInfo("n", "int")), _IDX),
              _IDX, 1)  # fmt: skip


@pytest.fixture
def downstream(target: MysqlTarget) -> Iterator[MysqlTarget]:
    run_sql(target, f"DROP DATABASE IF EXISTS {DB}", f"DROP DATABASE IF EXISTS {CHECKPOINT_SCHEMA}",
            f"CREATE DATABASE {DB}", f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, n INT)")  # fmt: skip
    yield target
    run_sql(target, f"DROP DATABASE IF EXISTS {DB}")


def workload(seed: int) -> tuple[list[RowChange], dict[int, int]]:
    """Single-row transactions with inserts, updates, deletes and key changes, and some multi-row ones."""
    rng = random.Random(seed)
    state: dict[int, int] = {}
    rows: list[RowChange] = []
    for ts in range(100, 400):
        txn: list[RowChange] = []
        for _ in range(3 if ts % 25 == 0 else 1):
            k = rng.randint(1, 30)
            if k not in state:
                state[k] = rng.randint(0, 9)
                txn.append(RowChange(ts, T, RowOp.INSERT, None, (k, state[k])))
            elif rng.random() < 0.2:
                txn.append(RowChange(ts, T, RowOp.DELETE, (k, state.pop(k)), None))
            elif rng.random() < 0.2 and (new := rng.randint(31, 60)) not in state:
                state[new] = state.pop(k)
                txn.append(RowChange(ts, T, RowOp.UPDATE, (k, state[new]), (new, state[new])))
            else:
                old, state[k] = state[k], state[k] + 1
                txn.append(RowChange(ts, T, RowOp.UPDATE, (k, old), (k, state[k])))
        rows.extend(txn)
    return rows, state


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_interrupted_plan_replayed_from_the_start_ends_equal(downstream: MysqlTarget, seed: int) -> None:
    rows, final = workload(seed)
    steps = plan_steps(rows, upto=400, batch_rows=7)
    assert len(steps) > 3 and any(len(s.streams) > 1 for s in steps)  # parallel waves and barriers
    rng = random.Random(seed)
    cut = rng.randrange(len(steps))
    keys = sorted(steps[cut].streams)
    done = keys[: rng.randrange(len(keys))]
    first = ApplyEngine(downstream, changefeed="c", workers=4, checkpoint_schema=CHECKPOINT_SCHEMA)
    for step in steps[:cut]:
        first.apply(step)
    first.apply(RowsStep({k: steps[cut].streams[k] for k in done}, 400))  # the crash: some streams of a wave
    first.close()
    replay = ApplyEngine(downstream, changefeed="c", workers=4, checkpoint_schema=CHECKPOINT_SCHEMA)
    for step in steps:
        replay.apply(step)
    replay.close()
    assert dict(run_sql(downstream, f"SELECT id, n FROM {DB}.t")) == final
    assert replay.stats.replayed_skipped + replay.stats.rows_applied == len(rows)
    assert replay.stats.replayed_skipped == first.stats.rows_applied
