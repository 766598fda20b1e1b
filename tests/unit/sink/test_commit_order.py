"""The MySQL and lake task writers take each table's payloads in commit order, as ``SinkWriter.write`` promises (the
conflict slots and a lake table's one commit depend on it): they check that order (``sink.base.by_table``) instead of
sorting again, and refuse payloads that break it before anything is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkcdc.errors import SparkcdcError
from sparkcdc.lake.target import open_tables
from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo
from sparkcdc.sink.base import Routed, SinkContext
from sparkcdc.sink.lake.config import LakeSinkConfig
from sparkcdc.sink.lake.writer import LakeTaskWriter
from sparkcdc.sink.mysql import writer
from sparkcdc.sink.mysql.config import MysqlSinkConfig
from sparkcdc.sink.row_payload import pack

KEY = ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True)
A, B = (TableInfo("db", name, 1, (KEY,)) for name in ("a", "b"))


def payload(t: TableInfo, ts: int, seq: int) -> Routed:
    return Routed(t.schema, t.table, 0, t.table_id, ts, seq, 1, pack([RowChange(ts, t, RowOp.INSERT, None, (ts,))]), t)


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> list[list[Any]]:
    """The rows the writer hands to the conflict slots, per call; nothing is applied (no downstream here)."""
    calls: list[list[Any]] = []

    def plan(rows: list[Any], *_: Any) -> list[Any]:
        calls.append(list(rows))
        return []

    monkeypatch.setattr(writer, "plan_steps", plan)
    monkeypatch.setattr(writer, "with_retries", lambda *_: None)
    return calls


def task_writer() -> writer.MysqlTaskWriter:
    return writer.MysqlTaskWriter(MysqlSinkConfig.from_uri("mysql://root@127.0.0.1:1/"), SinkContext("cf", 0, "/x"))


def test_payloads_in_commit_order_are_planned_as_they_came(planned: list[list[Any]]) -> None:
    """Tables interleaved, each in (commit-ts, seq) order: each table's rows reach the slots in that order."""
    given = [payload(A, 10, 1), payload(B, 10, 2), payload(A, 11, 1), payload(A, 11, 2), payload(B, 12, 1)]
    assert task_writer().write(iter(given)) == 5
    assert [(r.table.table, r.commit_ts) for r in planned[0]] == [("a", 10), ("a", 11), ("a", 11), ("b", 10),
                                                                  ("b", 12)]  # fmt: skip


OUT_OF_ORDER = [payload(A, 10, 1), payload(B, 12, 1), payload(B, 11, 5), payload(A, 11, 1)]
REFUSED = r"^db\.b: a payload at \(commit-ts, seq\) \(11, 5\) came after \(12, 1\); sinks need each table's"


def test_a_table_out_of_commit_order_is_refused_before_anything_is_applied(planned: list[list[Any]]) -> None:
    with pytest.raises(SparkcdcError, match=REFUSED):
        task_writer().write(iter(OUT_OF_ORDER))
    assert planned == []


def test_the_lake_writer_refuses_the_same_before_any_commit(tmp_path: Path) -> None:
    config = LakeSinkConfig.from_uri(f"delta://{tmp_path}/lake")
    with pytest.raises(SparkcdcError, match=REFUSED):
        LakeTaskWriter(config, SinkContext("cf", 0, str(tmp_path))).write(iter(OUT_OF_ORDER))
    assert open_tables(config.where, "cf").applied_ts("db", "a") == 0
    written = LakeTaskWriter(config, SinkContext("cf", 0, str(tmp_path))).write(iter([OUT_OF_ORDER[i] for i in
                                                                                      (0, 2, 1, 3)]))  # fmt: skip
    assert written == {"db.a": 2, "db.b": 2} and open_tables(config.where, "cf").applied_ts("db", "b") == 12
