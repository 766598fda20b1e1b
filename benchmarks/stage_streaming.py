"""Does a Python streaming source stream into a Python streaming sink of the same task (no shuffle in between)?

    .venv/bin/python benchmarks/stage_streaming.py [--rows 100000] [--payload 100] [--partitions 2]
                                                   [--writer-us 20] [--arrow-rows 16] [--configs 16,default,...]
                                                   [--wait-after N --wait-s 10]

The shape ``pipeline/query.py`` builds when ``route_aligned``: ``readStream.format(<python source>)`` written by
``writeStream.format(<python sink>)`` with no ``repartition``, so one task runs the source's ``read`` of a partition
and the sink's ``write`` of the same partition. Spark (4.3) runs them in two Python workers of that task: the JVM's
partition reader (``PythonStreamingPartitionReaderFactory``) evaluates the read function as a map-in-Arrow over the
pickled partition, and ``PythonBatchWriterFactory.writeAll`` feeds the rows it yields straight into a second
map-in-Arrow evaluation (the write function), one row iterator, no stage barrier. The question is how far the reader
runs ahead of the writer.

Measured with orderings and counts, not wall times (robust to a loaded machine): each reader publishes, in a
memory-mapped counter per partition, how many rows it has produced (set just before each ``yield``); the writer, on
receiving row ``i`` (0-based), reads that counter. ``lead = produced - (i + 1)`` is how many rows the reader is
ahead. The writer spins ``--writer-us`` microseconds per row, slower than the reader, so the reader runs until the
pipe between them is full and the lead shows its capacity. ``--wait-after N``: the reader pauses after N rows until
the writer has seen one (at most ``--wait-s``): the smallest head start that reaches the writer.

One line per configuration and partition (each configuration in a process and JVM of its own; the milliseconds
after ``|`` move with the load and are only indicative). Configurations: ``16``
(``spark.sql.execution.arrow.maxRecordsPerBatch`` = 16, as ``pipeline/query.py`` sets it), ``default`` (Spark's
10,000), ``16-noreuse`` (``spark.python.worker.reuse`` false), ``16-udfarrow``
(``spark.sql.execution.pythonUDF.arrow.enabled``), ``16-arrow`` / ``default-arrow`` (the reader yields
``pyarrow.RecordBatch``es of ``--arrow-rows`` rows, the writer is a ``DataSourceStreamArrowWriter``), ``16-uds``
(``spark.python.unix.domain.socket.enabled``), ``16-pipelined`` (``spark.python.udf.pipelined.enabled``),
``16-buf4k`` (``spark.sql.execution.pandas.udf.buffer.size`` 4096).

Found (2026-11-26, pyspark 4.3.0, 2 cores at load 9-12; ``--rows 100000 --payload 100 --writer-us 20``):

* It streams in every configuration: the writer gets rows while its reader is still producing the partition.
* The reader runs ahead by what the buffers between the two workers hold, in bytes, not rows: lead max 65-81k rows
  of 100 B (6.3-7.9 MiB of payload) with 16-row batches, whatever the worker reuse, pythonUDF.arrow, Arrow at
  both ends, pipelined mode or a 4 KiB buffer; about 9-10k rows of 1,000 B (``--payload 1000``: the same bytes).
  These are the two loopback TCP sockets (reader -> JVM -> writer), whose buffers Linux grows to several MiB
  (``net.ipv4.tcp_rmem`` max 32 MiB here); with ``16-uds`` (Unix sockets) the lead is 4.9-5.3k rows (~0.5 MiB).
  Socket buffers are kernel memory, not the workers' RSS.
* At Spark's default batch (10,000 rows) nothing reaches the writer before the reader has produced 10,000 rows (or
  ended its partition): the first row was seen after 60,000-70,000 rows, the lead reached 96k rows.
* The smallest head start: the JVM builds the writer's Arrow batch with ``while (input.hasNext && count < 16)``
  (``BatchedPythonArrowInput.writeSizedBatch``), so a batch of 16 rows leaves only once row 17 exists, i.e. once the
  reader's next batch has reached the JVM; a tuple reader also fills its own batch of 16 first. With
  ``--payload 102400 --rows 64 --wait-after`` 8 or 16 the writer saw no row while the reader paused (10 s, every
  configuration tried: 16, 16-arrow with 16-row batches, 16-pipelined); after 32 it saw 16. So the writer trails by
  at least one batch plus one row: for the relay source, 16-32 stage rows (payloads) before a writer's first one.
* Worker start: the reader's worker fills its socket while the writer's worker starts (the first row was seen
  after 2.6-32k rows of 100 B produced, 512 with Unix sockets): start-up, not buffering.

``tests/integration/pipeline/test_stage_streaming.py`` holds the session's settings to streaming.
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)

_COUNT = "<q"  # a format, not a struct.Struct: the classes are pickled by value with their globals
_COUNT_SIZE = 8
# Per partition, int64 slots: rows produced, monotonic ns of the first and of the last produced row, rows the writer
# has seen, and (``--wait-after``) how many rows the writer had seen when the reader's wait ended (-1: timed out).
_SLOTS = 5
_SEEN, _WAITED = 3, 4
SCHEMA = "seq long, payload binary"
_BATCH_16 = {"spark.sql.execution.arrow.maxRecordsPerBatch": "16"}
CONFIGS: dict[str, tuple[dict[str, str], bool]] = {  # name -> (session settings, Arrow at both ends)
    "16": (_BATCH_16, False),
    "default": ({}, False),
    "16-noreuse": ({**_BATCH_16, "spark.python.worker.reuse": "false"}, False),
    "16-udfarrow": ({**_BATCH_16, "spark.sql.execution.pythonUDF.arrow.enabled": "true"}, False),
    "16-arrow": (_BATCH_16, True),
    "default-arrow": ({}, True),
    "16-uds": ({**_BATCH_16, "spark.python.unix.domain.socket.enabled": "true"}, False),
    "16-pipelined": ({**_BATCH_16, "spark.python.udf.pipelined.enabled": "true"}, False),
    "16-buf4k": ({**_BATCH_16, "spark.sql.execution.pandas.udf.buffer.size": "4096"}, False),
}


def _counter(path: str) -> mmap.mmap:
    fd = os.open(path, os.O_RDWR)
    try:
        return mmap.mmap(fd, _COUNT_SIZE * _SLOTS)
    finally:
        os.close(fd)


class _Partition(InputPartition):
    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


class ProbeSource(DataSource):
    """One micro-batch of ``rows`` rows per partition; options: dir, rows, payload, partitions, arrow, arrow_rows."""

    @classmethod
    def name(cls) -> str:
        return "stage_probe"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _Reader(self.options)

    def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:
        return _ArrowWriter(self.options) if self.options["arrow"] == "1" else _RowWriter(self.options)


class _Reader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = dict(options)

    def initialOffset(self) -> dict[str, int]:
        return {"batch": 0}

    def latestOffset(self) -> dict[str, int]:
        return {"batch": 1}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [_Partition(i) for i in range(int(self.options["partitions"]))] if end["batch"] > start["batch"] else []

    def commit(self, end: dict[str, int]) -> None:
        pass

    def read(self, partition: InputPartition) -> Iterator[Any]:
        index = partition.index  # type: ignore[attr-defined]
        rows = int(self.options["rows"])
        payload = b"x" * int(self.options["payload"])
        counter = _counter(os.path.join(self.options["dir"], f"p{index}.count"))
        struct.pack_into(_COUNT, counter, _COUNT_SIZE, time.monotonic_ns())
        wait_after = int(self.options["wait_after"])
        if self.options["arrow"] == "1":
            import pyarrow as pa

            step = int(self.options["arrow_rows"])
            schema = pa.schema([("seq", pa.int64()), ("payload", pa.binary())])
            for start in range(0, rows, step):
                n = min(step, rows - start)
                if wait_after and start == wait_after:
                    _wait_for_writer(counter, float(self.options["wait_s"]))
                batch = pa.record_batch([pa.array(range(start, start + n), pa.int64()), pa.array([payload] * n)],
                                        schema=schema)  # fmt: skip
                _produced(counter, start + n, rows)
                yield batch
        else:
            for seq in range(rows):
                if wait_after and seq == wait_after:
                    _wait_for_writer(counter, float(self.options["wait_s"]))
                _produced(counter, seq + 1, rows)
                yield (seq, payload)


def _produced(counter: mmap.mmap, n: int, rows: int) -> None:
    struct.pack_into(_COUNT, counter, 0, n)
    if n == rows:
        struct.pack_into(_COUNT, counter, 2 * _COUNT_SIZE, time.monotonic_ns())


def _wait_for_writer(counter: mmap.mmap, seconds: float) -> None:
    """Stop producing until the writer has seen a row (or ``seconds`` passed): records what it had seen."""
    deadline = time.monotonic() + seconds
    seen = 0
    while time.monotonic() < deadline and not (seen := struct.unpack_from(_COUNT, counter, _SEEN * _COUNT_SIZE)[0]):
        time.sleep(0.01)
    struct.pack_into(_COUNT, counter, _WAITED * _COUNT_SIZE, seen or -1)


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class _Recorder:
    """What the writer of one partition saw: for each row received, how many rows its reader had produced."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.delay = int(options["writer_us"]) / 1e6
        self.counter: mmap.mmap | None = None
        self.began = time.monotonic_ns()
        self.first = 0
        self.produced = array("q")

    def seen(self, index: int) -> None:
        if self.counter is None:
            self.counter = _counter(os.path.join(self.options["dir"], f"p{index}.count"))
            self.first = time.monotonic_ns()
        self.produced.append(struct.unpack_from(_COUNT, self.counter, 0)[0])
        struct.pack_into(_COUNT, self.counter, _SEEN * _COUNT_SIZE, len(self.produced))
        if self.delay:
            _spin(self.delay)

    def save(self, index: int) -> None:
        with open(os.path.join(self.options["dir"], f"p{index}.seen"), "wb") as f:
            array("q", [self.began, self.first]).tofile(f)
            self.produced.tofile(f)


