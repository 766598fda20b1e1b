"""Pure path logic of TiCDC's storage-sink layout (``spec/storage-layout.md`` §1-§5, §7.4 names).

Every path is relative to the sink root and uses ``/``. Paths are value objects with ``format()`` and a
``parse()`` that accepts everything ``format()`` produces and ignores foreign files (:func:`parse_path`).

Name safety (our deviation from TiCDC, which uses names raw through Go's ``path.Join``): a schema or table
name becomes one path segment through :func:`encode_name`, a percent-encoding of only the characters that
could escape the root or change the directory structure:

* ``/``, ``\\`` and NUL become ``%2F``, ``%5C``, ``%00``;
* a name that is exactly ``.`` or ``..`` becomes ``%2E`` / ``%2E%2E``;
* ``%`` becomes ``%25`` only when followed by two hex digits (so ``%XX`` is never ambiguous).

Every other name (letters, digits, ``_``, ``$``, spaces, UTF-8, a lone ``%``) is byte-identical to TiCDC's
path, and :func:`decode_name` reverses the encoding exactly. An empty name is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from sparkcdc.errors import ConfigError, CorruptDataError

METADATA_FILE = "metadata"
INDEX_FILE = "CDC.index"
META_DIR = "meta"
MIN_INDEX_DIGITS = 6
_UINT64_MAX = (1 << 64) - 1

_DATE_FORMATS = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}
_DATE_PATTERNS = {
    "year": re.compile(r"^\d{4}$"),
    "month": re.compile(r"^\d{4}-\d{2}$"),
    "day": re.compile(r"^\d{4}-\d{2}-\d{2}$"),
}
_PCT_BEFORE_HEX = re.compile(r"%(?=[0-9A-Fa-f]{2})")
_PCT_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_DIGITS = re.compile(r"^[0-9]+$")
_SCHEMA_FILE_RE = re.compile(r"meta/schema_\d+_\d{10}\.json$")
_DATE_IN_PATH = re.compile(r"\d{4}-\d{2}-\d{2}")
_SCHEMA_NAME = re.compile(r"^schema_([0-9]+)_([0-9]+)\.json$")


def encode_name(name: str) -> str:
    """One safe path segment for a schema or table name (see the module docstring).

    Raises ConfigError for an empty name.
    """
    if not name:
        raise ConfigError("schema and table names must not be empty in a storage path")
    if name == ".":
        return "%2E"
    if name == "..":
        return "%2E%2E"
    if not any(c in name for c in "/\\\x00%"):
        return name
    out = _PCT_BEFORE_HEX.sub("%25", name)
    return out.replace("/", "%2F").replace("\\", "%5C").replace("\x00", "%00")


def decode_name(segment: str) -> str:
    """Inverse of :func:`encode_name`."""
    if "%" not in segment:
        return segment
    return _PCT_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), segment)


def date_string(separator: str, when: datetime) -> str:
    """The date directory for a flush at ``when`` (formatted in ``when``'s own time zone; the writer passes
    local time, as TiCDC does). Only the exact lower-case ``year``/``month``/``day`` give a directory: TiCDC
    compares the raw configured string, so ``DAY`` yields ``""`` (§4)."""
    fmt = _DATE_FORMATS.get(separator)
    return when.strftime(fmt) if fmt else ""


def data_file_name(index: int, width: int, extension: str) -> str:
    """``CDC`` + zero-padded index + extension; an index wider than ``width`` is written in full (Go ``%0Nd``)."""
    return f"CDC{index:0{width}d}{extension}"


def parse_data_file_name(name: str, extension: str) -> int | None:
    """The index of a data file name, or None when it is not one (TiCDC's index-file validity rule:
    ``CDC`` prefix, the extension suffix, at least 6 digits, a uint64)."""
    if not name.startswith("CDC") or not name.endswith(extension) or len(name) < 3 + MIN_INDEX_DIGITS + len(extension):
        return None
    digits = name[3 : len(name) - len(extension)]
    if not _DIGITS.match(digits):
        return None
    value = int(digits)
    return value if value <= _UINT64_MAX else None


def index_file_content(data_file: str) -> bytes:
    """Content of ``meta/CDC.index`` naming a data file (base name + ``\\n``)."""
    return (data_file.rsplit("/", 1)[-1] + "\n").encode()


def parse_index_file(content: bytes, extension: str, *, source: str = INDEX_FILE) -> int:
    """The file index named by an index file's content.

    Raises CorruptDataError when the content is not a valid data file name (TiCDC fails the sink then too).
    """
    text = content.decode("utf-8", "replace")
    if text.endswith("\n"):
        text = text[:-1]
    index = parse_data_file_name(text, extension)
    if index is None:
        raise CorruptDataError(
            f"{source}: filename in storage sink is invalid: {text[:80]!r}; expected CDC<digits>{extension}"
        )
    return index


@dataclass(frozen=True, slots=True)
class TableDir:
    """The data directory of one versioned table (+ partition, + date).

    ``physical_table_id`` is None when the partition separator does not apply; ``date`` is ``""`` when the
    date separator is off.
    """

    schema: str
    table: str
    table_version: int
    physical_table_id: int | None = None
    date: str = ""

    def format(self) -> str:
        parts = [encode_name(self.schema), encode_name(self.table), str(self.table_version)]
        if self.physical_table_id is not None:
            parts.append(str(self.physical_table_id))
        if self.date:
            parts.append(self.date)
        return "/".join(parts)

    def data_file(self, index: int, width: int, extension: str) -> str:
        return f"{self.format()}/{data_file_name(index, width, extension)}"

    def index_file(self) -> str:
        return f"{self.format()}/{META_DIR}/{INDEX_FILE}"


@dataclass(frozen=True, slots=True)
class DataFilePath:
    dir: TableDir
    index: int
    extension: str

    def format(self, width: int) -> str:
        return self.dir.data_file(self.index, width, self.extension)


@dataclass(frozen=True, slots=True)
class IndexFilePath:
    dir: TableDir

    def format(self) -> str:
        return self.dir.index_file()


@dataclass(frozen=True, slots=True)
class SchemaFilePath:
    """``<schema>/meta/schema_<v>_<c>.json`` (``table == ""``) or ``<schema>/<table>/meta/…``."""

    schema: str
    table: str
    table_version: int
    checksum: int

    def format(self) -> str:
        base = encode_name(self.schema)
        if self.table:
            base += "/" + encode_name(self.table)
        return f"{base}/{META_DIR}/{schema_file_name(self.table_version, self.checksum)}"

    @classmethod
    def parse(cls, path: str) -> SchemaFilePath | None:
        """Parts of a schema-file path, or None when ``path`` is not one. The checksum may have any number of
        digits here (TiCDC's parser is lenient); :func:`is_schema_file` is the strict recogniser."""
        parts = path.split("/")
        if len(parts) not in (3, 4) or parts[-2] != META_DIR:
            return None
        m = _SCHEMA_NAME.match(parts[-1])
        if m is None or not all(parts[:-2]):
            return None
        table = decode_name(parts[1]) if len(parts) == 4 else ""
        return cls(decode_name(parts[0]), table, int(m.group(1)), int(m.group(2)))


@dataclass(frozen=True, slots=True)
class MetadataPath:
    def format(self) -> str:
        return METADATA_FILE


ParsedPath = DataFilePath | IndexFilePath | SchemaFilePath | MetadataPath


def schema_file_name(table_version: int, checksum: int) -> str:
    return f"schema_{table_version}_{checksum:010d}.json"


def schema_dir(schema: str, table: str = "") -> str:
    """The ``meta`` directory holding the schema files of a table (or of a database when ``table`` is empty)."""
    base = encode_name(schema)
    if table:
        base += "/" + encode_name(table)
    return f"{base}/{META_DIR}"


def is_schema_file(path: str) -> bool:
    """TiCDC's reader rule: ``meta/schema_\\d+_\\d{10}\\.json$``, unanchored at the start."""
    return _SCHEMA_FILE_RE.search(path) is not None


def parse_path(path: str, *, date_separator: str, extension: str | None = None) -> ParsedPath | None:
    """Turn a path relative to the sink root into its parts; None for anything that is not ours.

    ``date_separator`` is the sink's setting (it decides whether a 4-digit segment is a year or a partition);
    ``extension`` restricts data files to one protocol (None accepts ``.csv`` and ``.json``).
    """
    if path == METADATA_FILE:
        return MetadataPath()
    parts = path.split("/")
    if any(p == "" for p in parts):
        return None
    if parts[-1].startswith("schema_"):
        return SchemaFilePath.parse(path) if is_schema_file(path) else None
    is_index = parts[-1] == INDEX_FILE
    if is_index:
        if len(parts) < 2 or parts[-2] != META_DIR:
            return None
        dir_parts = parts[:-2]
    else:
        dir_parts = parts[:-1]
    table_dir = _parse_dir(dir_parts, date_separator)
    if table_dir is None:
        return None
    if is_index:
        return IndexFilePath(table_dir)
    for ext in (extension,) if extension is not None else (".csv", ".json"):
        index = parse_data_file_name(parts[-1], ext)
        if index is not None:
            return DataFilePath(table_dir, index, ext)
    return None


def _parse_dir(parts: list[str], date_separator: str) -> TableDir | None:
    date_pattern = _DATE_PATTERNS.get(date_separator)
    n_date = 1 if date_pattern is not None else 0
    extra = len(parts) - 3 - n_date
    if extra not in (0, 1) or not _DIGITS.match(parts[2]):
        return None
    date = ""
    if date_pattern is not None:
        date = parts[-1]
        if not date_pattern.match(date):
            return None
    pid: int | None = None
    if extra:
        if not _DIGITS.match(parts[3]):
            return None
        pid = int(parts[3])
    return TableDir(decode_name(parts[0]), decode_name(parts[1]), int(parts[2]), pid, date)


def expiry_date(checkpoint_local: datetime, days: int) -> str:
    """The cleanup threshold (§11): the checkpoint's local time minus ``days`` days, as ``YYYY-MM-DD``."""
    return (checkpoint_local - timedelta(days=days)).strftime("%Y-%m-%d")


def is_expired(path: str, expired: str) -> bool:
    """TiCDC's cleanup rule: the path contains a ``YYYY-MM-DD`` that sorts before ``expired``."""
    m = _DATE_IN_PATH.search(path)
    return m is not None and m.group(0) < expired
