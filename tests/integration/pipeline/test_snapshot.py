"""The initial snapshot on real Spark from a real MariaDB: copy, hand over to the stream, resume after a stop."""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.decoder import CanalJsonMessageDecoder
from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.kafka import read_topic
from sparkcdc.model.events import RowChange, RowOp
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.pipeline import snapshot_state
from sparkcdc.pipeline.progress import read_progress
from sparkcdc.pipeline.query import start_query, stop_between_batches
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.consumer.servers import run_sql
from tests.integration.pipeline.conftest import PullerThread
from tests.integration.pipeline.replay import keyless_replay, layout_violations, replay, text
from tests.integration.pipeline.test_query import expected
from tests.support import wait_for

pytestmark = pytest.mark.integration

TABLES = ["big", "comp", "part", "small", "empty"]


CREATES = (
    "CREATE TABLE big (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(40), d DATETIME(6), b VARBINARY(8))",
    "CREATE TABLE comp (id INT NOT NULL, k VARCHAR(10) NOT NULL, n INT, PRIMARY KEY (k, id))",
    "CREATE TABLE part (id INT PRIMARY KEY, v VARCHAR(10)) PARTITION BY HASH(id) PARTITIONS 3",
    "CREATE TABLE small (id INT NOT NULL, u VARCHAR(10) NOT NULL, UNIQUE KEY (u))",
    "CREATE TABLE empty (id INT PRIMARY KEY)",
    "CREATE TABLE nokey (id INT, v INT)",
)


def create_and_fill(db: FreshDatabase, rows: int) -> None:
    db.execute(
        *CREATES,
        "INSERT INTO big SELECT seq, CONCAT('v', seq, ' 😀'), '2024-01-02 03:04:05.123456' + INTERVAL seq SECOND, "
        f"UNHEX(LPAD(HEX(seq), 16, '0')) FROM seq_1_to_{rows}",
        "INSERT INTO comp SELECT seq, IF(seq % 2, 'Odd', 'even'), seq FROM seq_1_to_700",
        "INSERT INTO part SELECT seq, CONCAT('p', seq) FROM seq_1_to_500",
        "INSERT INTO small VALUES (1, 'a'), (2, 'B'), (3, 'c')",
        "INSERT INTO nokey VALUES (1, 1)",
    )


def churn(db: FreshDatabase, rows: int, stop: threading.Event) -> None:
    """Updates, deletes, inserts and a key-changing update across the tables while the copy runs."""
    i = 0
    while not stop.is_set() and i < 400:
        i += 1
        k = (i * 37) % rows + 1
        db.execute(
            "BEGIN",
            f"UPDATE big SET v = 'u{i}' WHERE id = {k}",
            f"DELETE FROM big WHERE id = {(k * 7) % rows + 1}",
            f"INSERT INTO big VALUES ({rows + i}, 'new', NULL, NULL)",
            f"UPDATE comp SET n = n + 1000 WHERE id = {i % 700 + 1}",
            f"UPDATE part SET id = {1000 + i} WHERE id = {i}",
            f"INSERT INTO small VALUES ({10 + i}, 'n{i}')",
            f"UPDATE small SET u = 'm{i}' WHERE u = 'n{i - 1}'",  # the unique key changes
            f"DELETE FROM small WHERE u = 'm{i - 5}'",
            f"INSERT INTO nokey VALUES ({100 + i}, {i})",
            f"UPDATE nokey SET v = v + 1 WHERE id = {100 + i // 2}",
            "COMMIT",
        )
        stop.wait(0.01)


def make_spec(db: FreshDatabase, puller: PullerThread, tmp_path: Path, start: int, force_replicate: bool = False,
              **snapshot: Any) -> FeedSpec:  # fmt: skip
    kw = db.puller_kwargs()
    config = {"filter": {"rules": [f"{db.name}.*"]}, "force-replicate": force_replicate,
              "snapshot": {"mode": "initial", "chunk-size": 400, "parallelism": 3, **snapshot}}  # fmt: skip
    return FeedSpec(
        changefeed="default/snap",
        capture_dir=str(puller.data_dir),
        state_dir=str(tmp_path / "cf"),
        sink_uri=f"file://{tmp_path / 'sink'}?protocol=canal-json&worker-count=2",
        config=config,
        start_ts=start,
        sink_start_ts=start,
        upstream_uri=f"mysql://{kw['user']}:{kw['password']}@{kw['host']}:{kw['port']}",
        snapshot=True,
    )


