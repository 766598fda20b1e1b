"""The reader accepts every data-file layout of the spec's path vectors and orders files as they were written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkcdc.consumer.storage_reader import ReaderConfig, scan
from sparkcdc.model import ColumnInfo, TableInfo
from sparkcdc.storage.external import ExternalStorage
from tests.unit.consumer.trees import Tree
from tests.vectors import params


def _layout(tmp_path: Path, schema: str, table: str, version: int, paths: list[str], ext: str) -> list[Any]:
    tree = Tree(tmp_path, protocol="csv" if ext == ".csv" else "canal-json")
    tree.schema(TableInfo(schema, table, 1, (ColumnInfo("id", "int", primary_key=True, nullable=False),)), version)
    for p in paths:
        tree.put(p, b"x")
        tree.put(p.rsplit("/", 1)[0] + "/meta/CDC.index", p.rsplit("/", 1)[1].encode() + b"\n")
    return [tree]


@pytest.mark.parametrize("vector", params("paths", "path-"))
def test_generated_paths_scan_in_write_order(vector: dict[str, Any], tmp_path: Path) -> None:
    inp, expected = vector["input"], vector["expected"]
    paths = expected if isinstance(expected, list) else [expected["data_file"]]
    _layout(tmp_path, inp["schema"], inp["table"], inp["table_version"], paths, inp["extension"])
    protocol = "csv" if inp["extension"] == ".csv" else "canal-json"
    for sep in ("auto", inp.get("date_separator", "day")):
        snap = scan(ExternalStorage.from_uri(f"file://{tmp_path}"), ReaderConfig(protocol, sep))
        files = [f for fs in snap.streams.values() for f in fs]
        assert [f.path for f in files] == paths
        if inp.get("is_partition"):
            assert {f.partition for f in files} == {inp["physical_table_id"]}


@pytest.mark.parametrize("vector", params("paths", "dml-path-"))
def test_dml_path_keys(vector: dict[str, Any], tmp_path: Path) -> None:
    inp, exp = vector["input"], vector["expected"]
    _layout(tmp_path, exp["schema"], exp["table"], exp["table_version"], [inp["path"]], inp["extension"])
    snap = scan(ExternalStorage.from_uri(f"file://{tmp_path}"), ReaderConfig("csv", inp["date_separator"]))
    (f,) = snap.streams[(exp["schema"], exp["table"], exp["partition_num"])]
    assert (f.table_version, f.date, f.index) == (exp["table_version"], exp["date"], exp["file_index"])
