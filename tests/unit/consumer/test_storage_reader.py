"""Scanning hand-made storage trees: ordering, both index widths, date and partition dirs, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.consumer.storage_reader import FileReader, ReaderConfig, scan
from sparkcdc.errors import ConfigError, CorruptDataError
from sparkcdc.model import RowOp
from sparkcdc.storage.external import ExternalStorage
from tests.unit.consumer.trees import Tree, csv_row, table

T = table("db", "t")
V1, V2 = 440000000000000000, 440000000000100000


def _storage(root: Path) -> ExternalStorage:
    return ExternalStorage.from_uri(f"file://{root}")


CSV = ReaderConfig("csv", "auto", (("include-commit-ts", True),))


def test_orders_versions_dates_and_indexes_across_widths(tmp_path: Path) -> None:
    tree = Tree(tmp_path, width=6)
    tree.schema(T, V1, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", 3)
    tree.schema(T, V2)  # a new version without DDL (producer restart)
    tree.data("db", "t", V1, 10, [csv_row("I", "db", "t", V1 + 10, 10, "x")], date="2024-01-01")
    tree.data("db", "t", V1, 2, [csv_row("I", "db", "t", V1 + 2, 2, "x")], date="2024-01-01")
    tree.data("db", "t", V1, 1, [csv_row("I", "db", "t", V1 + 20, 1, "y")], date="2024-01-02", width=20)
    tree.data("db", "t", V2, 1, [csv_row("D", "db", "t", V2 + 1, 1, "y")], date="2024-01-01")
    tree.put("db/t/440000000000000000/2024-01-01/meta/CDC.index", b"CDC000010.csv\n")
    tree.put("db/t/440000000000000000/2024-01-01/CDC000011.csv.tmp.abc123", b"partial")
    tree.metadata(V2 + 5)
    snap = scan(_storage(tmp_path), CSV)
    assert snap.checkpoint_ts == V2 + 5
    files = snap.streams[("db", "t", 0)]
    assert [(f.table_version, f.date, f.index) for f in files] == [
        (V1, "2024-01-01", 2), (V1, "2024-01-01", 10), (V1, "2024-01-02", 1), (V2, "2024-01-01", 1)
    ]  # fmt: skip
    assert [e.version for e in snap.ddls()] == [V1]
    reader = FileReader(_storage(tmp_path), CSV)
    rows = reader.decode(files[3], snap.schema_for("db", "t", V2))
    assert [(r.op, r.commit_ts, r.values) for r in rows] == [(RowOp.DELETE, V2 + 1, (1, "y"))]


@pytest.mark.parametrize(
    ("dirs", "sep", "partition", "date"),
    [
        ("db/t/5/CDC000001.csv", "none", 0, ""),
        ("db/t/5/2023/CDC000001.csv", "year", 0, "2023"),
        ("db/t/5/2023-05/CDC000001.csv", "month", 0, "2023-05"),
        ("db/t/5/2023-05-09/CDC00000000000000000001.csv", "day", 0, "2023-05-09"),
        ("db/t/5/112/2023-05-09/CDC000001.csv", "day", 112, "2023-05-09"),
        ("db/t/5/112/CDC000001.csv", "none", 112, ""),
        ("db/t/5/112/2023/CDC000001.csv", "year", 112, "2023"),
    ],
)
def test_every_date_separator_and_partition_dirs(tmp_path: Path, dirs: str, sep: str, partition: int,
                                                 date: str) -> None:  # fmt: skip
    tree = Tree(tmp_path)
    tree.schema(T, 5)
    tree.put(dirs, csv_row("I", "db", "t", 9, 1, "a").encode())
    for mode in ("auto", sep):
        snap = scan(_storage(tmp_path), ReaderConfig("csv", mode))
        (f,) = snap.streams[("db", "t", partition)]
        assert (f.date, f.index, f.path) == (date, 1, dirs)
    assert snap.checkpoint_ts is None


def test_schema_file_with_wrong_checksum_names_the_path(tmp_path: Path) -> None:
    tree = Tree(tmp_path)
    path = tree.schema(T, V1)
    bad = path.replace(path.rsplit("_", 1)[1], "0000000001.json")
    (tmp_path / path).rename(tmp_path / bad)
    with pytest.raises(CorruptDataError, match=f"{bad}: checksum mismatch"):
        scan(_storage(tmp_path), CSV)


def test_version_dir_without_schema_file(tmp_path: Path) -> None:
    tree = Tree(tmp_path)
    tree.schema(T, V1)
    tree.data("db", "t", V2, 1, [csv_row("I", "db", "t", V2, 1, "a")])
    with pytest.raises(CorruptDataError, match=f"db/t/{V2}: version directory without schema file"):
        scan(_storage(tmp_path), CSV)


def test_foreign_file_is_an_error_unless_ignored(tmp_path: Path) -> None:
    tree = Tree(tmp_path)
    tree.schema(T, V1)
    tree.put("db/t/notes.txt", b"hello")
    with pytest.raises(CorruptDataError, match=r"db/t/notes\.txt: foreign file"):
        scan(_storage(tmp_path), CSV)
    snap = scan(_storage(tmp_path), ReaderConfig("csv", ignore_foreign_files=True))
    assert snap.streams == {}


def test_truncated_file_is_a_decode_error_naming_the_path(tmp_path: Path) -> None:
    tree = Tree(tmp_path)
    tree.schema(T, V1)
    line = csv_row("I", "db", "t", V1, 1, "abc")
    path = tree.data("db", "t", V1, 1, [line, line[:12]])
    snap = scan(_storage(tmp_path), CSV)
    with pytest.raises(CorruptDataError, match=path):
        FileReader(_storage(tmp_path), CSV).decode(snap.streams[("db", "t", 0)][0], snap.schema_for("db", "t", V1))


def test_bad_protocol_and_separator() -> None:
    with pytest.raises(ConfigError, match="unsupported protocol 'avro'"):
        ReaderConfig("avro")
    with pytest.raises(ConfigError, match="invalid date-separator 'week'"):
        ReaderConfig("csv", "week")
