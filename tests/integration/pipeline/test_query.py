"""The changefeed query on real Spark (local[2]) from a real MariaDB's relay log to a file:// storage sink and to a
MySQL sink (a second MariaDB)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.pipeline.progress import read_progress
from sparkcdc.pipeline.query import route_aligned, start_query
from sparkcdc.pipeline.runner import query_failure
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.storage.external import ExternalStorage
from tests.e2e.lake_readers import read_delta
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.consumer.servers import run_sql
from tests.integration.pipeline.conftest import PullerThread
from tests.integration.pipeline.replay import layout_violations, replay, text
from tests.support import wait_for

pytestmark = pytest.mark.integration

TABLES = ["a", "b", "c", "late"]


def _select(db: FreshDatabase) -> Any:
    def run(sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        with db.conn.cursor() as cur:
            cur.execute(sql)
            return [d[0] for d in cur.description], list(cur.fetchall())

    return run


def workload(db: FreshDatabase) -> None:
    db.execute(
        "INSERT INTO a VALUES (1, 'one', 1.50), (2, 'two', NULL), (3, 'three', 3.25)",
        "INSERT INTO b VALUES (10, 100), (11, 110), (12, 120)",
        "INSERT INTO c VALUES (1, 'x'), (2, 'y')",
        "INSERT INTO nopk VALUES (1, 'skipped')",
        "BEGIN",
        "UPDATE a SET v = 'uno' WHERE id = 1",
        "UPDATE b SET id = 13 WHERE id = 12",  # key-changing update: DELETE + INSERT
        "DELETE FROM c WHERE id = 2",
        "COMMIT",
        "ALTER TABLE a ADD COLUMN extra INT NOT NULL DEFAULT 7",
        "INSERT INTO a VALUES (4, 'four', 4.00, 8)",
        "UPDATE a SET extra = 9 WHERE id = 2",
        "CREATE TABLE late (id INT PRIMARY KEY, note VARCHAR(20))",
        "INSERT INTO late VALUES (1, 'new table')",
        "DELETE FROM a WHERE id = 3",
        "UPDATE b SET n = n + 1",
    )


def expected(db: FreshDatabase, tables: list[str] = TABLES) -> dict[str, Any]:
    """Every row of ``tables`` by the text of its first column, as ``replay`` rebuilds them."""
    run = _select(db)
    out: dict[str, Any] = {}
    for t in tables:
        cols, rows = run(f"SELECT * FROM `{db.name}`.`{t}`")
        out[f"{db.name}.{t}"] = {text(r[0]): {c: text(v) for c, v in zip(cols, r, strict=True)} for r in rows}
    return out


TABLE_DDL = (
    "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20), d DECIMAL(10,2))",
    "CREATE TABLE b (id INT PRIMARY KEY, n BIGINT)",
    "CREATE TABLE c (id INT PRIMARY KEY, s VARCHAR(10))",
    "CREATE TABLE nopk (id INT, s VARCHAR(10))",
)


# DDLs of tables without a key: no sink gets them without force-replicate
KEYLESS_DDL = ("ALTER TABLE nopk ADD COLUMN n INT", "CREATE TABLE nokey2 (id INT)")


def spec_for(db: FreshDatabase, puller: PullerThread, tmp_path: Path, uri: str) -> FeedSpec:
    """A changefeed of ``db``'s tables (created upstream first) into ``uri``, from now."""
    db.execute(*TABLE_DDL)
    start = puller.caught_up()
    return FeedSpec(changefeed="default/cf1", capture_dir=str(puller.data_dir), state_dir=str(tmp_path / "cf1"),
                    sink_uri=uri, config={"filter": {"rules": [f"{db.name}.*"]}}, start_ts=start,
                    sink_start_ts=start)  # fmt: skip


