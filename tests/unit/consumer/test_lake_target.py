"""The consumers' lake target over a fake lake (``LakeTables`` in memory): how steps fold into commits, what each
commit records, positions, replays, refusals. The formats themselves are tested in ``tests/unit/lake``; the target
on real trees and real tables in ``tests/integration/consumer/test_lake_consumer.py``."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.codec.base import message_encoder
from sparkcdc.consumer.kafka_client import ClientErrors, Connection
from sparkcdc.consumer.kafka_consumer import KafkaConsumerConfig, KafkaSource
from sparkcdc.consumer.lake_target import LakeTarget, open_target
from sparkcdc.consumer.runner import Consumer
from sparkcdc.consumer.target import TargetOptions
from sparkcdc.consumer.target import open_target as open_any_target
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.lake.changes import NetChange
from sparkcdc.lake.errors import LakeDDLError
from sparkcdc.lake.keyless import ChangeLog
from sparkcdc.lake.location import LakeLocation
from sparkcdc.model import DDLAction, RowChange, RowOp, TableInfo
from sparkcdc.model.steps import DDL_PARTITION, ORDERED_PARTITION, Batch, Checkpoint, DdlStep, RowsStep
from sparkcdc.model.table import ColumnInfo
from tests.unit.consumer.test_kafka_loop import TOPIC, TS, FakeClient
from tests.unit.consumer.test_kafka_loop import T as K
from tests.unit.lake.support import T, dele, ins, table, upd

KEYLESS = table(ColumnInfo("v", "varchar"))


class FakeLake:
    """Tables as dicts key -> image, with the commit-ts each records; every commit noted."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], dict[Any, Any]] = {}
        self.ts: dict[tuple[str, str], int] = {}
        self.commits: list[tuple[str, int]] = []

    def applied_ts(self, schema: str, table: str) -> int:
        return self.ts.get((schema, table), 0)

    def ensure(self, info: TableInfo, ts: int | None = None) -> object:
        self.rows.setdefault((info.schema, info.table), {})
        if ts is not None:
            self.ts[(info.schema, info.table)] = max(self.applied_ts(info.schema, info.table), ts)
        return None

    def merge(self, info: TableInfo, change: NetChange | ChangeLog, after_ts: int) -> int:
        assert after_ts == self.applied_ts(info.schema, info.table)
        rows = self.rows.setdefault((info.schema, info.table), {})
        if isinstance(change, ChangeLog):  # appended: one row per change, numbered
            rows.update({len(rows) + i: entry for i, entry in enumerate(change.rows)})
            change = NetChange({}, frozenset(), change.last_ts)
        for k in change.deletes:
            rows.pop(k, None)
        rows.update(change.upserts)
        self.ts[(info.schema, info.table)] = change.last_ts
        self.commits.append((f"{info.schema}.{info.table}", change.last_ts))
        return len(change.upserts) + len(change.deletes)

    def fill(self, info: TableInfo, values: dict[str, Any], ts: int) -> None:
        raise AssertionError("not used here")

    def truncate(self, info: TableInfo, ts: int) -> None:
        if self.applied_ts(info.schema, info.table) < ts:
            self.rows[(info.schema, info.table)] = {}
            self.ts[(info.schema, info.table)] = ts
            self.commits.append((f"truncate {info.schema}.{info.table}", ts))

    def drop(self, schema: str, table: str, ts: int) -> None:
        raise AssertionError("not used here")

    def rename(self, pre: TableInfo, post: TableInfo, ts: int) -> None:
        self.rows[(post.schema, post.table)] = self.rows.pop((pre.schema, pre.table), {})
        self.ts[(post.schema, post.table)] = ts
        self.commits.append((f"rename {pre.qualified_name} {post.qualified_name}", ts))


def _target(tmp_path: Path, lake: FakeLake | None = None) -> tuple[LakeTarget, FakeLake]:
    t = LakeTarget(LakeLocation("delta", str(tmp_path / "lake")), TargetOptions(consumer="c1"))
    fake = lake or FakeLake()
    t.tables = fake
    return t, fake


def _pos(part: int, index: int, ts: int) -> Checkpoint:
    return Checkpoint("db", "t", part, 1, "", index, 0, ts)


