"""The apply engine on a real downstream: its dedup rules per kind of stream, parallel streams, the DDL barrier's
replay handling and table creation, independent of any source."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sparkcdc.model import ColumnInfo, DDLAction, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.steps import DDL_PARTITION, ORDERED_PARTITION, Batch, Checkpoint, DdlStep, RowsStep, ordered_step
from sparkcdc.model.table import with_handle_keys
from sparkcdc.mysql.engine import ApplyEngine
from sparkcdc.mysql.target import MysqlTarget
from tests.integration.consumer.servers import run_sql
from tests.support import wait_for

pytestmark = pytest.mark.integration

DB = "engine_db"
_IDX = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)


def table(name: str) -> TableInfo:
    cols = (ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "varchar", length=20))
    return TableInfo(DB, name, 1, with_handle_keys(cols, _IDX), _IDX, 1)


def put(t: TableInfo, ts: int, key: int, value: str) -> RowChange:
    return RowChange(ts, t, RowOp.INSERT, None, (key, value))


@pytest.fixture
def downstream(target: MysqlTarget) -> Iterator[MysqlTarget]:
    run_sql(target, f"DROP DATABASE IF EXISTS {DB}", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            f"CREATE DATABASE {DB}",
            *(f"CREATE TABLE {DB}.{n} (id INT PRIMARY KEY, v VARCHAR(20))" for n in "ab"))  # fmt: skip
    yield target
    run_sql(target, f"DROP DATABASE IF EXISTS {DB}")


def rows(target: MysqlTarget, name: str) -> list[tuple[object, ...]]:
    conn = target.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT id, v FROM {DB}.{name} ORDER BY id")
            return list(cur.fetchall())
    finally:
        conn.close()


def test_ordered_streams_skip_replays_at_or_below_the_checkpoint_never_moving_it_back(downstream: MysqlTarget) -> None:
    a, b = table("a"), table("b")
    engine = ApplyEngine(downstream, changefeed="e1", workers=2)
    engine.apply(ordered_step([put(a, 10, 1, "x"), put(b, 10, 1, "y"), put(a, 20, 2, "x")], 20))
    assert engine.stats.rows_applied == 3 and engine.stats.applied_ts == 20
    run_sql(downstream, f"UPDATE {DB}.a SET v='later' WHERE id=1")  # a replay of ts 10 must not undo this
    engine.apply(ordered_step([put(a, 10, 1, "x"), put(a, 20, 2, "x")], 20))
    assert engine.stats.replayed_skipped == 2 and rows(downstream, "a") == [(1, "later"), (2, "x")]
    again = ApplyEngine(downstream, changefeed="e1")  # a restart reads the checkpoints back
    assert again.checkpoints[(DB, "a", ORDERED_PARTITION)].commit_ts == 20
    again.apply(ordered_step([put(a, 15, 3, "old")], 15))  # all below: the checkpoint stays at 20
    assert again.checkpoints[(DB, "a", ORDERED_PARTITION)].commit_ts == 20
    again.apply(ordered_step([put(a, 20, 2, "dup"), put(a, 30, 4, "new")], 30))
    assert rows(downstream, "a") == [(1, "later"), (2, "x"), (4, "new")]
    assert again.stats.replayed_skipped == 2 and again.stats.rows_applied == 1
    engine.close()
    again.close()


def test_positioned_streams_apply_equal_commit_ts_and_skip_only_lower_ones(downstream: MysqlTarget) -> None:
    """A storage stream may stop inside a transaction spanning files: rows at the checkpoint's commit-ts go in,
    rows below it (a producer's replay) are skipped, also within one batch."""
    a = table("a")
    engine = ApplyEngine(downstream, changefeed="e2")
    key = (DB, "a", 0)
    engine.apply(RowsStep({key: [Batch([put(a, 10, 1, "x")], Checkpoint(DB, "a", 0, 5, "", 1, 1, 10))]}, 10))
    replayed = [put(a, 10, 2, "same-txn"), put(a, 12, 3, "new"), put(a, 11, 9, "replay"), put(a, 9, 8, "old")]
    engine.apply(RowsStep({key: [Batch(replayed, Checkpoint(DB, "a", 0, 5, "", 2, 4, 12))]}, 12))
    assert rows(downstream, "a") == [(1, "x"), (2, "same-txn"), (3, "new")]
    assert engine.stats.replayed_skipped == 2
    assert engine.checkpoints[key].position == (5, "", 2, 4)
    engine.close()


def test_streams_run_in_parallel_and_one_failure_fails_the_step(downstream: MysqlTarget) -> None:
    a, b = table("a"), table("b")
    missing = TableInfo(DB, "gone", 1, a.columns, _IDX, 1)
    engine = ApplyEngine(downstream, changefeed="e3", workers=3)
    step = ordered_step([put(a, 10, 1, "x"), put(b, 10, 2, "y"), put(missing, 10, 3, "z")], 10)
    with pytest.raises(Exception, match="gone"):
        engine.apply(step)
    assert rows(downstream, "a") == [(1, "x")] and rows(downstream, "b") == [(2, "y")]  # the others committed
    assert (DB, "gone", ORDERED_PARTITION) not in ApplyEngine(downstream, changefeed="e3").checkpoints
    engine.close()


def test_a_missing_table_is_created_once_from_the_batch(downstream: MysqlTarget) -> None:
    made: list[str] = []
    created = TableInfo(DB, "c", 1, table("a").columns, _IDX, 1)

    def create() -> list[str]:
        made.append("c")
        return [f"CREATE TABLE IF NOT EXISTS {DB}.c (id INT PRIMARY KEY, v VARCHAR(20))"]

    engine = ApplyEngine(downstream, changefeed="e4")
    for ts in (10, 20):
        cp = Checkpoint(DB, "c", 0, 1, "", ts, 1, ts)
        engine.apply(RowsStep({(DB, "c", 0): [Batch([put(created, ts, ts, "v")], cp, create)]}, ts))
    assert made == ["c"] and rows(downstream, "c") == [(10, "v"), (20, "v")]
    engine.close()


def test_a_ddl_runs_once_and_a_pending_one_is_replayed_tolerantly(downstream: MysqlTarget) -> None:
    engine = ApplyEngine(downstream, changefeed="e5")
    add = DdlStep(DB, "a", f"ALTER TABLE {DB}.a ADD COLUMN w INT", int(DDLAction.ADD_COLUMN), 50)
    engine.apply(add)
    engine.apply(add)  # at or below the DDL stream: skipped, no duplicate-column error
    assert (engine.stats.ddls_executed, engine.stats.ddls_skipped) == (1, 1) and engine.ddl_version(DB, "a") == 50
    # a crash after the DDL ran but before it was recorded leaves it pending: the replay ignores "already done"
    run_sql(downstream, "UPDATE sparkcdc_consumer.checkpoint SET table_version=0, pending_version=50 "
                        f"WHERE changefeed='e5' AND tbl='a' AND part={DDL_PARTITION}")  # fmt: skip
    restarted = ApplyEngine(downstream, changefeed="e5")
    restarted.apply(add)
    assert restarted.stats.ddls_skipped == 1 and restarted.ddl_version(DB, "a") == 50
    bad = DdlStep(DB, "a", "ALTER TABLE nowhere.x ADD COLUMN y INT", int(DDLAction.ADD_COLUMN), 60, source="s.json")
    with pytest.raises(Exception, match=r"^s\.json: "):
        restarted.apply(bad)
    engine.close()
    restarted.close()


def test_rows_and_ddls_without_commit_ts_are_always_applied(downstream: MysqlTarget) -> None:
    """canal-json without the TiDB extension (issue 26, item 2): commit-ts 0 says nothing about replays, so such rows
    are never skipped, even after rows with commit-ts were checkpointed, and are cut into batches anywhere; a DDL
    without commit-ts runs each time it comes (a second TRUNCATE is a second TRUNCATE), tolerating "already done"."""
    a = table("a")
    engine = ApplyEngine(downstream, changefeed="e7")
    engine.apply(ordered_step([put(a, 10, 1, "ts")], 10))
    engine.apply(ordered_step([put(a, 0, 2, "none"), put(a, 0, 3, "none"), put(a, 0, 4, "none")], 0, batch_rows=2))
    assert engine.stats.rows_applied == 4 and engine.stats.replayed_skipped == 0
    assert rows(downstream, "a") == [(1, "ts"), (2, "none"), (3, "none"), (4, "none")]
    truncate = DdlStep(DB, "a", f"TRUNCATE TABLE {DB}.a", int(DDLAction.TRUNCATE_TABLE), 0)
    add = DdlStep(DB, "a", f"ALTER TABLE {DB}.a ADD COLUMN w INT", int(DDLAction.ADD_COLUMN), 0)
    engine.apply(truncate)
    engine.apply(ordered_step([put(a, 0, 5, "again")], 0))
    engine.apply(truncate)
    engine.apply(add)
    engine.apply(add)  # its replay after a restart from older offsets: "duplicate column" is ignored
    assert rows(downstream, "a") == [] and engine.stats.ddls_executed == 3 and engine.stats.ddls_skipped == 1
    engine.close()


def test_connections_stay_bounded_over_many_parallel_steps(downstream: MysqlTarget) -> None:
    """Each parallel step reuses the engine's worker threads and their connections (a pool per step leaked four
    connections a step until the server refused more)."""

    def connections() -> int:
        return int(run_sql(downstream, "SELECT COUNT(*) FROM information_schema.PROCESSLIST")[0][0])

    before = connections()
    engine = ApplyEngine(downstream, changefeed="e6", workers=3)
    a, b = table("a"), table("b")
    for ts in range(10, 60):
        engine.apply(ordered_step([put(a, ts, ts, "x"), put(b, ts, ts, "y")], ts))
    assert engine.stats.rows_applied == 100
    assert connections() - before <= 1 + 3  # the engine's own and one per worker thread
    engine.close()
    assert connections() <= before


def test_connections_the_downstream_closed_while_idle_are_replaced_before_use(downstream: MysqlTarget) -> None:
    """A downstream restart (or its wait_timeout) closes the engine's idle connections. The next step connects
    again instead of failing on each of them with 2013 "Lost connection": a Spark worker whose engine sat idle
    through a downstream restart spent its whole retry time on its stale connections, one failed attempt each, and
    the changefeed went to warning long after the downstream was back."""
    marker = int(run_sql(downstream, "SELECT CONNECTION_ID()")[0][0])
    engine = ApplyEngine(downstream, changefeed="e7", workers=3)
    a, b = table("a"), table("b")
    engine.apply(ordered_step([put(a, 10, 1, "x"), put(b, 10, 1, "y")], 10))

    def ours() -> list[int]:
        found = run_sql(downstream, "SELECT ID FROM information_schema.PROCESSLIST "
                                    f"WHERE ID > {marker} AND ID <> CONNECTION_ID()")  # fmt: skip
        return [int(r[0]) for r in found]

    engine_connections = ours()
    assert len(engine_connections) >= 3  # the engine's own and one per stream
    run_sql(downstream, *(f"KILL CONNECTION {i}" for i in engine_connections))
    wait_for(lambda: not set(ours()) & set(engine_connections), 10, "the killed connections to close")
    engine.reload()
    engine.apply(ordered_step([put(a, 20, 2, "x"), put(b, 20, 2, "y")], 20))
    assert rows(downstream, "a") == [(1, "x"), (2, "x")] and rows(downstream, "b") == [(1, "y"), (2, "y")]
    engine.close()
