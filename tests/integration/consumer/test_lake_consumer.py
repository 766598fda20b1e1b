"""``cdc storage-consumer`` (the CLI, as a user runs it) into lake tables: TiCDC-shaped storage trees (CSV with
include-commit-ts, canal-json with the TiDB extension: ``tests/unit/consumer/trees.py``) read into ``delta://`` and
``iceberg://`` (its SQL catalog on SQLite in the warehouse). The tables, read back by the spec readers of
``tests/e2e/lake_readers.py`` (no delta-rs, no pyiceberg), hold the rows the MySQL target gives for the same trees
(``test_storage_consumer.py`` asserts those against a real MariaDB); a replay after lost positions applies nothing
twice; time travel returns the first run's table; a RENAME TABLE moves the rows; a narrowing type change stops with one
line. No server, no Spark."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.lake import read_as_of
from sparkcdc.model import ColumnInfo, DDLAction
from tests.e2e.lake_readers import read_delta, read_iceberg
from tests.support import CDC
from tests.unit.consumer.trees import PARTITIONED_ROWS, Tree, csv_row, partitioned_canal_tree, table

pytestmark = pytest.mark.integration

V1 = 440000000000000000
FORMATS = ["delta", "iceberg"]


def _consume(tree: Tree, lake: str, *extra: str) -> subprocess.CompletedProcess[str]:
    cfg = tree.root.parent / "cf.toml"
    cfg.write_text("[sink.csv]\ninclude-commit-ts = true\n" if tree.protocol == "csv" else "")
    return subprocess.run(
        [CDC, "storage-consumer", "--upstream-uri", f"file://{tree.root}?protocol={tree.protocol}",
         "--downstream-uri", lake, "--once", "--quiet", "--log-level", "error", "--config", str(cfg), *extra],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": "src"},
    )  # fmt: skip


def _r(op: str, name: str, ts: int, *values: Any) -> str:
    return csv_row(op, "db", name, ts, *values)


def _ok(res: subprocess.CompletedProcess[str]) -> None:
    assert res.returncode == 0, res.stderr


def _metadata(lake: Path, schema: str, name: str) -> str:
    """The Iceberg table's current metadata file (a new one for every commit)."""
    with sqlite3.connect(lake / "catalog.db") as cat:
        (location,) = cat.execute("SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND "
                                  "table_name = ?", (schema, name)).fetchone()  # fmt: skip
    return str(location)


def _version(lake: Path, fmt: str, schema: str, name: str) -> str:
    """What changes with every commit: the Delta log's files, the Iceberg metadata file."""
    if fmt == "delta":
        return str(len(list((lake / schema / name / "_delta_log").glob("*.json"))))
    return _metadata(lake, schema, name)


def _rows(lake: Path, fmt: str, schema: str, name: str) -> list[tuple[Any, ...]]:
    """The table as the spec readers see it, rows as tuples in column order, by key; duplicates kept."""
    got = read_delta(lake / schema / name) if fmt == "delta" else read_iceberg(_metadata(lake, schema, name))
    return sorted((tuple(r.values()) for r in got), key=lambda row: row[0])