def test_streams_of_a_table_fold_into_one_commit_recording_upto(tmp_path: Path) -> None:
    target, lake = _target(tmp_path)
    step = RowsStep({
        ("db", "t", 1): [Batch([ins(10, 1, "a"), upd(30, (1, "a"), (1, "a3"))], _pos(1, 1, 30))],
        ("db", "t", 2): [Batch([ins(20, 2, "b")], _pos(2, 1, 20)), Batch([dele(40, 2, "b")], _pos(2, 2, 40))],
    }, upto=50)  # fmt: skip
    target.apply(step)
    assert lake.commits == [("db.t", 50)]
    assert lake.rows[("db", "t")] == {(1,): (1, "a3")}
    assert target.checkpoints[("db", "t", 2)] == _pos(2, 2, 40)
    assert (target.stats.rows_applied, target.stats.upserts, target.stats.deletes, target.stats.applied_ts) == (
        4, 1, 1, 50)  # fmt: skip


def test_positions_are_saved_after_the_commits_and_reloaded(tmp_path: Path) -> None:
    target, lake = _target(tmp_path)
    target.apply(RowsStep({("db", "t", 0): [Batch([ins(10, 1, "a")], _pos(0, 1, 10), files=1)]}, upto=10))
    again, _ = _target(tmp_path, lake)
    assert again.checkpoints == {("db", "t", 0): _pos(0, 1, 10)}
    assert again.reset_checkpoints() == 1
    assert _target(tmp_path, lake)[0].checkpoints == {}


def test_a_replay_applies_nothing_twice(tmp_path: Path) -> None:
    """The source reads again what a crash left unrecorded in the positions: rows at or below the table's commit-ts
    are folded out, and a producer's re-send inside a stream (commit-ts below one already read) too."""
    target, lake = _target(tmp_path)
    target.apply(RowsStep({("db", "t", 0): [Batch([ins(10, 1, "a"), ins(20, 2, "b")], _pos(0, 1, 20))]}, upto=20))
    target.reset_checkpoints()  # as if the positions file had not been written
    resent = [ins(10, 1, "a"), dele(20, 2, "b"), ins(30, 3, "c"), ins(20, 2, "b"), ins(40, 4, "d")]
    target.apply(RowsStep({("db", "t", 0): [Batch(resent, _pos(0, 2, 40))]}, upto=45))
    assert lake.rows[("db", "t")] == {(1,): (1, "a"), (2,): (2, "b"), (3,): (3, "c"), (4,): (4, "d")}
    assert lake.commits == [("db.t", 20), ("db.t", 45)]
    assert target.stats.replayed_skipped == 3  # ts 10 and 20 held by the table, and the re-send of ts 20 after 30
    assert target.stats.rows_applied == 2 + 2


def test_a_new_table_version_inside_a_step_commits_the_older_rows_first(tmp_path: Path) -> None:
    target, lake = _target(tmp_path)
    t2 = table(*T.columns, ColumnInfo("w", "int"), version=2)
    rows = [ins(10, 1, "a"), ins(30, 2, "b", 7, t=t2)]
    target.apply(RowsStep({("db", "t", ORDERED_PARTITION): [Batch(rows, _pos(ORDERED_PARTITION, 0, 30))]}, upto=35))
    assert lake.commits == [("db.t", 10), ("db.t", 35)]


def test_rows_without_a_commit_ts_are_refused_with_one_line(tmp_path: Path) -> None:
    target, lake = _target(tmp_path)
    message = "a row without a commit-ts (canal-json without enable-tidb-extension"
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        target.apply(RowsStep({("db", "t", 0): [Batch([ins(0, 1, "a")], _pos(0, 1, 5))]}, upto=5))
    assert lake.commits == [] and target.checkpoints == {}


def test_a_keyless_table_is_appended_once(tmp_path: Path) -> None:
    """Real TiCDC's output of a table without a key (force-replicate) is appended as a change log, as by the
    sinks; a replayed step appends nothing."""
    target, lake = _target(tmp_path)
    rows = [ins(5, "a", t=KEYLESS), ins(5, "a", t=KEYLESS), dele(6, "a", t=KEYLESS)]
    step = RowsStep({("db", "t", 0): [Batch(rows, _pos(0, 1, 6))]}, upto=6)
    target.apply(step)
    target.checkpoints.clear()
    target.apply(step)
    assert lake.commits == [("db.t", 6)]
    assert sorted(lake.rows[("db", "t")].values()) == [("D", ("a",), 6), ("I", ("a",), 5), ("I", ("a",), 5)]


