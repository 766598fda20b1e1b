"""Read a storage-sink tree (ours or real TiCDC's): the core shared by ``format("ticdc")`` and the consumer.

:func:`scan` reads ``metadata`` FIRST and lists the tree AFTER, so every row with commit-ts <= the
checkpoint it returns is in a listed file (the producer writes data before advancing ``metadata``). It
verifies what a consumer must be able to trust, each failure a CorruptDataError naming the path:

* every schema file parses, its TableVersion equals the one in its name and its content hashes to the
  checksum in its name (``spec/storage-layout.md`` §7.4);
* every data-file version directory has the schema file of that exact version (TiCDC's writer guarantees it);
* no foreign file sits in the tree (unless ``ignore_foreign_files``). Temporary files of an in-progress
  local write (``*.tmp.<uuid>``), ``metadata`` and ``meta/CDC.index`` are expected and skipped.

Data files are grouped into *streams* ``(schema, table, partition)`` (partition 0 when the tree has no
partition directories) and ordered by ``(table_version, date, index)``: TiCDC's per-key order, where the index
restarts in every date directory and dates sort as strings. Both index widths (6..20 digits and wider) parse.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.consumer.table_def import table_info
from sparkcdc.errors import ConfigError, CorruptDataError, DecodeError
from sparkcdc.model import RowChange, TableInfo
from sparkcdc.storage.external import ExternalStorage, is_temporary
from sparkcdc.storage.layout import (
    DataFilePath,
    IndexFilePath,
    MetadataPath,
    SchemaFilePath,
    parse_path,
)
from sparkcdc.storage.metadata import read_checkpoint
from sparkcdc.storage.schema_file import TableDefinition

log = logging.getLogger(__name__)

PROTOCOL_EXTENSIONS = {"csv": ".csv", "canal-json": ".json"}
DATE_SEPARATORS = ("auto", "none", "year", "month", "day")
_YEAR = re.compile(r"^(19[7-9]\d|2\d{3})$")

StreamKey = tuple[str, str, int]


@dataclass(frozen=True)
class ReaderConfig:
    """How to read a tree. ``decoder_options`` go to ``codec.base.file_decoder(protocol, …)``.

    ``date_separator="auto"`` recognises ``YYYY-MM-DD`` and ``YYYY-MM`` directories, and a 4-digit directory
    between 1970 and 2999 as a year (otherwise as a partition id); name the separator to remove the guess.
    """

    protocol: str
    date_separator: str = "auto"
    decoder_options: tuple[tuple[str, Any], ...] = ()
    ignore_foreign_files: bool = False

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOL_EXTENSIONS:
            raise ConfigError(
                f"unsupported protocol {self.protocol!r} for a storage consumer; use one of: csv, canal-json"
            )
        if self.date_separator not in DATE_SEPARATORS:
            raise ConfigError(
                f"invalid date-separator {self.date_separator!r}; use one of: {', '.join(DATE_SEPARATORS)}"
            )

    @property
    def extension(self) -> str:
        return PROTOCOL_EXTENSIONS[self.protocol]

    @classmethod
    def from_sink(
        cls, cfg: Any, *, date_separator: str | None = None, ignore_foreign_files: bool = False
    ) -> ReaderConfig:
        """From a ``storage.sink_config.StorageSinkConfig`` (the producer's URI + changefeed TOML).

        canal-json is always decoded with the TiDB extension on (the commit-ts lives in ``_tidb``), as TiCDC's
        consumer does.
        """
        options: dict[str, Any] = {"terminator": cfg.terminator}
        if cfg.protocol == "csv":
            options.update({k: v for k, v in dict(cfg.csv).items()})
        else:
            options["enable-tidb-extension"] = True
            options["content-compatible"] = cfg.content_compatible
            options["only-output-updated-columns"] = cfg.only_output_updated_columns
        sep = date_separator if date_separator is not None else cfg.date_separator
        if sep not in DATE_SEPARATORS:
            sep = "none"  # TiCDC: a separator that is not exactly lower-case gives no date directory
        return cls(cfg.protocol, sep, tuple(sorted(options.items())), ignore_foreign_files)


@dataclass(frozen=True, slots=True)
class SchemaEntry:
    path: str
    definition: TableDefinition

    @property
    def version(self) -> int:
        return self.definition.table_version

    @property
    def has_ddl(self) -> bool:
        return bool(self.definition.query.strip())


@dataclass(frozen=True, slots=True, order=True)
class DataFile:
    """One data file; orders as TiCDC's consumer processes a stream."""

    table_version: int
    date: str
    index: int
    path: str = field(compare=False)
    schema: str = field(compare=False)
    table: str = field(compare=False)
    partition: int = field(compare=False)

    @property
    def stream(self) -> StreamKey:
        return (self.schema, self.table, self.partition)

    @property
    def sort_key(self) -> tuple[int, str, int]:
        return (self.table_version, self.date, self.index)


@dataclass
class Snapshot:
    """What one scan saw. ``checkpoint_ts`` is None when the tree has no ``metadata`` yet; ``empty`` when it holds no
    file at all (a local path that does not exist or an empty prefix: the tree is not there, or not yet)."""

    checkpoint_ts: int | None
    schemas: dict[tuple[str, str], dict[int, SchemaEntry]]
    streams: dict[StreamKey, list[DataFile]]
    empty: bool = False

    def schema_for(self, schema: str, table: str, version: int) -> SchemaEntry:
        try:
            return self.schemas[(schema, table)][version]
        except KeyError:
            raise CorruptDataError(
                f"{schema}/{table}/{version}: version directory without schema file "
                f"{schema}/{table}/meta/schema_{version}_<checksum>.json; restore the schema file"
            ) from None

    def ddls(self) -> list[SchemaEntry]:
        """Every schema file with a DDL query, in version order (database-level ones included)."""
        out = [e for by_v in self.schemas.values() for e in by_v.values() if e.has_ddl]
        return sorted(out, key=lambda e: (e.version, e.definition.schema, e.definition.table))


def _parse(path: str, cfg: ReaderConfig) -> DataFilePath | SchemaFilePath | IndexFilePath | MetadataPath | None:
    if cfg.date_separator != "auto":
        return parse_path(path, date_separator=cfg.date_separator, extension=None)
    parts = path.split("/")
    dirs = parts[:-2] if parts[-1] == "CDC.index" else parts[:-1]
    sep = "none"
    if len(dirs) in (4, 5):
        last = dirs[-1]
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", last):
            sep = "day"
        elif re.fullmatch(r"\d{4}-\d{2}", last):
            sep = "month"
        elif len(dirs) == 5 or _YEAR.match(last):
            sep = "year"
    return parse_path(path, date_separator=sep, extension=None)


def scan(storage: ExternalStorage, cfg: ReaderConfig, schema_cache: dict[str, SchemaEntry] | None = None) -> Snapshot:
    """List and validate the tree (see the module docstring). ``schema_cache`` (path -> entry) avoids
    re-reading immutable schema files across scans.

    Raises CorruptDataError naming the offending path; StorageError when the storage fails.
    """
    checkpoint = read_checkpoint(storage)
    cache = schema_cache if schema_cache is not None else {}
    schemas: dict[tuple[str, str], dict[int, SchemaEntry]] = {}
    streams: dict[StreamKey, list[DataFile]] = {}
    foreign: list[str] = []
    listed = storage.list("")
    for path in listed:
        base = path.rsplit("/", 1)[-1]
        if is_temporary(base):
            continue
        parsed = _parse(path, cfg)
        if isinstance(parsed, MetadataPath | IndexFilePath):
            continue
        if isinstance(parsed, SchemaFilePath):
            entry = cache.get(path)
            if entry is None:
                entry = _read_schema(storage, path, parsed)
                cache[path] = entry
            by_version = schemas.setdefault((parsed.schema, parsed.table), {})
            other = by_version.get(parsed.table_version)
            if other is not None and other.path != path:
                raise CorruptDataError(
                    f"{path}: a second schema file for version {parsed.table_version} (also {other.path}); "
                    "delete the one the producer did not write"
                )
            by_version[parsed.table_version] = entry
            continue
        if isinstance(parsed, DataFilePath) and parsed.extension == cfg.extension:
            d = parsed.dir
            f = DataFile(d.table_version, d.date, parsed.index, path, d.schema, d.table, d.physical_table_id or 0)
            streams.setdefault(f.stream, []).append(f)
            continue
        foreign.append(path)
    if foreign and not cfg.ignore_foreign_files:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise CorruptDataError(
            f"{foreign[0]}: foreign file in the storage-sink tree{more} (not a {cfg.protocol} data file, schema "
            "file, index file or metadata); remove it or pass --ignore-foreign-files"
        )
    for files in streams.values():
        files.sort()
    snap = Snapshot(checkpoint, schemas, streams, empty=not listed)
    for (schema, table, _), files in streams.items():
        for version in sorted({f.table_version for f in files}):
            entry = snap.schema_for(schema, table, version)
            if entry.definition.is_database_level:
                raise CorruptDataError(f"{entry.path}: data files exist for a database-level schema file")
    return snap


def _read_schema(storage: ExternalStorage, path: str, parsed: SchemaFilePath) -> SchemaEntry:
    data = storage.read(path)
    if data is None:
        raise CorruptDataError(f"{path}: schema file disappeared while reading; retry")
    defn = TableDefinition.from_json(data, source=path)
    if defn.table_version != parsed.table_version:
        raise CorruptDataError(
            f"{path}: TableVersion {defn.table_version} in the file differs from {parsed.table_version} in its name; "
            "repair or delete it"
        )
    if (defn.schema, defn.table) != (parsed.schema, parsed.table):
        raise CorruptDataError(
            f"{path}: file names {defn.schema}.{defn.table} but lives under {parsed.schema}.{parsed.table}; "
            "repair or delete it"
        )
    actual = defn.checksum()
    if actual != parsed.checksum:
        raise CorruptDataError(
            f"{path}: checksum mismatch: content hashes to {actual:010d}, name says {parsed.checksum:010d}; "
            "repair or delete it"
        )
    return SchemaEntry(path, defn)


class FileReader:
    """Reads and decodes data files; keeps one decoder and TableInfo per table version. Picklable."""

    def __init__(self, storage: ExternalStorage, cfg: ReaderConfig) -> None:
        self.storage = storage
        self.cfg = cfg
        self._decoder: Any = None
        self._tables: dict[str, TableInfo] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"storage": self.storage, "cfg": self.cfg}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__init__(state["storage"], state["cfg"])  # type: ignore[misc]

    def table_info(self, entry: SchemaEntry) -> TableInfo:
        info = self._tables.get(entry.path)
        if info is None:
            info = table_info(entry.definition, source=entry.path)
            self._tables[entry.path] = info
        return info

    def decode(self, file: DataFile, entry: SchemaEntry) -> list[RowChange]:
        """All rows of one data file, in file order. Raises CorruptDataError naming the path."""
        if self._decoder is None:
            from sparkcdc.codec.base import file_decoder

            self._decoder = file_decoder(self.cfg.protocol, dict(self.cfg.decoder_options))
        data = self.storage.read(file.path)
        if data is None:
            raise CorruptDataError(f"{file.path}: data file disappeared after listing; was it deleted?")
        if not data:
            raise CorruptDataError(f"{file.path}: data file is empty (TiCDC never writes empty files)")
        try:
            return list(self._decoder.decode_file(data, self.table_info(entry), source=file.path))
        except DecodeError:
            raise
        except CorruptDataError:
            raise
        except (ValueError, KeyError, IndexError, TypeError, UnicodeDecodeError) as e:
            raise CorruptDataError(f"{file.path}: cannot decode: {e}; repair or delete the file") from None
