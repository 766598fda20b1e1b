"""``cdc redo apply``'s source over a redo log on local files, with a fake target: the steps come in commit order,
rows before a DDL planned as the MySQL sink plans them (key-slot streams), the DDL at its barrier, the last step at
the log's resolved ts; the target is asked where it stands when the source starts (again after a retry)."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.changefeed.consistent import ConsistentConfig
from sparkcdc.consumer.redo_source import RedoSource
from sparkcdc.consumer.runner import Consumer
from sparkcdc.model import ColumnInfo, DDLAction, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.steps import ORDERED_PARTITION, DdlStep, EngineStats, RowsStep, Step
from sparkcdc.model.table import with_handle_keys
from sparkcdc.redo.names import LogName
from sparkcdc.redo.writer import ChunkLog, storage_of
from sparkcdc.sink.row_payload import pack
from sparkcdc.storage.external import ExternalStorage

_IDX = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
T = TableInfo("db", "t", 7, with_handle_keys((ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "varchar")),
              _IDX), _IDX, 100)  # fmt: skip


class FakeTarget:
    def __init__(self) -> None:
        self.stats = EngineStats()
        self.checkpoints: dict[tuple[str, str, int], object] = {}
        self.steps: list[Step] = []
        self.reloads = 0

    def reload(self) -> None:
        self.reloads += 1

    def apply(self, step: Step) -> None:
        self.steps.append(step)


def test_steps_in_commit_order_with_the_ddl_at_its_barrier(tmp_path: Path) -> None:
    config = ConsistentConfig.from_toml({"level": "eventual", "storage": f"file://{tmp_path}/redo"})
    first = ChunkLog(storage_of(config), config, LogName("default.cf", 10, 30, 0, 1))
    first.add_rows(20, 1, T, 7, 2, pack([RowChange(20, T, RowOp.INSERT, None, (k, "a")) for k in (1, 2)]))
    first.add_ddl(30, 2, "db", "t", "ALTER TABLE t ADD COLUMN w INT", int(DDLAction.ADD_COLUMN))
    first.close()
    second = ChunkLog(storage_of(config), config, LogName("default.cf", 30, 50, 0, 1))
    second.add_rows(40, 1, T, 7, 1, pack([RowChange(40, T, RowOp.DELETE, (1, "a"), None)]))
    second.close()
    source = RedoSource(ExternalStorage.from_uri(f"file://{tmp_path}/redo"), tmp_path / "tmp")
    assert (source.log.checkpoint_ts, source.log.resolved_ts) == (10, 50)
    target = FakeTarget()
    consumer = Consumer(source, target)  # type: ignore[arg-type]
    assert consumer.run_once() and source.finished and target.reloads == 1
    kinds = [(type(s).__name__, s.upto if isinstance(s, RowsStep) else s.version) for s in target.steps]
    assert kinds == [("RowsStep", 29), ("DdlStep", 30), ("RowsStep", 50)]
    rows = target.steps[0]
    assert isinstance(rows, RowsStep) and all(k[2] <= ORDERED_PARTITION for k in rows.streams)  # key-slot streams
    assert sorted(r.after[0] for b in rows.streams.values() for batch in b for r in batch.rows) == [1, 2]
    ddl = target.steps[1]
    assert isinstance(ddl, DdlStep) and ddl.source.startswith("redo log default.cf_")
