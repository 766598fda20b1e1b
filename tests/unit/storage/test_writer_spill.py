"""A big data file is built on disk, not in memory: local files past ``SPILL_BYTES`` grow in a temporary file that
readers skip and that becomes the data file, byte for byte what the in-memory path writes, only when complete."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sparkcdc.errors import StorageError
from sparkcdc.sink.base import Routed, SinkContext
from sparkcdc.sink.storage import layout_writer
from sparkcdc.sink.storage.layout_writer import StorageWriter
from sparkcdc.sink.storage.writer import StorageTaskWriter
from sparkcdc.storage.sink_config import StorageSinkConfig
from tests.unit.storage.fakes import FakeEncoder, make_table, rows_in

FIXED = datetime(2023, 3, 9, 12, 0, tzinfo=UTC)
MIB = 1 << 20


def _config(root: Path, file_size: int = 64 * MIB) -> StorageSinkConfig:
    return StorageSinkConfig.from_uri(f"file://{root}?protocol=csv&file-size={file_size}", {})


def _payload(ts: int, size: int) -> bytes:
    return f"I,{ts},{ts},{'x' * size}\r\n".encode()


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _write(root: Path, sizes: list[int], file_size: int) -> list[layout_writer.DataFileDescriptor]:
    w = StorageWriter(_config(root, file_size), encoder=FakeEncoder(header=b"#h\r\n"), clock=lambda: FIXED,
                      commit_index=False)  # fmt: skip
    table = make_table()
    made = []
    for ts, size in enumerate(sizes, 100):
        made.extend(w.write_encoded(table, _payload(ts, size), rows=1, min_commit_ts=ts, max_commit_ts=ts).data_files)
    made.extend(w.flush().data_files)
    return made


def test_a_spilled_file_is_byte_identical_to_one_built_in_memory(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    sizes = [300_000, 10, 700_000, 250_000, 900_000, 5, 400_000, 1_200_000, 80_000]
    in_memory = _write(tmp_path / "a", sizes, file_size=2 * MIB)
    monkeypatch.setattr(layout_writer, "SPILL_BYTES", 256 << 10)
    spilled = _write(tmp_path / "b", sizes, file_size=2 * MIB)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert [(d.path, d.size, d.rows, d.min_commit_ts, d.max_commit_ts) for d in in_memory] == [
        (d.path, d.size, d.rows, d.min_commit_ts, d.max_commit_ts) for d in spilled
    ]
    assert len(spilled) == 2  # rotated at file-size as before
    assert [ts for d in spilled for ts, _ in rows_in((tmp_path / "b" / d.path).read_bytes())] == list(range(100, 109))


def test_an_unfinished_file_is_only_a_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout_writer, "SPILL_BYTES", 256 << 10)
    w = StorageWriter(_config(tmp_path), encoder=FakeEncoder(header=b"#h\r\n"), clock=lambda: FIXED,
                      commit_index=False)  # fmt: skip
    table = make_table()
    for ts in range(5):
        assert not w.write_encoded(table, _payload(ts, 200_000), rows=1, min_commit_ts=ts, max_commit_ts=ts).paths
    [staged] = [p for p in _files(tmp_path) if ".tmp." in p]
    assert staged.startswith("test/table1/5/CDC.tmp.")
    assert not [p for p in _files(tmp_path) if p.endswith(".csv")]  # no data file is visible half-written
    [d] = w.flush().data_files
    assert [p for p in _files(tmp_path) if ".tmp." in p] == []
    data = (tmp_path / d.path).read_bytes()
    assert data.startswith(b"#h\r\n") and [ts for ts, _ in rows_in(data)] == list(range(5)) and d.size == len(data)


def test_the_writer_holds_a_few_mib_of_a_big_file_not_all_of_it(tmp_path: Path) -> None:
    w = StorageWriter(_config(tmp_path), encoder=FakeEncoder(), clock=lambda: FIXED, commit_index=False)
    table = make_table()
    tracemalloc.start()
    try:
        for ts in range(24):  # 48 MiB into one 64 MiB file
            w.write_encoded(table, _payload(ts, 2 * MIB), rows=1, min_commit_ts=ts, max_commit_ts=ts)
        [d] = w.flush().data_files
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < layout_writer.SPILL_BYTES + 6 * MIB  # the old writer peaked at 96 MiB: the chunks and their join
    assert (tmp_path / d.path).stat().st_size == d.size == sum(len(_payload(ts, 2 * MIB)) for ts in range(24))


def _routed(ts: int, size: int) -> Routed:
    table = make_table()
    return Routed("test", "table1", 5, 0, ts, ts, 1, _payload(ts, size), table)


def test_a_failed_task_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout_writer, "SPILL_BYTES", 256 << 10)

    def payloads() -> Iterator[Routed]:
        for ts in range(4):
            yield _routed(ts, 200_000)
        raise StorageError("the reader failed")

    writer = StorageTaskWriter(_config(tmp_path), SinkContext("cf", 0, str(tmp_path)))
    with pytest.raises(StorageError, match="the reader failed"):
        writer.write(payloads())
    assert [p for p in _files(tmp_path) if ".tmp." in p or p.endswith(".csv")] == []


def test_a_killed_writers_temporary_file_is_removed_when_the_sink_recovers(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A process killed mid-batch leaves its staged file (no ``finally`` runs); the committer of the next process
    removes it before its first batch is published, and leaves every data, index and schema file alone."""
    from sparkcdc.sink.storage.committer import StorageCommitter

    monkeypatch.setattr(layout_writer, "SPILL_BYTES", 256 << 10)
    done = _write(tmp_path, [200_000], 64 * MIB)
    killed = StorageWriter(_config(tmp_path), encoder=FakeEncoder(header=b"#h\r\n"), clock=lambda: FIXED,
                           commit_index=False)  # fmt: skip
    for ts in range(5):  # never flushed: the process "dies" here
        killed.write_encoded(make_table(), _payload(ts, 200_000), rows=1, min_commit_ts=ts, max_commit_ts=ts)
    (tmp_path / "test" / "table1" / "notes.txt.tmp.keep").write_bytes(b"")  # not a name ours or TiCDC's make
    kept = {p: b for p, b in _files(tmp_path).items() if "CDC.tmp." not in p}
    assert len(kept) < len(_files(tmp_path))

    StorageCommitter(_config(tmp_path)).recover()
    assert _files(tmp_path) == kept
    assert (tmp_path / done[0].path).exists()


def test_recovery_finds_the_temporaries_of_every_local_write_anywhere_in_the_tree(tmp_path: Path) -> None:
    """A whole-file write's temporary (``<name>.tmp.<uuid hex>``) may be left beside any file, the root's
    ``metadata`` included; only those names go, and a root not made yet has none."""
    from sparkcdc.storage.external import ExternalStorage

    assert ExternalStorage.from_config(_config(tmp_path / "not-yet")).remove_temporary() == 0
    ours = ["metadata.tmp." + "a" * 32, "db/t/meta/schema_1_0.json.tmp." + "b" * 32,
            "db/t/1/2026-11-27/CDC.tmp." + "c" * 32]  # fmt: skip
    theirs = ["db/t/1/CDC.tmp.0f8fad5b-d9cb-469f-a165-70867728950e", "db/t/1/CDC000001.csv", "metadata"]
    for name in ours + theirs:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    assert ExternalStorage.from_config(_config(tmp_path)).remove_temporary() == len(ours)
    assert sorted(_files(tmp_path)) == sorted(theirs)
