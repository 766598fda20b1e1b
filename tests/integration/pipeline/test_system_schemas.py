"""Our own bookkeeping is never replicated (issue 26, item 3): an upstream that is also a downstream holds the MySQL
sink's ``tidb_cdc.checkpoint`` and the consumers' ``sparkcdc_consumer.checkpoint`` rows; a changefeed with a
catch-all rule, force-replicate, bdr-mode and an initial snapshot copies and streams the user's tables and none of
those rows (else a bdr-mode pair bounces them forever and a chain carries them downstream)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkcdc.filter.system_schemas import CONSUMER_SCHEMA, TICDC_SCHEMA
from sparkcdc.mysql.applier import Checkpoint, MysqlApplier
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.pipeline import snapshot_state
from sparkcdc.pipeline.query import start_query
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.conftest import PullerThread
from tests.integration.pipeline.replay import replay
from tests.integration.pipeline.test_query import expected
from tests.integration.pipeline.test_snapshot import wait_checkpoint

pytestmark = pytest.mark.integration


def test_checkpoint_rows_of_sinks_and_consumers_are_never_captured(
    spark: Any, fresh_db: FreshDatabase, tmp_path: Path
) -> None:
    db = fresh_db
    kw = db.puller_kwargs()
    root = MysqlTarget(host=kw["host"], port=kw["port"], user="root")
    changefeed = f"loop-{db.name}"  # rows of this test only: the schemas are the session server's
    appliers = [MysqlApplier(root, changefeed=changefeed, checkpoint_schema=schema)
                for schema in (TICDC_SCHEMA, CONSUMER_SCHEMA)]  # fmt: skip
    db.execute("CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO u VALUES (1, 'pre'), (2, 'pre')")
    for applier in appliers:  # rows there before the changefeed starts: the snapshot must not copy them
        applier.save_checkpoint(Checkpoint(db.name, "u", commit_ts=1))
    puller = PullerThread(db, tmp_path / "capture")
    try:
        start = puller.caught_up()
        sink = tmp_path / "sink"
        spec = FeedSpec(
            changefeed="default/loop",
            capture_dir=str(puller.data_dir),
            state_dir=str(tmp_path / "cf"),
            sink_uri=f"file://{sink}?protocol=canal-json&flush-interval=2s",
            config={"filter": {"rules": ["*.*"]}, "force-replicate": True, "bdr-mode": True,
                    "snapshot": {"mode": "initial"}},
            start_ts=start,
            sink_start_ts=start,
            upstream_uri=f"mysql://{kw['user']}:{kw['password']}@{kw['host']}:{kw['port']}",
            snapshot=True,
        )
        query = start_query(spark, spec, trigger_seconds=0.5)
        try:
            db.execute("INSERT INTO u VALUES (3, 'streamed')", "UPDATE u SET v = 'changed' WHERE id = 1")
            for i, applier in enumerate(appliers):  # what a sink or consumer writes while the changefeed runs
                applier.save_checkpoint(Checkpoint(db.name, "u", commit_ts=2 + i))
                applier.save_checkpoint(Checkpoint(db.name, "other", commit_ts=5))
                applier.execute(f"DELETE FROM `{applier.checkpoint_schema}`.`checkpoint` "
                                f"WHERE changefeed = '{changefeed}' AND tbl = 'other'")  # fmt: skip
            db.execute(f"CREATE TABLE {TICDC_SCHEMA}.`extra_{db.name}` (id INT PRIMARY KEY)",
                       f"INSERT INTO {TICDC_SCHEMA}.`extra_{db.name}` VALUES (1)",
                       f"DROP TABLE {TICDC_SCHEMA}.`extra_{db.name}`")  # fmt: skip
            db.execute("INSERT INTO u VALUES (4, 'last')")
            wait_checkpoint(query, spec, puller.caught_up())
        finally:
            query.stop()
    finally:
        puller.close()
        for applier in appliers:
            applier.execute(f"DELETE FROM `{applier.checkpoint_schema}`.`checkpoint` WHERE changefeed = '{changefeed}'")
            applier.close()

    written = ExternalStorage.from_uri(spec.sink_uri).list("")
    ours = [p for p in written if p.split("/")[0].lower() in (TICDC_SCHEMA, CONSUMER_SCHEMA)]
    assert ours == [], ours
    assert any(p.startswith(f"{db.name}/u/") for p in written)
    _, got = replay(spec.sink_uri)
    assert got[f"{db.name}.u"] == expected(db, ["u"])[f"{db.name}.u"]
    progress = snapshot_state.read_progress(spec.snapshot_progress_path)
    assert progress is not None and progress.complete
    assert f"{db.name}.u" in progress.tables
    assert not [t for t in progress.tables if t.split(".")[0].lower() in (TICDC_SCHEMA, CONSUMER_SCHEMA)]