def copied(spec: FeedSpec, chunks: int | None = None) -> bool:
    """The snapshot is complete (or has ``chunks`` chunks done)."""
    progress = snapshot_state.read_progress(spec.snapshot_progress_path)
    if progress is None:
        return False
    return progress.complete if chunks is None else len(progress.chunks_done) >= chunks


def copy_under_churn(spark: Any, db: FreshDatabase, rows: int, spec: FeedSpec) -> Any:
    """Start the changefeed's query with ``churn`` writing until the copy is complete; the running query."""
    stop = threading.Event()
    writer = threading.Thread(target=churn, args=(db, rows, stop), daemon=True)
    query = start_query(spark, spec, trigger_seconds=0.5)
    try:
        writer.start()
        wait_for(lambda: copied(spec), 180, "snapshot to complete")
    except BaseException:
        query.stop()
        raise
    finally:
        stop.set()
        writer.join(60)
    return query


def wait_checkpoint(query: Any, spec: FeedSpec, end: int) -> None:
    """Wait until the query's published checkpoint reaches ``end`` (failing on a query error)."""

    def caught_up() -> bool:
        assert query.exception() is None, query.exception()
        progress = read_progress(spec.progress_path)
        return progress is not None and progress.checkpoint_ts >= end

    wait_for(caught_up, 180, "checkpoint to pass the workload")


def checkpoint_of(sink: Path) -> int:
    path = sink / "metadata"
    return int(json.loads(path.read_bytes())["checkpoint-ts"]) if path.exists() else 0


def test_snapshot_under_concurrent_writes_then_stream_equals_upstream(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, tmp_path: Path
) -> None:
    db = fresh_db
    rows = 5000
    create_and_fill(db, rows)
    start = puller_thread.caught_up()
    spec = make_spec(db, puller_thread, tmp_path, start, force_replicate=True)
    query = copy_under_churn(spark, db, rows, spec)
    try:
        db.execute("INSERT INTO big VALUES (999999, 'after', NULL, NULL)", "DELETE FROM small WHERE id = 2")
        end = puller_thread.caught_up()
        sink = tmp_path / "sink"

        def caught_up() -> bool:
            assert query.exception() is None, query.exception()
            return checkpoint_of(sink) >= end

        wait_for(caught_up, 180, "checkpoint to pass the workload")
    finally:
        query.stop()
    checkpoint, got = replay(spec.sink_uri)
    want = expected(db, [*TABLES, "nokey"])  # a table without a key is copied whole with force-replicate
    assert checkpoint >= end
    for name, table in want.items():
        assert got.get(name, {}) == table, name
    # nothing the copy holds is streamed again: a downstream without keys ends equal too
    keyless = keyless_replay(spec.sink_uri)
    for name, table in want.items():
        assert keyless.get(name, Counter()) == Counter(tuple(row.items()) for row in table.values()), name
    assert layout_violations(ExternalStorage.from_uri(spec.sink_uri)) == []
    progress = snapshot_state.read_progress(spec.snapshot_progress_path)
    assert progress is not None and progress.complete
    big = progress.tables[f"{db.name}.big"]
    assert big.chunks == big.chunks_done >= rows // 400
    assert big.rows_done >= rows - 400  # the churn deletes a few before they are read, and adds some
    assert progress.tables[f"{db.name}.part"].chunks == 2  # a partitioned table is one table in the binlog
    assert progress.tables[f"{db.name}.empty"].rows_done == 0
    assert progress.tables[f"{db.name}.nokey"].chunks == 1