def run_workload(
    spark: Any, spec: FeedSpec, db: FreshDatabase, puller: PullerThread, capsys: Any,
    checkpoint: Callable[[], int | None] | None = None, more: Sequence[str] = (),
) -> tuple[str, list[int], int]:  # fmt: skip
    """Runs ``workload`` and then the statements ``more`` through the query of ``spec`` until ``checkpoint()``
    (default: the runner's progress file) passes them. Returns the query's physical plan, every checkpoint seen in
    order, and the workload's end."""

    def progress() -> int | None:
        found = read_progress(Path(spec.state_dir) / "progress.json")
        return None if found is None else found.checkpoint_ts

    read = checkpoint or progress
    query = start_query(spark, spec, trigger_seconds=0.5)
    seen: list[int] = []
    try:
        workload(db)
        db.execute(*more)
        end = puller.caught_up()

        def checkpoint_reached() -> bool:
            assert query.exception() is None, query.exception()
            ts = read()
            if ts is not None and (not seen or seen[-1] != ts):
                seen.append(ts)
            return bool(seen) and seen[-1] >= end

        wait_for(checkpoint_reached, 120, "checkpoint to pass the workload")
        capsys.readouterr()
        query.explain()
        plan: str = capsys.readouterr().out
    finally:
        query.stop()
    return plan, seen, end


def test_mixed_workload_with_ddl_replays_exactly(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, tmp_path: Path, capsys: Any
) -> None:
    """The storage sink routes by table, so its writer tasks read the relay log themselves: no shuffle. The DDLs of
    tables without a key (no force-replicate) write nothing, as TiCDC's."""
    db = fresh_db
    sink = tmp_path / "sink"
    uri = f"file://{sink}?protocol=canal-json&worker-count=3"
    spec = spec_for(db, puller_thread, tmp_path, uri)

    def metadata() -> int | None:
        raw = (sink / "metadata").read_bytes() if (sink / "metadata").exists() else None
        return None if raw is None else int(json.loads(raw)["checkpoint-ts"])

    plan, seen, end = run_workload(spark, spec, db, puller_thread, capsys, metadata, more=KEYLESS_DDL)
    assert "WriteToDataSourceV2" in plan and "Exchange" not in plan  # reading and writing in one stage
    assert seen == sorted(seen)
    progress = read_progress(Path(spec.state_dir) / "progress.json")
    assert progress is not None and progress.checkpoint_ts == seen[-1]

    checkpoint, got = replay(uri)
    want = expected(db)
    assert checkpoint >= end
    for name, rows in want.items():
        assert got.get(name, {}) == rows, name
    assert f"{db.name}.nopk" not in got  # no PK / UK: not eligible
    storage = ExternalStorage.from_uri(uri)
    assert layout_violations(storage) == []
    paths = storage.list("")
    assert not [p for p in paths if p.startswith((f"{db.name}/nopk/", f"{db.name}/nokey2/"))]
    # the DDL's schema file carries its query; rows after it live in its version directory
    ddl_files = [p for p in paths if p.startswith(f"{db.name}/a/meta/schema_")]
    assert len(ddl_files) == 2
    ddl_doc = json.loads(storage.read(sorted(ddl_files)[-1]) or b"{}")
    assert "ADD COLUMN" in ddl_doc["Query"].upper() and ddl_doc["Type"] == 5
    assert any(p.startswith(f"{db.name}/a/{ddl_doc['TableVersion']}/") for p in paths)
    assert any(p.startswith(f"{db.name}/late/") for p in paths)


