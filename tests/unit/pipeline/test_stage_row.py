"""The stage row's one definition: the Spark schema the query declares is the Arrow schema Spark checks a source's
record batches against, every kind goes through record batches and back unchanged, and the batches are bounded so
that a big transaction is never whole in one."""

from __future__ import annotations

from pyspark.sql.pandas.types import to_arrow_schema

from sparkcdc.pipeline.stage_row import (
    BATCH_BYTES,
    BATCH_ROWS,
    Ddl,
    Dml,
    Mark,
    Snap,
    StageRow,
    arrow_schema,
    from_batches,
    spark_schema,
    to_batches,
)

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


def test_every_kind_goes_through_record_batches_unchanged() -> None:
    batches = list(to_batches(ROWS))
    assert len(batches) == 1 and all(b.schema.equals(arrow_schema()) for b in batches)
    back = list(from_batches(batches))
    assert back == ROWS and [type(r) for r in back] == [type(r) for r in ROWS]
    dml = [r for r in ROWS if isinstance(r, Dml)]
    assert list(from_batches(to_batches(dml))) == dml  # a batch of payloads only (read column by column)


def test_batches_are_bounded_by_rows_and_by_bytes() -> None:
    small = [Dml(1, "db", "t", 1, 1, 10, i, 1, b"x", None) for i in range(BATCH_ROWS * 2 + 1)]
    assert [b.num_rows for b in to_batches(small)] == [BATCH_ROWS, BATCH_ROWS, 1]
    part = BATCH_BYTES // 2 + 1  # two parts of a big transaction fill a batch
    big = [Dml(1, "db", "t", 1, 1, 10, i, 1000, b"p" * part, None) for i in range(5)]
    assert [b.num_rows for b in to_batches(big)] == [2, 2, 1]
    assert list(from_batches(to_batches(big))) == big


def test_a_batch_is_passed_on_before_the_next_row_is_read() -> None:
    read: list[int] = []

    def rows() -> object:
        for i in range(BATCH_ROWS + 1):
            read.append(i)
            yield Dml(1, "db", "t", 1, 1, 10, i, 1, b"x", None)

    batches = to_batches(rows())  # type: ignore[arg-type]
    next(batches)
    assert len(read) == BATCH_ROWS