def test_snapshot_into_kafka_sends_every_row_once_then_the_stream(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, tmp_path: Path, apache_kafka: ApacheKafka
) -> None:
    db = fresh_db
    rows = 2000
    create_and_fill(db, rows)
    start = puller_thread.caught_up()
    topic = f"snap-{db.name}"
    spec = replace(make_spec(db, puller_thread, tmp_path, start),
                   sink_uri=f"kafka://{apache_kafka.bootstrap}/{topic}?protocol=canal-json&enable-tidb-extension=true"
                            "&partition-num=3")  # fmt: skip
    query = copy_under_churn(spark, db, rows, spec)
    try:
        db.execute("UPDATE big SET v = 'streamed' WHERE id <= 10", "DELETE FROM comp WHERE id = 5")
        end = puller_thread.caught_up()
        wait_checkpoint(query, spec, end)
    finally:
        query.stop()
    decoder = CanalJsonMessageDecoder(CanalJsonConfig(enable_tidb_extension=True))
    got: dict[str, dict[Any, dict[str, Any]]] = {}
    copies = 0
    for messages in read_topic(apache_kafka.bootstrap, topic).values():
        for m in messages:
            for ev in decoder.decode(m):
                if not isinstance(ev, RowChange) or ev.commit_ts > end:
                    continue
                copies += ev.commit_ts < start
                state = got.setdefault(ev.table.qualified_name, {})
                names = [c.name for c in ev.table.columns]
                if ev.before is not None:
                    assert state.pop(text(ev.before[0]), None) is not None or ev.commit_ts > start, ev
                if ev.after is not None:
                    key = text(ev.after[0])
                    assert key not in state or ev.op is RowOp.UPDATE, f"{ev}: applied twice"
                    state[key] = {n: text(v) for n, v in zip(names, ev.after, strict=True)}
    assert copies >= rows + 700 + 500 + 3 - 400  # every table's rows, as INSERTs below start-ts
    for name, table in expected(db, TABLES).items():
        assert got.get(name, {}) == table, name


def test_snapshot_into_the_mysql_sink_applies_every_chunk_then_the_stream(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, tmp_path: Path,
    target: MysqlTarget,
) -> None:
    """Ordered appliers skip a batch at a commit-ts they applied: each chunk has its own commit-ts."""
    db = fresh_db
    rows = 3000
    create_and_fill(db, rows)
    run_sql(target, f"DROP DATABASE IF EXISTS `{db.name}`", f"CREATE DATABASE `{db.name}`", f"USE `{db.name}`",
            *CREATES)  # fmt: skip
    start = puller_thread.caught_up()
    spec = replace(make_spec(db, puller_thread, tmp_path, start),
                   sink_uri=f"mysql://root@127.0.0.1:{target.port}/?worker-count=2")  # fmt: skip
    query = start_query(spark, spec, trigger_seconds=0.5)
    try:
        wait_for(lambda: copied(spec), 180, "snapshot to complete")
        db.execute("UPDATE big SET v = 'streamed' WHERE id <= 10", "DELETE FROM comp WHERE id = 5")
        wait_checkpoint(query, spec, puller_thread.caught_up())
    finally:
        query.stop()
    for t in TABLES:
        sql = f"SELECT * FROM `{db.name}`.`{t}` ORDER BY 1, 2" if t != "empty" else f"SELECT * FROM `{db.name}`.`{t}`"
        assert [tuple(r) for r in run_sql(target, sql)] == [tuple(r) for r in db.query(sql)], t


def test_a_stopped_snapshot_resumes_from_its_finished_chunks(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, tmp_path: Path
) -> None:
    db = fresh_db
    rows = 6000
    create_and_fill(db, rows)
    start = puller_thread.caught_up()
    spec = make_spec(db, puller_thread, tmp_path, start, **{"parallelism": 1})
    query = start_query(spark, spec, trigger_seconds=0.5)
    try:
        wait_for(lambda: copied(spec, chunks=3), 180, "three chunks")
    finally:
        stop_between_batches(query, spec)
    first = snapshot_state.read_progress(spec.snapshot_progress_path)
    assert first is not None and not first.complete
    plan = snapshot_state.load_plan(spec.snapshot_plan_path)
    assert plan is not None
    # Spark's checkpoint is lost too: the run resumes after the chunks snapshot.json records
    import shutil

    shutil.rmtree(Path(spec.state_dir) / "spark")
    query = start_query(spark, spec, trigger_seconds=0.5)
    try:
        wait_for(lambda: checkpoint_of(tmp_path / "sink") >= start, 180, "snapshot to complete")
    finally:
        query.stop()
    final = snapshot_state.read_progress(spec.snapshot_progress_path)
    assert final is not None and final.complete and final.chunks_done == frozenset(range(len(plan.chunks)))
    assert final.rows_done == sum(t.rows_done for t in final.tables.values())
    # the finished chunks were not read again: every row of big is in the sink exactly once
    _, got = replay(spec.sink_uri)
    assert len(got[f"{db.name}.big"]) == rows
    storage = ExternalStorage.from_uri(spec.sink_uri)
    files = [p for p in storage.list(f"{db.name}/big/") if p.endswith(".json") and "/meta/" not in p]
    inserts = sum(_rows_in(storage, p) for p in files)
    assert inserts == rows


