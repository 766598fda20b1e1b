"""The source tasks' side of the redo log: a chunk's rows pass through unchanged, and once the last has passed its
log holds every row and DDL for the MySQL sink, in order, with the table definitions; a storage that cannot be
written fails the task; the storage is probed at create."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from sparkcdc.changefeed.consistent import ConsistentConfig
from sparkcdc.errors import ConfigError, StorageError
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from sparkcdc.pipeline.redo_log import empty_batch, tee
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.stage_row import Ddl, Dml
from sparkcdc.redo.log_file import DdlRecord, RowsRecord
from sparkcdc.redo.reader import RedoLog, stage
from sparkcdc.redo.writer import check_writable
from sparkcdc.sink.row_payload import pack, unpack
from sparkcdc.storage.external import ExternalStorage

_IDX = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
T = TableInfo("db", "t", 7, with_handle_keys((ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "varchar")),
              _IDX), _IDX, 100)  # fmt: skip


def config(tmp_path: Path, **extra: object) -> ConsistentConfig:
    return ConsistentConfig.from_toml({"level": "eventual", "storage": f"file://{tmp_path}/redo", **extra})


def spec(tmp_path: Path) -> FeedSpec:
    return FeedSpec(changefeed="default/cf", capture_dir=str(tmp_path / "c"), state_dir=str(tmp_path / "s"),
                    sink_uri="mysql://root@127.0.0.1:1/")  # fmt: skip


def dml(ts: int, seq: int, k: int, info: bool) -> Dml:
    rows = [RowChange(ts, T, RowOp.INSERT, None, (k, f"v{k}"))]
    return Dml(5, "db", "t", 100, 7, ts, seq, 1, pack(rows), pickle.dumps(T) if info else None)


def test_a_chunk_passes_through_and_its_log_holds_it(tmp_path: Path) -> None:
    ddl = DDLEvent(30, DDLAction.ADD_COLUMN, "ALTER TABLE t ADD COLUMN w INT", "db", "t")
    rows = [dml(10, 1, 1, True), dml(20, 2, 2, False), Ddl(30, 3, pickle.dumps(ddl))]
    passed = list(tee(spec(tmp_path), config(tmp_path, compression="lz4"), (5, 30, 0, 2), iter(rows)))
    assert passed == rows
    empty_batch(spec(tmp_path), config(tmp_path), 30, 40)
    storage = ExternalStorage.from_uri(f"file://{tmp_path}/redo")
    assert RedoLog.read(storage).resolved_ts == 5  # chunk 1 of 2 is missing: the batch is not complete
    tee_rows = [dml(25, 1, 3, True)]
    assert list(tee(spec(tmp_path), config(tmp_path), (5, 30, 1, 2), iter(tee_rows))) == tee_rows
    log = RedoLog.read(storage)
    assert (log.changefeed, log.checkpoint_ts, log.resolved_ts) == ("default/cf", 5, 40)
    records = [r for s in stage(storage, log, tmp_path / "tmp") for r in s.read()]
    assert [r.commit_ts for r in records] == [10, 20, 30, 25]  # chunk by chunk: each in commit order
    first = records[0]
    assert isinstance(first, RowsRecord) and first.table == T and unpack(first.payload, T)[0].after == (1, "v1")
    assert records[2] == DdlRecord(30, 3, "db", "t", "ALTER TABLE t ADD COLUMN w INT", int(DDLAction.ADD_COLUMN))


def test_a_storage_that_cannot_be_written_fails_the_task(tmp_path: Path) -> None:
    (tmp_path / "redo").write_text("a file where the directory should be")
    with pytest.raises(StorageError) as e:
        list(tee(spec(tmp_path), config(tmp_path), (5, 30, 0, 1), iter([dml(10, 1, 1, True)])))
    assert e.value.code == "CDC:ErrExternalStorageAPI" and e.value.message.startswith(f"write file://{tmp_path}/redo/")


def test_the_storage_is_probed_at_create(tmp_path: Path) -> None:
    check_writable(config(tmp_path))
    assert list((tmp_path / "redo").iterdir()) == []  # the probe is gone
    (tmp_path / "redo").rmdir()
    (tmp_path / "redo").write_text("")
    with pytest.raises(ConfigError) as e:
        check_writable(config(tmp_path))
    assert e.value.code == "CDC:ErrStorageInitialize" and "[consistent] storage" in e.value.message