def test_mysql_sink_without_redo_log_reads_in_its_writer_tasks(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, target: MysqlTarget, tmp_path: Path, capsys: Any
) -> None:
    """The MySQL sink routes by table too: without a redo log its writer tasks read the relay log themselves (no
    shuffle), and the downstream ends equal to the upstream through a DDL mid-stream, key-changing updates and a
    table created mid-stream, with the checkpoint moving only forward. With a redo log the shuffle stays (its
    barrier: every chunk's log durable before any writer starts). The DDLs of tables without a key (no
    force-replicate) create and change no table downstream, as TiCDC's."""
    db = fresh_db
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", f"CREATE DATABASE `{db.name}`", f"USE `{db.name}`",
            *TABLE_DDL)  # fmt: skip
    try:
        uri = f"mysql://{target.user}@{target.host}:{target.port}/?worker-count=3"
        spec = spec_for(db, puller_thread, tmp_path, uri)
        redo = {**spec.config, "consistent": {"level": "eventual", "storage": f"file://{tmp_path / 'redo'}"}}
        assert not route_aligned(replace(spec, config=redo))
        plan, seen, _end = run_workload(spark, spec, db, puller_thread, capsys, more=KEYLESS_DDL)
        assert "WriteToDataSourceV2" in plan and "Exchange" not in plan  # reading and writing in one stage
        assert seen == sorted(seen)
        assert run_sql(target, "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = "
                               f"'{db.name}' AND table_name IN ('nopk', 'nokey2') ORDER BY 1, ordinal_position") == [
            ("nopk", "id"), ("nopk", "s")]  # fmt: skip
        for t in TABLES:
            sql = f"SELECT * FROM `{db.name}`.`{t}` ORDER BY 1"
            assert run_sql(target, sql) == db.query(sql), t
        assert run_sql(target, f"SELECT COUNT(*) FROM `{db.name}`.nopk") == [(0,)]  # no PK / UK: not eligible
    finally:
        run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`")


def test_mysql_sink_fails_on_the_ddl_of_a_table_gaining_a_key_it_never_created(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, target: MysqlTarget, tmp_path: Path
) -> None:
    """A key-less table (no force-replicate) that gains a key is replicated from that DDL on, which TiCDC passes on
    as it is: the MySQL sink runs the ALTER on a table it never created downstream and fails with the downstream's
    error, as TiCDC's does."""
    db = fresh_db
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", f"CREATE DATABASE `{db.name}`")
    try:
        spec = spec_for(db, puller_thread, tmp_path, f"mysql://{target.user}@{target.host}:{target.port}/")
        query = start_query(spark, spec, trigger_seconds=0.5)
        try:
            db.execute("ALTER TABLE nopk ADD PRIMARY KEY (id)")
            wait_for(lambda: query.exception() is not None, 120, "the query to fail on the ALTER")
            error = query_failure(query.exception())
        finally:
            query.stop()
        assert error.code == "CDC:ErrMySQLQueryError" and error.permanent, error
        assert "executing DDL 'ALTER TABLE nopk ADD PRIMARY KEY (id)'" in error.message, error
        assert f"Table '{db.name}.nopk' doesn't exist" in error.message, error
    finally:
        run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`")


def test_delta_sink_reads_in_its_writer_tasks(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, tmp_path: Path, capsys: Any
) -> None:
    """The lake sinks route by table: their writer tasks read the relay log themselves (no shuffle), and the Delta
    tables end equal to the upstream through an ADD COLUMN and a table created mid-stream. The key-less table (no
    force-replicate) gets no lake table from its DDL; once it gains a key it is replicated from that DDL on, as by
    TiCDC (its one older row comes back with its UPDATE)."""
    db = fresh_db
    lake = tmp_path / "lake"
    spec = spec_for(db, puller_thread, tmp_path, f"delta://{lake}?flush-interval=500ms")
    nopk = ["ALTER TABLE nopk ADD COLUMN n INT", "INSERT INTO nopk VALUES (5, 'skipped', 5)",
            "ALTER TABLE nopk ADD PRIMARY KEY (id)", "INSERT INTO nopk VALUES (2, 'kept', NULL)",
            "UPDATE nopk SET s = 'also' WHERE id = 1", "DELETE FROM nopk WHERE id = 5"]  # fmt: skip
    plan, _seen, _end = run_workload(spark, spec, db, puller_thread, capsys, more=nopk)
    assert "WriteToDataSourceV2" in plan and "Exchange" not in plan  # reading and writing in one stage
    for t in TABLES:
        got = sorted((tuple(r.values()) for r in read_delta(lake / db.name / t)), key=lambda row: row[0])
        assert got == db.query(f"SELECT * FROM `{db.name}`.`{t}` ORDER BY 1"), t
    assert sorted(tuple(r.values()) for r in read_delta(lake / db.name / "nopk")) == [(1, "also", None),
                                                                                    (2, "kept", None)]  # fmt: skip
