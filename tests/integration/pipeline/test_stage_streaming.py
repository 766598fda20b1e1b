"""The route-aligned query's shape streams with the pipeline's session settings.

When ``query.route_aligned`` holds, one Spark task runs the relay source's ``read`` and the sink's ``write`` of the
same partition with no shuffle between them: two Python workers of the task, the JVM moving the reader's output to
the writer in Arrow batches of ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows. ``sink_writer.write_partition``
relies on the writer getting a partition's rows while its reader still produces it (reading and writing overlap; a
big transaction's stage rows are not all held at once). With the session's 16 rows per batch that holds; at Spark's
default of 10,000 a reader of fewer rows sends nothing before it has finished. Here a reader pauses halfway through
its partition until its writer has seen a row; the writer must see one while the reader waits.
``benchmarks/stage_streaming.py`` measures how far the reader runs ahead.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)

from sparkcdc.pipeline.registration import register_data_source

pytestmark = pytest.mark.integration

NAME = "stage_stream_probe"
ROWS = 64
BATCH_ROWS = 16  # the session's spark.sql.execution.arrow.maxRecordsPerBatch
PAUSE_AT = 2 * BATCH_ROWS  # two Arrow batches produced when the reader pauses
ROW_BYTES = 64 << 10  # each batch larger than the Python workers' 64 KiB socket buffers
PAUSE_SECONDS = 60.0  # the longest the reader waits for its writer


class _Source(DataSource):
    """One micro-batch of one partition of ``ROWS`` rows. Option ``dir``: where the writer appends a byte per row it
    receives (``seen``) and the reader records how many the writer had when its pause ended (``paused``)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return "seq long, payload binary"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _Reader(Path(self.options["dir"]))

    def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:
        return _Writer(Path(self.options["dir"]))


class _Reader(DataSourceStreamReader):
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def initialOffset(self) -> dict[str, int]:
        return {"batch": 0}

    def latestOffset(self) -> dict[str, int]:
        return {"batch": 1}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [InputPartition(0)] if end["batch"] > start["batch"] else []

    def commit(self, end: dict[str, int]) -> None:
        pass

    def read(self, partition: InputPartition) -> Iterator[tuple[int, bytes]]:
        payload = b"x" * ROW_BYTES
        seen = self.folder / "seen"
        for seq in range(ROWS):
            if seq == PAUSE_AT:  # until the writer has a whole Arrow batch: it appends a row at a time
                deadline = time.monotonic() + PAUSE_SECONDS
                while time.monotonic() < deadline and _size(seen) < BATCH_ROWS:
                    time.sleep(0.02)
                (self.folder / "paused").write_text(str(_size(seen)))
            yield (seq, payload)


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


class _Writer(DataSourceStreamWriter):
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        fd = os.open(self.folder / "seen", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            for _row in iterator:
                os.write(fd, b".")
        finally:
            os.close(fd)
        return WriterCommitMessage()

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass


def test_a_writer_gets_rows_while_its_reader_in_the_same_task_is_still_reading(
    spark: Any, tmp_path: Path, capsys: Any
) -> None:
    register_data_source(spark, _Source)
    query = (
        spark.readStream.format(NAME).option("dir", str(tmp_path)).load()
        .writeStream.format(NAME).option("dir", str(tmp_path))
        .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start()
    )  # fmt: skip
    assert query.awaitTermination(PAUSE_SECONDS + 120)
    assert query.exception() is None
    capsys.readouterr()
    query.explain()
    plan = capsys.readouterr().out
    assert "WriteToDataSourceV2" in plan and "Exchange" not in plan  # reading and writing in one task
    assert (tmp_path / "seen").stat().st_size == ROWS
    # at least the first Arrow batch reached the writer while the reader had produced only two of its four
    assert int((tmp_path / "paused").read_text()) >= BATCH_ROWS
