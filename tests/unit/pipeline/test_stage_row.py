"""The stage row's one definition: the Spark schema the query declares is the Arrow schema Spark checks a source's
record batches against, and every kind goes through Spark's form and back unchanged."""

from __future__ import annotations

import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from sparkcdc.pipeline.stage_row import Ddl, Dml, Mark, Snap, StageRow, arrow_schema, from_spark, spark_schema, to_spark

ROWS: list[StageRow] = [
    Dml(3, "db", "t", 100, 7, 200, 1, 2, b"payload", b"info"),
    Dml(0, "db", "t", 100, 7, 200, 2, 1, b"", None),
    Ddl(300, 3, b"ddl event"),
    Mark(100, 300, 1_700_000_000_000),
    Snap(4, 1000, 99, "mysql-bin.000003", 1234, b"keys"),
]


def test_the_spark_schema_is_the_arrow_schema() -> None:
    assert to_arrow_schema(spark_schema(), timezone="UTC").equals(arrow_schema())
    assert spark_schema().fieldNames() == ["route", "dml", "ddl", "mark", "snap"]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: type(r).__name__)
def test_each_kind_goes_through_spark_unchanged(row: StageRow) -> None:
    spark = to_spark(row)
    assert len(spark) == len(arrow_schema()) and [f is not None for f in spark[1:]].count(True) == 1
    assert from_spark(spark) == row and type(from_spark(spark)) is type(row)