def _record(options: dict[str, str], rows: Iterator[None]) -> WriterCommitMessage:
    """Record, for each row a writer receives (``rows`` yields once per row), how far its reader was ahead."""
    rec = _Recorder(options)
    index = -1
    for _ in rows:
        if index < 0:
            index = _task_partition()
        rec.seen(index)
    if index >= 0:
        rec.save(index)
    return WriterCommitMessage()


class _RowWriter(DataSourceStreamWriter):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = dict(options)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _record(self.options, (None for _row in iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass


class _ArrowWriter(_RowWriter, DataSourceStreamArrowWriter):
    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _record(self.options, (None for batch in iterator for _ in range(batch.num_rows)))


def _task_partition() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def run(config: str, a: argparse.Namespace) -> list[str]:
    """Run one configuration in a fresh session; one summary line per partition."""
    from pyspark.sql import SparkSession

    settings, arrow = CONFIGS[config]
    builder = SparkSession.builder.master(f"local[{a.partitions}]").appName("stage-probe")
    for k, v in {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", **settings}.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(ProbeSource)
    with tempfile.TemporaryDirectory(prefix="stage-probe-") as tmp:
        for i in range(a.partitions):
            Path(tmp, f"p{i}.count").write_bytes(b"\0" * _COUNT_SIZE * _SLOTS)
        options = {"dir": tmp, "rows": a.rows, "payload": a.payload, "partitions": a.partitions, "arrow": int(arrow),
                   "arrow_rows": a.arrow_rows, "writer_us": a.writer_us, "wait_after": a.wait_after,
                   "wait_s": a.wait_s}  # fmt: skip
        options = {k: str(v) for k, v in options.items()}
        df = spark.readStream.format("stage_probe").options(**options).load()
        query = (df.writeStream.format("stage_probe").options(**options)
                 .option("checkpointLocation", os.path.join(tmp, "ckpt")).trigger(availableNow=True).start())
        query.awaitTermination()
        lines = []
        for i in range(a.partitions):
            counter = array("q", Path(tmp, f"p{i}.count").read_bytes())
            seen = array("q", Path(tmp, f"p{i}.seen").read_bytes())
            line = _summary(f"{config} p{i}", a.rows, a.payload, counter[1], counter[2], seen[0], seen[1], seen[2:])
            if a.wait_after:
                waited = counter[_WAITED]
                line += (f" | reader paused after {a.wait_after} rows: the writer saw " +
                         (f"{waited} of them" if waited > 0 else f"none in {a.wait_s:.0f} s")
                         if waited else f" | the reader never paused (no batch starts at row {a.wait_after})")
            lines.append(line)
    spark.stop()
    return lines


def _summary(name: str, rows: int, payload: int, read_first: int, read_last: int, write_began: int,
             write_first: int, seen: array) -> str:  # fmt: skip
    """One line: the counts (robust to load), then the times (informative only: they move with the load)."""
    leads = [produced - (i + 1) for i, produced in enumerate(seen)]
    done_at = next(i for i, produced in enumerate(seen) if produced == rows)  # rows the writer had seen by then
    while_reading = max(leads[:done_at] or [0])
    return (f"{name}: first row seen after {seen[0]}/{rows} produced ({'streams' if seen[0] < rows else 'NO STREAM'}); "
            f"reader done when the writer had seen {done_at}; lead max {max(leads)} rows "
            f"({max(leads) * payload >> 10} KiB of payload), max while reading {while_reading}, "
            f"median {statistics.median(leads):.0f} | ms: reader first row -> writer first row "
            f"{(write_first - read_first) / 1e6:.0f}, writer ready -> its first row "
            f"{(write_first - write_began) / 1e6:.0f}, "
            f"reader first -> last row {(read_last - read_first) / 1e6:.0f}")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=100_000, help="rows per partition")
    p.add_argument("--payload", type=int, default=100, help="payload bytes per row")
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--writer-us", type=int, default=20, help="the writer's spin per row (microseconds)")
    p.add_argument("--arrow-rows", type=int, default=16, help="rows per RecordBatch the Arrow reader yields")
    p.add_argument("--wait-after", type=int, default=0,
                   help="the reader pauses after this many rows until the writer has seen one (0: never)")
    p.add_argument("--wait-s", type=float, default=20.0, help="the longest such pause (seconds)")
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--one", help=argparse.SUPPRESS)  # run this configuration here (a child of the run)
    a = p.parse_args()
    if a.one:
        for line in run(a.one, a):
            print(line, flush=True)
        return
    # Each configuration in a process (and a JVM) of its own: PySpark's SparkSession.builder is one object per
    # process whose options outlive a stopped session, so a later configuration would inherit earlier settings.
    for config in a.configs.split(","):
        out = subprocess.run([sys.executable, __file__, *_without_configs(sys.argv[1:]), "--one", config],
                             capture_output=True, text=True, check=False)  # fmt: skip
        lines = [line for line in out.stdout.splitlines() if line.startswith(f"{config} p")]
        print("\n".join(lines) if lines and not out.returncode else f"{config}: failed\n{out.stderr[-2000:]}",
              flush=True)


def _without_configs(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--configs":
            skip = True
        elif not arg.startswith("--configs="):
            out.append(arg)
    return out


if __name__ == "__main__":
    sys.exit(main())
