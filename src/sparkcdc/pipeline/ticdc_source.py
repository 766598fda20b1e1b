"""``format("ticdc")``: a Spark Python Data Source over any TiCDC storage-sink root, batch and streaming.

Register once per SparkSession, then read with one line::

    from sparkcdc.pipeline.ticdc_source import register
    register(spark)
    df = spark.read.format("ticdc").load("s3://bucket/prefix?protocol=canal-json&endpoint=http://…")
    q = spark.readStream.format("ticdc").option("protocol", "csv").load("file:///data/cdc").writeStream…

The path is a storage-sink URI (file/s3/gcs/gs/azure/azblob, backend parameters in the query string). Options:

=========================  =====================================================================================
``protocol``               ``csv`` or ``canal-json`` (or ``?protocol=`` in the path)
``date-separator``         ``auto`` (default), ``none``, ``year``, ``month``, ``day``
``csv.<key>``              producer's ``[sink.csv]`` settings: ``csv.include-commit-ts``, ``csv.delimiter``, …
``terminator``             producer's row terminator (default ``\\r\\n``)
``ignore-foreign-files``   ``true`` to skip files outside the layout instead of failing
``up-to-checkpoint``       batch only: ``true`` keeps only rows with commit-ts <= the ``metadata`` checkpoint
``start-ts``               streaming only: first offset (rows with commit-ts > start-ts are read)
=========================  =====================================================================================

Every row of every data file becomes one row of this schema (works for any table):

``database, table, table_version, partition`` (0 without partition dirs), ``commit_ts`` (0 when the file has
none: CSV without include-commit-ts), ``op`` (INSERT/UPDATE/DELETE), ``before`` and ``after``
(``map<string,string>`` column name -> value text: integers and decimals in decimal, floats as Python
``repr``, temporals as MySQL text, binary values **base64**, NULL as a null map value; ``before`` is null for
INSERT and ``after`` for DELETE), ``file`` (path relative to the root) and ``row_number`` (0-based in file).
CSV ``U`` rows carry only the new image and come out as INSERT (an upsert), as in TiCDC's decoder.

Streaming offsets are ``{"checkpoint_ts": C}`` read from the ``metadata`` file: a micro-batch holds exactly the
rows with ``previous C < commit-ts <= C``, taken from files listed after ``metadata`` was read (visible files are
complete: TiCDC writes each file in one put or rename). Rows without a commit-ts count as committed at their
version directory's TableVersion. Each micro-batch lists the tree and reads the files of version directories
<= C again (filtering by commit-ts on the executors); it keeps no state between calls.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)

from sparkcdc.pipeline.source_rows import SCHEMA, TRUE, change_row

NAME = "ticdc"


def register(spark: Any) -> None:
    """Make ``spark.read.format("ticdc")`` / ``spark.readStream.format("ticdc")`` available (safe for several
    streams of it starting at once: see ``sparkcdc.pipeline.registration``)."""
    from sparkcdc.pipeline.registration import register_data_source

    register_data_source(spark, TicdcDataSource)


class _Source:
    """Driver-side config built from the string options (validated once, picklable)."""

    def __init__(self, options: dict[str, str]) -> None:
        from sparkcdc.consumer.storage_reader import ReaderConfig
        from sparkcdc.errors import ConfigError
        from sparkcdc.storage.external import ExternalStorage
        from sparkcdc.storage.sink_config import StorageSinkConfig

        opts = {k.lower(): v for k, v in options.items()}
        path = opts.get("path", "")
        if not path:
            raise ConfigError('format("ticdc") needs a path: .load("s3://bucket/prefix?protocol=csv")')
        if "protocol=" not in path and opts.get("protocol"):
            path += ("&" if "?" in path else "?") + "protocol=" + opts["protocol"]
        csv = {k[4:]: v for k, v in opts.items() if k.startswith("csv.")}
        for key in ("include-commit-ts", "output-old-value", "output-handle-key", "output-field-header"):
            if key in csv:
                csv[key] = csv[key].lower() in TRUE  # type: ignore[assignment]
        toml: dict[str, Any] = {"sink": {"csv": csv}}
        if "terminator" in opts:
            toml["sink"]["terminator"] = opts["terminator"].encode().decode("unicode_escape")
        sink = StorageSinkConfig.from_uri(path, toml)
        self.reader = ReaderConfig.from_sink(
            sink,
            date_separator=opts.get("date-separator", "auto"),
            ignore_foreign_files=opts.get("ignore-foreign-files", "false").lower() in TRUE,
        )
        self.storage = ExternalStorage.from_config(sink)
        self.up_to_checkpoint = opts.get("up-to-checkpoint", "false").lower() in TRUE
        try:
            self.start_ts = int(opts.get("start-ts", "0"))
        except ValueError:
            raise ConfigError(f"start-ts {opts.get('start-ts')!r} is not a TSO (decimal integer)") from None


class FilePartition(InputPartition):
    """One data file and the commit-ts range ``(low, high]`` to keep (``high`` None: everything)."""

    def __init__(self, file: Any, definition: Any, schema_path: str, low: int, high: int | None) -> None:
        self.file = file
        self.definition = definition
        self.schema_path = schema_path
        self.low = low
        self.high = high


def _plan(src: _Source, low: int, high: int | None) -> list[FilePartition]:
    from sparkcdc.consumer.storage_reader import scan

    snap = scan(src.storage, src.reader)
    limit = high
    if limit is None and src.up_to_checkpoint:
        limit = snap.checkpoint_ts or 0
    out = []
    for key in sorted(snap.streams):
        for f in snap.streams[key]:
            if limit is not None and f.table_version > limit:
                continue
            entry = snap.schema_for(f.schema, f.table, f.table_version)
            out.append(FilePartition(f, entry.definition, entry.path, low, limit))
    return out


def _read(src: _Source, part: InputPartition) -> Iterator[tuple[Any, ...]]:
    from sparkcdc.consumer.storage_reader import FileReader, SchemaEntry

    if not isinstance(part, FilePartition):
        return  # Spark reads one InputPartition(None) when partitions() is empty (a tree without data files)

    reader = FileReader(src.storage, src.reader)
    f = part.file
    rows = reader.decode(f, SchemaEntry(part.schema_path, part.definition))
    for i, r in enumerate(rows):
        ts = r.commit_ts or f.table_version
        if ts <= part.low or (part.high is not None and ts > part.high):
            continue
        yield change_row(r, f.schema, f.table, f.table_version, f.partition, f.path, i)


class TicdcReader(DataSourceReader):
    def __init__(self, src: _Source) -> None:
        self.src = src

    def partitions(self) -> Sequence[InputPartition]:
        return _plan(self.src, -1, None)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        yield from _read(self.src, partition)


class TicdcStreamReader(DataSourceStreamReader):
    """Offsets ``{"checkpoint_ts": C}`` follow the storage ``metadata`` file (durable state, never counters)."""

    def __init__(self, src: _Source) -> None:
        self.src = src

    def initialOffset(self) -> dict[str, int]:
        return {"checkpoint_ts": self.src.start_ts}

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        from sparkcdc.storage.metadata import read_checkpoint

        c = read_checkpoint(self.src.storage) or 0
        floor = int(start["checkpoint_ts"]) if start else self.src.start_ts
        return {"checkpoint_ts": max(c, floor)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        low, high = int(start["checkpoint_ts"]), int(end["checkpoint_ts"])
        if high <= low:
            return []
        return _plan(self.src, low, high)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        yield from _read(self.src, partition)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to trim: the storage tree belongs to the producer."""


class TicdcDataSource(DataSource):
    """``format("ticdc")``; see the module docstring for options and the schema."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return TicdcReader(_Source(dict(self.options)))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return TicdcStreamReader(_Source(dict(self.options)))
