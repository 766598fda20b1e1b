"""`cdc storage-consumer` on damaged trees: one `Error:` line naming the path, exit 1, no checkpoint advance,
and a correct resume once the tree is repaired."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sparkcdc.mysql.target import MysqlTarget
from tests.integration.consumer.servers import run_sql
from tests.support import CDC
from tests.unit.consumer.trees import Tree, csv_row, table

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

V1 = 440000000000000000


def _run(root: Path, t: MysqlTarget, *extra: str) -> subprocess.CompletedProcess[str]:
    cfg = root.parent / "cf.toml"
    cfg.write_text("[sink.csv]\ninclude-commit-ts = true\n")
    return subprocess.run(
        [CDC, "storage-consumer", "--upstream-uri", f"file://{root}?protocol=csv", "--downstream-uri",
         f"mysql://consumer:s3cret-pw@{t.host}:{t.port}/", "--once", "--quiet", "--log-level", "error",
         "--config", str(cfg), *extra],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": "src"},
    )  # fmt: skip


@pytest.fixture()
def prepared(tmp_path: Path, target: MysqlTarget) -> tuple[Tree, MysqlTarget]:
    run_sql(target, "DROP DATABASE IF EXISTS errdb", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            "CREATE DATABASE errdb", "CREATE TABLE errdb.t (id INT PRIMARY KEY, v VARCHAR(20))",
            "CREATE USER IF NOT EXISTS 'consumer'@'%' IDENTIFIED BY 's3cret-pw'",
            "GRANT ALL ON *.* TO 'consumer'@'%'")  # fmt: skip
    tree = Tree(tmp_path / "tree")
    tree.schema(table("errdb", "t"), V1)
    tree.data("errdb", "t", V1, 1, [csv_row("I", "errdb", "t", V1 + 1, 1, "a")])
    tree.metadata(V1 + 100)
    return tree, target


def _ids(t: MysqlTarget) -> list[int]:
    return [r[0] for r in run_sql(t, "SELECT id FROM errdb.t ORDER BY id")]


@pytest.mark.parametrize("damage", ["foreign", "checksum", "no-schema", "truncated"])
def test_damaged_tree_stops_with_one_line_then_resumes(prepared: tuple[Tree, MysqlTarget], damage: str) -> None:
    tree, t = prepared
    t_next = table("errdb", "t")
    if damage == "foreign":
        bad = tree.put("errdb/t/README.md", b"not ours")
        repair = lambda: (tree.root / bad).unlink()  # noqa: E731
    elif damage == "checksum":
        good = tree.schema(t_next, V1 + 50)
        bad = good.replace(good.rsplit("_", 1)[1], "0000000042.json")
        (tree.root / good).rename(tree.root / bad)
        tree.data("errdb", "t", V1 + 50, 1, [csv_row("I", "errdb", "t", V1 + 60, 2, "b")])
        repair = lambda: (tree.root / bad).rename(tree.root / good)  # noqa: E731
    elif damage == "no-schema":
        tree.data("errdb", "t", V1 + 50, 1, [csv_row("I", "errdb", "t", V1 + 60, 2, "b")])
        bad = f"errdb/t/{V1 + 50}"
        repair = lambda: tree.schema(t_next, V1 + 50)  # noqa: E731
    else:
        line = csv_row("I", "errdb", "t", V1 + 60, 2, "bbbbbb")
        bad = tree.data("errdb", "t", V1, 2, [line[:-9]])
        repair = lambda: (tree.root / bad).write_text(line)  # noqa: E731
    res = _run(tree.root, t)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and bad in lines[0], res.stderr
    assert "s3cret-pw" not in res.stderr
    assert "Traceback" not in res.stderr
    applied = _ids(t)
    assert 2 not in applied  # nothing past the damage
    repair()
    res = _run(tree.root, t)
    assert res.returncode == 0, res.stderr
    assert _ids(t) == ([1] if damage == "foreign" else [1, 2])



def test_wrong_downstream_password_fails_at_once(tmp_path: Path, target: MysqlTarget) -> None:
    # an empty tree would otherwise make the consumer wait for `metadata` forever before noticing
    (tmp_path / "tree").mkdir()
    r = subprocess.run(
        [CDC, "storage-consumer", "--upstream-uri", f"file://{tmp_path}/tree?protocol=csv", "--downstream-uri",
         f"mysql://nobody:Wr0ng-pw@{target.host}:{target.port}/", "--once", "--log-level", "error"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": "src"},
    )  # fmt: skip
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and "downstream" in lines[0], r.stderr
    assert "Wr0ng-pw" not in r.stderr


def test_text_a_latin1_column_cannot_hold_stops_with_one_line_then_resumes(tmp_path: Path, target: MysqlTarget) -> None:
    texts = {1: " 好学生 ", 2: "😀 𠀋𝄞"}
    run_sql(target, "DROP DATABASE IF EXISTS errdb", "DROP DATABASE IF EXISTS sparkcdc_consumer",
            "CREATE DATABASE errdb CHARACTER SET latin1",  # as MariaDB's stock `test` database
            "CREATE TABLE errdb.t (id INT PRIMARY KEY, v VARCHAR(20))",  # exists downstream: latin1 columns
            "CREATE USER IF NOT EXISTS 'consumer'@'%' IDENTIFIED BY 's3cret-pw'",
            "GRANT ALL ON *.* TO 'consumer'@'%'")  # fmt: skip
    tree = Tree(tmp_path / "tree")
    for name in ("t", "u"):  # u is missing downstream: the consumer creates it
        tree.schema(table("errdb", name), V1)
    tree.data("errdb", "t", V1, 1, [csv_row("I", "errdb", "t", V1 + 1, 1, "a")])
    tree.data("errdb", "t", V1, 2, [csv_row("I", "errdb", "t", V1 + 2, 2, texts[1])])
    tree.data("errdb", "u", V1, 1, [csv_row("I", "errdb", "u", V1 + 1, k, v) for k, v in texts.items()])
    tree.metadata(V1 + 100)

    def stored(name: str) -> dict[int, bytes]:
        return {r[0]: bytes.fromhex(r[1]) for r in run_sql(target, f"SELECT id, HEX(v) FROM errdb.{name}")}

    res = _run(tree.root, target, "--batch-rows", "1")
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: [CDC:ErrMySQLTxnError] "), res.stderr
    assert "writing errdb.t column v would lose data: Incorrect string value" in lines[0]
    assert "ALTER TABLE `errdb`.`t` CONVERT TO CHARACTER SET utf8mb4" in lines[0]
    assert "s3cret-pw" not in res.stderr and "Traceback" not in res.stderr
    assert stored("t") == {1: b"a"}  # never '?'
    assert run_sql(target, "SELECT file_index, row_offset FROM sparkcdc_consumer.checkpoint WHERE tbl='t'") == [(1, 1)]
    assert stored("u") == {k: v.encode() for k, v in texts.items()}  # the table it created holds every byte
    run_sql(target, "ALTER TABLE errdb.t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")  # as told
    res = _run(tree.root, target, "--batch-rows", "1")
    assert res.returncode == 0, res.stderr
    assert stored("t") == {1: b"a", 2: texts[1].encode()}


def test_a_dropped_downstream_schema_stops_it_in_one_line_until_reset(prepared: tuple[Tree, MysqlTarget]) -> None:
    """Issue 26, item 7: `DROP DATABASE` downstream, then the same consumer again: it applied nothing, silently (its
    checkpoints said it was past everything). Now one `Error:` line naming the table and `--reset-checkpoints`, exit
    1; with the flag, everything is applied again."""
    tree, t = prepared
    assert _run(tree.root, t).returncode == 0 and _ids(t) == [1]
    run_sql(t, "DROP DATABASE errdb")
    res = _run(tree.root, t)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: [CDC:ErrConsumerCheckpointAhead] sparkcdc_consumer."
                                                   "checkpoint says consumer 'default' applied rows to errdb.t "), lines
    assert "that table is missing" in lines[0] and "run with --reset-checkpoints" in lines[0]
    assert "s3cret-pw" not in res.stderr and "Traceback" not in res.stderr
    res = _run(tree.root, t, "--reset-checkpoints")
    assert res.returncode == 0, res.stderr
    assert _ids(t) == [1]
    assert _run(tree.root, t).returncode == 0  # and later runs go on as usual