@pytest.mark.parametrize("fmt", FORMATS)
def test_csv_tree_with_ddl_replays_and_cutoff_equals_the_mysql_target(tmp_path: Path, fmt: str) -> None:
    t, u = table("db", "t"), table("db", "u")
    tree = Tree(tmp_path / "tree", width=6)
    tree.db_schema("db", V1, "CREATE DATABASE `db`", DDLAction.CREATE_SCHEMA)
    tree.schema(t, V1 + 10, "CREATE TABLE `t` (id INT PRIMARY KEY, v VARCHAR(20))", DDLAction.CREATE_TABLE)
    tree.schema(u, V1 + 11, "CREATE TABLE `u` (id INT PRIMARY KEY, v VARCHAR(20))", DDLAction.CREATE_TABLE)
    tree.data("db", "t", V1 + 10, 1, [_r("I", "t", V1 + 20, 1, "a"), _r("I", "t", V1 + 20, 2, "b")])
    tree.data("db", "t", V1 + 10, 2, [_r("U", "t", V1 + 30, 1, "a2"), _r("D", "t", V1 + 40, 2, "b")])
    # producer restart: file 3 re-sends the rows of ts 20 and 30, then continues
    tree.data("db", "t", V1 + 10, 3, [
        _r("I", "t", V1 + 20, 1, "a"), _r("I", "t", V1 + 20, 2, "b"),
        _r("U", "t", V1 + 30, 1, "a2"), _r("I", "t", V1 + 50, 3, "c"),
    ])  # fmt: skip
    tree.data("db", "u", V1 + 11, 1, [_r("I", "u", V1 + 21, 7, "u7")])
    tree.schema(table("db", "t", ColumnInfo("w", "int")), V1 + 60, "ALTER TABLE `t` ADD COLUMN `w` INT",
                DDLAction.ADD_COLUMN)  # fmt: skip
    tree.data("db", "t", V1 + 60, 1, [_r("I", "t", V1 + 70, 4, "d", 44)])
    tree.data("db", "u", V1 + 11, 2, [_r("I", "u", V1 + 65, 8, "u8"), _r("I", "u", V1 + 90, 9, "u9")])
    tree.metadata(V1 + 80)
    lake = tmp_path / "lake"
    uri = f"{fmt}://{lake}"

    _ok(_consume(tree, uri))
    first_t = [(1, "a2", None), (3, "c", None), (4, "d", 44)]  # what test_storage_consumer's MariaDB holds
    assert _rows(lake, fmt, "db", "t") == first_t
    assert _rows(lake, fmt, "db", "u") == [(7, "u7"), (8, "u8")]  # ts 90 > the checkpoint 80: not yet

    # the checkpoint moves on; then the positions are lost (a crash after the lake commits): all read again
    tree.data("db", "t", V1 + 60, 2, [_r("D", "t", V1 + 100, 3, "c", None), _r("U", "t", V1 + 100, 4, "d", 45)])
    tree.metadata(V1 + 120)
    _ok(_consume(tree, uri))
    versions = [_version(lake, fmt, "db", name) for name in ("t", "u")]
    (lake / ".sparkcdc" / "consumer-default.json").unlink()
    _ok(_consume(tree, uri))
    assert [_version(lake, fmt, "db", name) for name in ("t", "u")] == versions  # no commit: all held already
    assert _rows(lake, fmt, "db", "t") == [(1, "a2", None), (4, "d", 45)]
    assert _rows(lake, fmt, "db", "u") == [(7, "u7"), (8, "u8"), (9, "u9")]
    as_of = read_as_of(uri, "db.t", V1 + 80).to_pylist()
    assert sorted((tuple(r.values()) for r in as_of), key=lambda row: row[0]) == first_t

    # a RENAME (the schema file names only the new table): the rows move, later rows land in the new name, and
    # the old name still reads as it was before the rename
    tree.schema(table("db", "u_new"), V1 + 130, "RENAME TABLE `db`.`u` TO `db`.`u_new`", DDLAction.RENAME_TABLE)
    tree.data("db", "u_new", V1 + 130, 1, [_r("I", "u_new", V1 + 135, 10, "u10")])
    tree.metadata(V1 + 140)
    _ok(_consume(tree, uri))
    assert _rows(lake, fmt, "db", "u_new") == [(7, "u7"), (8, "u8"), (9, "u9"), (10, "u10")]
    assert _rows(lake, fmt, "db", "u") == []
    assert len(read_as_of(uri, "db.u", V1 + 129)) == 3

    # a type change no lake type can hold in place: one line naming the schema file and the DDL
    narrowed = table("db", "t", ColumnInfo("w", "varchar", length=5))
    tree.schema(narrowed, V1 + 150, "ALTER TABLE `t` MODIFY `w` VARCHAR(5)", DDLAction.MODIFY_COLUMN)
    tree.metadata(V1 + 160)
    res = _consume(tree, uri)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "schema_" in lines[0] and "MODIFY" in lines[0] and "changes lake type from int32 to string" in lines[0]


@pytest.mark.parametrize("fmt", FORMATS)
def test_canal_json_partitions_and_a_table_without_create(tmp_path: Path, fmt: str) -> None:
    tree = partitioned_canal_tree(tmp_path / "tree", V1)
    lake = tmp_path / "lake"
    _ok(_consume(tree, f"{fmt}://{lake}"))
    assert _rows(lake, fmt, "db2", "p") == PARTITIONED_ROWS  # as test_storage_consumer's MariaDB


def test_a_bad_lake_uri_is_one_line(tmp_path: Path) -> None:
    tree = Tree(tmp_path / "tree")
    tree.metadata(V1)
    res = _consume(tree, "delta://bucket/lake")
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "takes a local absolute path and no host" in res.stderr