def test_ddls_run_once_and_are_recorded(tmp_path: Path) -> None:
    target, lake = _target(tmp_path)
    target.apply(RowsStep({("db", "t", 0): [Batch([ins(10, 1, "a")], _pos(0, 1, 10))]}, upto=10))
    trunc = DdlStep("db", "t", "TRUNCATE TABLE t", DDLAction.TRUNCATE_TABLE, 20, definitions=lambda: (T, T))
    target.apply(trunc)
    target.apply(trunc)
    assert lake.rows[("db", "t")] == {} and target.ddl_version("db", "t") == 20
    assert (target.stats.ddls_executed, target.stats.ddls_skipped) == (1, 1)
    assert _target(tmp_path, lake)[0].checkpoints[("db", "t", DDL_PARTITION)].table_version == 20


def test_ddls_without_definitions(tmp_path: Path) -> None:
    """canal-json's DDL messages carry no table definition: CREATE TABLE waits for the first rows, TRUNCATE of a
    table seen in this run works, anything else is refused naming the DDL."""
    target, lake = _target(tmp_path)
    target.apply(DdlStep("db", "t", "CREATE TABLE t (id INT PRIMARY KEY)", DDLAction.CREATE_TABLE, 5))
    assert lake.rows == {} and target.ddl_version("db", "t") == 5
    target.apply(RowsStep({("db", "t", 0): [Batch([ins(10, 1, "a")], _pos(0, 1, 10))]}, upto=10))
    target.apply(DdlStep("db", "t", "TRUNCATE TABLE t", DDLAction.TRUNCATE_TABLE, 20))
    assert lake.rows[("db", "t")] == {}
    with pytest.raises(LakeDDLError, match=r"DDL 'ALTER TABLE t ADD c INT' on db.t at commit-ts 30: it carries no"):
        target.apply(DdlStep("db", "t", "ALTER TABLE t ADD c INT", DDLAction.ADD_COLUMN, 30))


@pytest.mark.parametrize("query", ["RENAME TABLE t TO u", "RENAME TABLE `db`.`x` TO `db`.`y`, db.t TO `u`",
                                   "ALTER TABLE `t` RENAME TO u", "alter table db.t rename as db.u"])
def test_rename_from_a_schema_file_takes_the_old_name_from_the_query(tmp_path: Path, query: str) -> None:
    target, lake = _target(tmp_path)
    target.apply(RowsStep({("db", "t", 0): [Batch([ins(10, 1, "a")], _pos(0, 1, 10))]}, upto=10))
    step = DdlStep("db", "u", query, DDLAction.RENAME_TABLE, 30, source="db/u/meta/schema_30_1.json",
                   definitions=lambda: (None, table(*T.columns, name="u")))  # fmt: skip
    target.apply(step)
    assert lake.commits[-1] == ("rename db.t db.u", 30) and target.ddl_version("db", "u") == 30


def test_rename_whose_old_name_is_unknown_is_refused_naming_the_schema_file(tmp_path: Path) -> None:
    target, _ = _target(tmp_path)
    step = DdlStep("db", "u", "RENAME TABLE a TO b", DDLAction.RENAME_TABLE, 30, source="db/u/meta/schema_30_1.json",
                   definitions=lambda: (None, table(*T.columns, name="u")))  # fmt: skip
    with pytest.raises(LakeDDLError, match=r"^db/u/meta/schema_30_1.json: DDL 'RENAME TABLE a TO b' .*before the"):
        target.apply(step)
    assert target.ddl_version("db", "u") == 0


def test_a_keyless_table_with_a_change_log_column_name_is_refused_in_one_line(tmp_path: Path) -> None:
    """The lake sinks' refusal (:func:`sparkcdc.lake.keyless.change_log_clash`) reaches the consumers: at the DDL,
    naming the schema file and the DDL (nothing recorded); for rows of a table no DDL announced (a Kafka topic read
    from its middle), naming the table, before a lake table is made."""
    clash = table(ColumnInfo("v", "varchar"), ColumnInfo("_tidb_op", "varchar"), name="k")
    target, lake = _target(tmp_path)
    step = DdlStep("db", "k", "CREATE TABLE k (v TEXT, _tidb_op TEXT)", DDLAction.CREATE_TABLE, 30,
                   source="db/k/meta/schema_30_1.json", definitions=lambda: (None, clash))  # fmt: skip
    with pytest.raises(LakeDDLError, match=r"^db/k/meta/schema_30_1.json: DDL 'CREATE TABLE k .*' on db.k at commit-ts "
                       r"30: the table has no key, so .* a column '_tidb_op' of its own; rename") as e:  # fmt: skip
        target.apply(step)
    assert "\n" not in str(e.value) and e.value.code == "CDC:ErrLakeDDLUnsupported"
    assert target.ddl_version("db", "k") == 0 and lake.rows == {}
    real = LakeTarget(LakeLocation("delta", str(tmp_path / "real")), TargetOptions(consumer="c1"))
    rows = RowsStep({("db", "k", 0): [Batch([RowChange(10, clash, RowOp.INSERT, None, ("a", "b"))],
                                            Checkpoint("db", "k", 0, 1, "", 1, 0, 10))]}, upto=10)  # fmt: skip
    with pytest.raises(LakeDDLError, match=r"^db\.k: the table has no key, .*'_tidb_op' of its own; rename"):
        real.apply(rows)
    assert real.tables.applied_ts("db", "k") == 0 and real.checkpoints == {}


