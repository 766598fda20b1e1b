"""format("ticdc") on real Spark over hand-made TiCDC-shaped trees: batch and streaming."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.pipeline.ticdc_source import register
from tests.unit.consumer.trees import Tree, canal_row, csv_row, table

pytestmark = pytest.mark.integration

V1 = 440000000000000000


@pytest.fixture(scope="module")
def ticdc_spark(spark: Any) -> Any:
    os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    register(spark)
    return spark


def test_batch_read_csv_with_partitions_dates_and_widths(tmp_path: Path, ticdc_spark: Any) -> None:
    t = table("db", "t")
    tree = Tree(tmp_path, width=6)
    tree.schema(t, V1, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", 3)
    tree.data("db", "t", V1, 1, [csv_row("I", "db", "t", V1 + 1, 1, "a"), csv_row("D", "db", "t", V1 + 2, 1, "a")],
              partition=7, date="2024-01-01")  # fmt: skip
    tree.data("db", "t", V1, 1, [csv_row("U", "db", "t", V1 + 3, 2, None)], partition=8, date="2024-01-02", width=20)
    tree.metadata(V1 + 2)
    df = (
        ticdc_spark.read.format("ticdc").option("csv.include-commit-ts", "true").load(f"file://{tmp_path}?protocol=csv")
    )
    rows = sorted(df.collect(), key=lambda r: r.commit_ts)
    assert [(r.partition, r.commit_ts, r.op, r.row_number) for r in rows] == [
        (7, V1 + 1, "INSERT", 0), (7, V1 + 2, "DELETE", 1), (8, V1 + 3, "INSERT", 0)
    ]  # fmt: skip
    assert rows[0].after == {"id": "1", "v": "a"} and rows[0].before is None
    assert rows[1].before == {"id": "1", "v": "a"} and rows[1].after is None
    assert rows[2].after == {"id": "2", "v": None}
    assert rows[2].file == f"db/t/{V1}/8/2024-01-02/CDC00000000000000000001.csv"
    only = (ticdc_spark.read.format("ticdc").option("protocol", "csv").option("csv.include-commit-ts", "true")
            .option("up-to-checkpoint", "true").load(f"file://{tmp_path}"))  # fmt: skip
    assert only.count() == 2


def test_batch_read_of_a_tree_without_data_files_is_empty(tmp_path: Path, ticdc_spark: Any) -> None:
    Tree(tmp_path).metadata(V1)
    df = ticdc_spark.read.format("ticdc").option("protocol", "csv").load(f"file://{tmp_path}")
    assert df.collect() == []


def test_streaming_offsets_follow_metadata(tmp_path: Path, ticdc_spark: Any) -> None:
    p = table("db", "p")
    tree = Tree(tmp_path, protocol="canal-json")
    tree.schema(p, V1)
    tree.data("db", "p", V1, 1, [canal_row("INSERT", "db", "p", V1 + 1, {"id": 1, "v": "a"}),
                                 canal_row("INSERT", "db", "p", V1 + 5, {"id": 2, "v": "b"})])  # fmt: skip
    tree.metadata(V1 + 1)
    ckpt = tmp_path.parent / (tmp_path.name + "-ckpt")
    out = tmp_path.parent / (tmp_path.name + "-out")

    def run() -> list[Any]:
        q = (ticdc_spark.readStream.format("ticdc").load(f"file://{tmp_path}?protocol=canal-json")
             .select("commit_ts", "op").writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())  # fmt: skip
        q.awaitTermination()
        return sorted(r.commit_ts for r in ticdc_spark.read.parquet(str(out)).collect())

    assert run() == [V1 + 1]  # V1+5 is above the checkpoint
    tree.data("db", "p", V1, 2, [canal_row("UPDATE", "db", "p", V1 + 9, {"id": 2, "v": "c"}, {"id": 2, "v": "b"})])
    tree.metadata(V1 + 9)
    assert run() == [V1 + 1, V1 + 5, V1 + 9]  # the restarted query appended only (V1+1, V1+9]


def test_batch_read_from_s3(tmp_path: Path, ticdc_spark: Any, request: pytest.FixtureRequest) -> None:
    from sparkcdc.storage.external import ExternalStorage
    from tests.fixtures.object_stores import backend_uri

    tree = Tree(tmp_path, protocol="canal-json", date="")
    tree.schema(table("db", "s"), V1)
    tree.data("db", "s", V1, 1, [canal_row("INSERT", "db", "s", V1 + 1, {"id": 7, "v": "über"})])
    tree.metadata(V1 + 1)
    root = backend_uri("s3", request, "ticdc-source")
    storage = ExternalStorage.from_uri(root)
    for p in sorted(tmp_path.rglob("*")):
        if p.is_file():
            storage.write(str(p.relative_to(tmp_path)), p.read_bytes())
    df = ticdc_spark.read.format("ticdc").option("protocol", "canal-json").load(root)
    (row,) = df.collect()
    assert (row.database, row.table, row.commit_ts, row.op, row.after) == ("db", "s", V1 + 1, "INSERT",
                                                                           {"id": "7", "v": "über"})  # fmt: skip