def _rows_in(storage: ExternalStorage, path: str) -> int:
    data = storage.read(path) or b""
    return sum(1 for line in data.splitlines() if line.strip())


def test_an_initial_only_snapshot_with_no_table_to_copy_still_ends(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, tmp_path: Path
) -> None:
    """The filter selects only a table without a key (not eligible): the copy has no chunk, and its one batch
    still publishes start-ts, so an initial-only changefeed finishes."""
    db = fresh_db
    create_and_fill(db, 10)
    start = puller_thread.caught_up()
    spec = make_spec(db, puller_thread, tmp_path, start, mode="initial-only")
    spec = replace(spec, config={**spec.config, "filter": {"rules": [f"{db.name}.nokey"]}}, target_ts=start)
    query = start_query(spark, spec, trigger_seconds=0.5)
    try:
        wait_for(lambda: checkpoint_of(tmp_path / "sink") >= start, 120, "start-ts to be published")
    finally:
        query.stop()
    plan = snapshot_state.load_plan(spec.snapshot_plan_path)
    assert plan is not None and plan.chunks == () and checkpoint_of(tmp_path / "sink") == start


def test_a_change_after_a_ddl_that_the_copy_of_a_keyless_table_holds_fails_the_changefeed_clearly(
    spark: Any, fresh_db: FreshDatabase, puller_thread: PullerThread, tmp_path: Path
) -> None:
    """The keyless table (copied whole with force-replicate) gets a column and an UPDATE after its copy began and
    before its read: the read holds the UPDATE in the old columns, and sending it again would apply it twice to a
    downstream without a key. The query fails with one line naming the table, which the runner reports as a
    permanent CDC:ErrSnapshotTableChanged."""
    from sparkcdc.pipeline.runner import query_error

    db = fresh_db
    create_and_fill(db, 2000)  # big (5 chunks of 400) is copied before nokey: the plan goes by name
    start = puller_thread.caught_up()
    spec = make_spec(db, puller_thread, tmp_path, start, force_replicate=True, parallelism=1)
    spec = replace(spec, config={**spec.config, "filter": {"rules": [f"{db.name}.big", f"{db.name}.nokey"]}})
    query = start_query(spark, spec, trigger_seconds=0.5)
    try:
        wait_for(lambda: copied(spec, chunks=1), 180, "a chunk")
    finally:
        stop_between_batches(query, spec)
    progress = snapshot_state.read_progress(spec.snapshot_progress_path)
    assert progress is not None and progress.tables[f"{db.name}.nokey"].chunks_done == 0
    db.execute("ALTER TABLE nokey ADD COLUMN c INT DEFAULT 0", "UPDATE nokey SET v = v + 1, c = 5")
    end = puller_thread.caught_up()
    query = start_query(spark, spec, trigger_seconds=0.5)
    try:  # failing, or (what the copy did before) streaming past the UPDATE without it
        wait_for(lambda: query.exception() is not None or checkpoint_of(tmp_path / "sink") >= end, 180, "the end")
    finally:
        query.stop()
    assert query.exception() is not None, "the UPDATE the copy holds in the old columns was left out silently"
    error = query_error(query.exception())
    assert error.code == "CDC:ErrSnapshotTableChanged", error
    assert error.message.startswith(f"snapshot of {db.name}.nokey: a DDL at ts=") and "no primary key" in error.message
    progress = snapshot_state.read_progress(spec.snapshot_progress_path)
    assert progress is not None and progress.complete  # the copy was complete: the stream found the change