def test_positions_past_a_lost_table_are_refused_at_start(tmp_path: Path) -> None:
    target, _lake = _target(tmp_path)
    target.apply(RowsStep({("db", "t", 0): [Batch([ins(10, 1, "a")], _pos(0, 1, 10))]}, upto=10))
    target.check_start()
    again, _ = _target(tmp_path, FakeLake())  # the lake table was deleted by hand
    with pytest.raises(SparkcdcError, match="records none: was it deleted or recreated") as e:
        again.check_start()
    assert e.value.code == "CDC:ErrConsumerCheckpointAhead"


@pytest.mark.parametrize(("uri", "message"), [
    ("delta://host/lake", "takes a local absolute path and no host"),
    ("iceberg:///tmp/x?catalog=y", "unknown parameter 'catalog'"),
    ("delta:///tmp/x?flush-interval=1s", "'flush-interval' is a lake sink parameter"),
])  # fmt: skip
def test_bad_downstream_uris_are_one_line(uri: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        open_any_target(uri, TargetOptions())
    assert "\n" not in e.value.message and e.value.code == "CDC:ErrSinkURIInvalid"


def test_the_registry_opens_the_lake_target(tmp_path: Path) -> None:
    target = open_any_target(f"delta://{tmp_path}/lake", TargetOptions(consumer="c1"))
    assert isinstance(target, LakeTarget) and target.where.fmt == "delta"
    assert isinstance(open_target(f"iceberg://{tmp_path}/wh", TargetOptions()), LakeTarget)


def test_kafka_consumer_into_the_lake_applies_each_change_once_across_a_replay(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``cdc kafka-consumer``'s loop (fake client) into the lake target: the changefeed's re-sends are folded out,
    and a second run over the whole topic (no offsets committed: a crash) commits nothing new."""
    enc = message_encoder("canal-json", {"enable-tidb-extension": True})

    def row(ts: int, before: tuple[int, int] | None, after: tuple[int, int] | None) -> bytes:
        op = RowOp.INSERT if before is None else RowOp.DELETE if after is None else RowOp.UPDATE
        return enc.encode_row(RowChange(TS + ts, K, op, before, after)).value

    def watermark(ts: int) -> bytes:
        return enc.encode_watermark(TS + ts).value

    topic = {
        0: [row(1, None, (1, 1)), row(3, None, (3, 3)), watermark(4), row(6, (1, 1), (1, 60)), watermark(9)],
        1: [row(2, None, (2, 2)), watermark(4), row(2, None, (2, 2)), row(5, (2, 2), None), watermark(9)],
    }
    lake = FakeLake()
    commits: list[list[tuple[str, int]]] = []
    for seed in range(2):
        config = KafkaConsumerConfig.from_uri(f"kafka://127.0.0.1:9/{TOPIC}?protocol=canal-json&"
                                              "enable-tidb-extension=true", {}, "g")  # fmt: skip
        stop = threading.Event()
        connection = Connection(FakeClient(topic, seed, stop, lambda offsets: None), sorted(topic), {},
                                ClientErrors("127.0.0.1:9"))  # fmt: skip
        monkeypatch.setattr(KafkaSource, "_connect", lambda self, c=connection: c)
        target, _ = _target(tmp_path, lake)
        Consumer(KafkaSource(config), target).run(stop)
        assert lake.rows[("db", "k")] == {(1,): (1, 60), (3,): (3, 3)}
        commits.append(list(lake.commits))
    assert commits[0] and commits[1] == commits[0]
    assert commits[0][-1] == ("db.k", TS + 9)  # the last step's upto: the watermark that released ts 6
    assert target.stats.rows_applied == 0 and target.stats.replayed_skipped > 0
