"""StorageWriter on a local directory with a fake encoder: path vectors, rotation, restart, split commit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.model import DDLAction, DDLEvent, RowChange, RowOp
from sparkcdc.sink.storage.layout_writer import StorageWriter, commit_index_files
from sparkcdc.storage.external import ExternalStorage
from sparkcdc.storage.layout import SchemaFilePath, parse_path
from sparkcdc.storage.metadata import read_checkpoint, write_checkpoint
from sparkcdc.storage.schema_file import TableDefinition
from sparkcdc.storage.schema_store import write_ddl_schema
from sparkcdc.storage.sink_config import StorageSinkConfig
from tests import vectors
from tests.unit.storage.fakes import FakeEncoder, make_table, rows_in, txn

FIXED = datetime(2023, 3, 9, 12, 0, tzinfo=UTC)


def _config(root: Path, protocol: str = "csv", uri_params: str = "", **sink: Any) -> StorageSinkConfig:
    return StorageSinkConfig.from_uri(f"file://{root}?protocol={protocol}{uri_params}", {"sink": sink})


def _clock(times: list[datetime]) -> Callable[[], datetime]:
    it: Iterator[datetime] = iter(times)
    return lambda: next(it)


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("v", [p for p in vectors.params("paths", "path-") if "clock_utc" in p.values[0]["input"]])
def test_data_file_path_vectors(v: dict[str, Any], tmp_path: Path) -> None:
    i = v["input"]
    clock_utc = i["clock_utc"] or ["2023-03-09T12:00:00Z"] * i["calls"]
    times = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in clock_utc]
    protocol = {".json": "canal-json", ".csv": "csv"}[i["extension"]]
    cfg = _config(
        tmp_path, protocol, **{"file-index-digit": i["file_index_width"], "date-separator": i["date_separator"]}
    )
    enc = FakeEncoder()
    enc.file_extension = i["extension"]
    w = StorageWriter(cfg, encoder=enc, clock=_clock(times))
    table = make_table(i["schema"], i["table"], i["table_version"])
    paths = []
    for n in range(len(times)):
        w.write_txn(table, txn(table, 10 + n, [n]))
        paths.extend(d.path for d in w.flush().data_files)
    assert paths == v["expected"]


@pytest.mark.parametrize("v", vectors.params("paths", "index-file-resume"))
def test_index_file_resume_vector(v: dict[str, Any], tmp_path: Path) -> None:
    i = v["input"]
    for case, expected in zip(i["cases"], v["expected"]):
        root = tmp_path / case.replace(" ", "-")
        storage = ExternalStorage.from_uri(f"file://{root}")
        storage.write(i["index_file_path"], i["index_file_content"].encode())
        named = i["index_file_path"].replace("meta/CDC.index", i["index_file_content"].strip())
        if case == "data file empty":
            storage.write(named, b"")
        elif case == "data file non-empty":
            storage.write(named, b"old data\r\n")
        cfg = _config(root, "canal-json", **{"file-index-digit": i["file_index_width"]})
        enc = FakeEncoder()
        enc.file_extension = i["extension"]
        w = StorageWriter(cfg, encoder=enc, clock=lambda: datetime.fromisoformat(i["date"]))
        table = make_table(i["schema"], i["table"], i["table_version"])
        w.write_txn(table, txn(table, 7, [1]))
        [written] = w.flush().data_files
        assert written.path == expected, case
        if case == "data file non-empty":
            assert storage.read(named) == b"old data\r\n"


def test_first_flush_writes_schema_then_data_then_index(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    w = StorageWriter(cfg, encoder=FakeEncoder(header=b"#h\r\n"), clock=lambda: FIXED)
    table = make_table()
    assert w.write_txn(table, txn(table, 10, [1, 2])).paths == ()
    w.write_txn(table, txn(table, 11, [3]))
    result = w.flush()
    schema_path = TableDefinition.from_table(table, 5).path()
    data = "test/table1/5/2023-03-09/CDC00000000000000000001.csv"
    assert result.paths == (schema_path, data, "test/table1/5/2023-03-09/meta/CDC.index")
    storage = w.storage
    assert storage.read(data) == b"#h\r\nI,10,1,\r\nI,10,2,\r\nI,11,3,\r\n"
    assert storage.read("test/table1/5/2023-03-09/meta/CDC.index") == b"CDC00000000000000000001.csv\n"
    assert storage.read(schema_path) == TableDefinition.from_table(table, 5).to_json()
    [d] = result.data_files
    assert (d.rows, d.min_commit_ts, d.max_commit_ts, d.size) == (3, 10, 11, len(storage.read(data) or b""))
    w.write_txn(table, txn(table, 12, [4]))
    again = w.flush()
    assert again.schema_files == ()
    assert [x.file_index for x in again.data_files] == [2]
    assert w.flush().paths == ()  # nothing buffered: no empty file


def test_rotation_by_file_size(tmp_path: Path) -> None:
    cfg = _config(tmp_path, uri_params="&file-size=1048576")
    w = StorageWriter(cfg, encoder=FakeEncoder(payload=300_000), clock=lambda: FIXED)
    table = make_table()
    made = []
    for n in range(8):
        made.extend(w.write_txn(table, txn(table, 100 + n, [n])).data_files)
    assert [d.file_index for d in made] == [1, 2]  # 4 txns of ~300 kB reach 1 MiB
    assert all(d.size >= 1048576 for d in made)
    assert w.buffered_bytes == 0
    made.extend(w.write_txn(table, txn(table, 200, [9])).data_files)
    made.extend(w.flush().data_files)
    ids = [i for d in made for _, i in rows_in(w.storage.read(d.path) or b"")]
    assert ids == [*range(8), 9]


def test_rotation_by_flush_interval(tmp_path: Path) -> None:
    clock = FakeMonotonic()
    cfg = _config(tmp_path, uri_params="&flush-interval=2s")
    w = StorageWriter(cfg, encoder=FakeEncoder(), clock=lambda: FIXED, monotonic=clock)
    table, other = make_table(), make_table(table="t2")
    assert w.write_txn(table, txn(table, 1, [1])).paths == ()
    clock.now += 1.9
    assert w.write_txn(other, txn(other, 2, [2])).paths == ()
    clock.now += 0.2
    assert w.poll().data_files[0].table == "table1"
    assert w.poll().paths == ()
    w.write_txn(table, txn(table, 3, [3]))
    clock.now += 2.0
    flushed = w.write_txn(table, txn(table, 4, [4]))
    assert [(d.table, d.file_index, d.rows) for d in flushed.data_files] == [("table1", 2, 2)]


def test_partitions_get_their_own_directories(tmp_path: Path) -> None:
    w = StorageWriter(_config(tmp_path), encoder=FakeEncoder(), clock=lambda: FIXED)
    table = make_table(partitions=2)
    w.write_txn(table, txn(table, 1, [1], 100) + txn(table, 1, [2], 101))
    paths = sorted(d.path for d in w.flush().data_files)
    assert paths == [
        "test/table1/5/100/2023-03-09/CDC00000000000000000001.csv",
        "test/table1/5/101/2023-03-09/CDC00000000000000000001.csv",
    ]
    w2 = StorageWriter(_config(tmp_path / "nosep", **{"enable-partition-separator": False}), encoder=FakeEncoder(),
                       clock=lambda: FIXED)  # fmt: skip
    w2.write_txn(table, txn(table, 1, [1], 100))
    w2.write_txn(table, txn(table, 2, [2], 101))
    [d] = w2.flush().data_files  # one directory, one counter: partitions can never overwrite each other
    assert d.path == "test/table1/5/2023-03-09/CDC00000000000000000001.csv"


def test_check_or_write_schema_reuses_an_older_version_with_the_same_columns(tmp_path: Path) -> None:
    table = make_table(version=5)
    w = StorageWriter(_config(tmp_path), encoder=FakeEncoder(), clock=lambda: FIXED)
    w.write_txn(table, txn(table, 6, [1]))
    w.flush()
    # a restart at a later ts without DDL: TableSinkStartTs 50 > version 5, same checksum -> keep directory 5
    w2 = StorageWriter(_config(tmp_path), encoder=FakeEncoder(), clock=lambda: FIXED, sink_start_ts=50)
    w2.write_txn(table, txn(table, 60, [2]))
    result = w2.flush()
    assert result.schema_files == ()
    assert [d.path for d in result.data_files] == ["test/table1/5/2023-03-09/CDC00000000000000000002.csv"]
    metas = [p for p in w2.storage.list("test/table1/meta")]
    assert len(metas) == 1


def test_key_changing_updates_are_split_unless_raw(tmp_path: Path) -> None:
    table = make_table()
    upd = [RowChange(9, table, RowOp.UPDATE, (1, "a"), (2, "b"))]
    w = StorageWriter(_config(tmp_path), encoder=FakeEncoder(), clock=lambda: FIXED)
    w.write_txn(table, upd)
    [d] = w.flush().data_files
    assert w.storage.read(d.path) == b"D,9,1,\r\nI,9,2,\r\n"
    raw = _config(tmp_path / "raw", **{"cloud-storage-config": {"output-raw-change-event": True}})
    w = StorageWriter(raw, encoder=FakeEncoder(), clock=lambda: FIXED)
    w.write_txn(table, upd)
    [d] = w.flush().data_files
    assert w.storage.read(d.path) == b"U,9,2,\r\n"


def test_split_commit_executor_then_driver(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    executor = StorageWriter(cfg, encoder=FakeEncoder(), clock=lambda: FIXED, commit_index=False)
    table = make_table()
    executor.write_txn(table, txn(table, 10, [1]))
    first = executor.flush()
    executor.write_txn(table, txn(table, 11, [2]))
    result = first + executor.flush()
    assert result.index_files == ()
    storage = executor.storage
    assert not storage.exists(result.data_files[0].index_path)
    import pickle

    shipped = pickle.loads(pickle.dumps(result.data_files))
    assert commit_index_files(storage, shipped) == ("test/table1/5/2023-03-09/meta/CDC.index",)
    assert storage.read(shipped[0].index_path) == b"CDC00000000000000000002.csv\n"
    assert read_checkpoint(storage) is None
    write_checkpoint(storage, result.max_commit_ts)
    assert storage.read("metadata") == b'{"checkpoint-ts":11}'
    assert read_checkpoint(storage) == 11


def test_ddl_schema_files(tmp_path: Path) -> None:
    storage = ExternalStorage.from_uri(f"file://{tmp_path}")
    table = make_table(version=77)
    paths = write_ddl_schema(storage, DDLEvent(77, DDLAction.ADD_COLUMN, "alter table ...", "test", "table1", table))
    db = write_ddl_schema(storage, DDLEvent(78, DDLAction.CREATE_SCHEMA, "CREATE DATABASE `test`", "test"))
    assert SchemaFilePath.parse(paths[0]) == SchemaFilePath("test", "table1", 77, TableDefinition.from_table(
        table, 77).checksum())  # fmt: skip
    assert db == [SchemaFilePath("test", "", 78, TableDefinition.for_database("test", 78).checksum()).format()]
    assert storage.read(db[0]) == TableDefinition.for_database("test", 78, query="CREATE DATABASE `test`",
                                                               ddl_type=1).to_json()  # fmt: skip


def test_dangerous_names_stay_under_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    w = StorageWriter(_config(root), encoder=FakeEncoder(), clock=lambda: FIXED)
    table = make_table(schema="..", table="../../escape")
    w.write_txn(table, txn(table, 1, [1]))
    result = w.flush()
    assert all(not p.startswith("/") and ".." not in p.split("/") for p in result.paths)
    on_disk = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert on_disk and all(p.startswith("root/") for p in on_disk)
    parsed = parse_path(result.data_files[0].path, date_separator="day", extension=".csv")
    assert parsed is not None
    assert (parsed.dir.schema, parsed.dir.table) == ("..", "../../escape")  # type: ignore[union-attr]
