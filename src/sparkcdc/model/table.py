"""Table definitions as TiCDC sees them: columns, indexes, partitions and the table version.

Frozen dataclasses of primitives: they are shared by every event of a table, pickle to Spark executors,
and compare by value so a schema tracker can tell whether a DDL changed anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property

from sparkcdc.errors import ConfigError
from sparkcdc.model.column_type import (
    ALL_TYPES,
    BLOB_TYPES,
    DEFAULT_FLEN_DECIMAL,
    FLOAT_TYPES,
    TEMPORAL_TYPES,
    TEXT_TYPES,
    UNSIGNED_INT_FLEN,
)


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    """One column.

    ``type`` is the lower-case TiDB type name with the charset already applied (``varbinary``, not
    ``varchar`` with charset binary). ``length``/``decimal`` are TiDB's flen/decimal, ``None`` when the
    DDL did not give one. ``generated`` is ``"virtual"``, ``"stored"`` or ``None``. ``default`` is the
    default as the upstream stores it (a string such as ``"100"`` or ``"CURRENT_TIMESTAMP"``), ``None``
    when there is no default.
    """

    name: str
    type: str
    unsigned: bool = False
    zerofill: bool = False
    nullable: bool = True
    primary_key: bool = False
    unique_key: bool = False
    multiple_key: bool = False
    handle_key: bool = False
    generated: str | None = None
    charset: str | None = None
    collation: str | None = None
    length: int | None = None
    decimal: int | None = None
    elements: tuple[str, ...] = ()
    default: str | bytes | None = None
    column_id: int = 0

    def __post_init__(self) -> None:
        if self.type not in ALL_TYPES:
            raise ConfigError(f"column {self.name!r}: unknown MySQL type {self.type!r}")
        if self.generated not in (None, "virtual", "stored"):
            raise ConfigError(f"column {self.name!r}: generated must be virtual, stored or None")

    @property
    def is_binary(self) -> bool:
        """Values are ``bytes`` (charset ``binary``)."""
        return self.type in BLOB_TYPES or self.type == "geometry"

    @property
    def is_virtual(self) -> bool:
        return self.generated == "virtual"

    @property
    def effective_charset(self) -> str:
        """TiDB's charset: ``binary`` for numeric, temporal and binary types."""
        if self.type in TEXT_TYPES or self.type in ("enum", "set", "json"):
            return self.charset or "utf8mb4"
        return "binary"

    @property
    def effective_collation(self) -> str:
        if self.effective_charset == "binary":
            return "binary"
        return self.collation or "utf8mb4_bin"

    @property
    def flen(self) -> int:
        """TiDB flen with TiDB's defaults for an unspecified length."""
        if self.length is not None:
            return self.length
        if self.unsigned and self.type in UNSIGNED_INT_FLEN:
            return UNSIGNED_INT_FLEN[self.type]
        return DEFAULT_FLEN_DECIMAL.get(self.type, (-1, 0))[0]

    @property
    def flen_decimal(self) -> int:
        """TiDB decimal (scale or fsp) with TiDB's defaults for an unspecified one."""
        if self.decimal is not None:
            return self.decimal
        return DEFAULT_FLEN_DECIMAL.get(self.type, (-1, 0))[1]

    @property
    def fsp(self) -> int:
        """Fractional-second precision of temporal types (0 when not temporal)."""
        if self.type in TEMPORAL_TYPES and self.type not in ("date", "year"):
            return max(self.decimal or 0, 0)
        return 0

    @property
    def float_bits(self) -> int:
        """32 for FLOAT, 64 for DOUBLE; 0 for other types."""
        if self.type not in FLOAT_TYPES:
            return 0
        return 32 if self.type == "float" else 64


@dataclass(frozen=True, slots=True)
class IndexInfo:
    name: str
    columns: tuple[str, ...]
    primary: bool = False
    unique: bool = False


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition is a physical table with its own id (TiCDC's physical table id)."""

    id: int
    name: str


@dataclass(frozen=True)
class TableInfo:
    """A table at one version.

    ``version`` is the commit-ts of the DDL that produced this definition (TiCDC's ``TableInfo.Version``,
    also the simple protocol's ``schemaVersion``). ``table_id`` is the logical table id; partitions carry
    their own physical ids.
    """

    schema: str
    table: str
    table_id: int
    columns: tuple[ColumnInfo, ...]
    indexes: tuple[IndexInfo, ...] = ()
    version: int = 0
    partitions: tuple[PartitionInfo, ...] = ()
    charset: str = "utf8mb4"
    collation: str = "utf8mb4_general_ci"
    _index_by_name: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = {}
        for i, c in enumerate(self.columns):
            key = c.name.lower()
            if key in names:
                raise ConfigError(f"table {self.schema}.{self.table}: duplicate column {c.name!r}")
            names[key] = i
        object.__setattr__(self, "_index_by_name", names)

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partitions)

    def column_position(self, name: str) -> int:
        """Position of a column (case-insensitive, as MySQL); raises KeyError when absent."""
        return self._index_by_name[name.lower()]

    def column(self, name: str) -> ColumnInfo:
        return self.columns[self.column_position(name)]

    def iter_columns(self, include_virtual: bool = True) -> Iterator[tuple[int, ColumnInfo]]:
        for i, c in enumerate(self.columns):
            if include_virtual or not c.is_virtual:
                yield i, c

    @cached_property
    def handle_key_positions(self) -> tuple[int, ...]:
        """Positions of the handle-key columns (PK, else the first NOT NULL unique key)."""
        return tuple(i for i, c in enumerate(self.columns) if c.handle_key)

    @property
    def primary_key_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.primary_key)

    @property
    def is_eligible(self) -> bool:
        """TiCDC replicates only tables with a PK or a NOT NULL unique key (unless force-replicate)."""
        return bool(self.handle_key_positions)

    def with_version(self, version: int) -> TableInfo:
        return replace(self, version=version)


def with_handle_keys(columns: tuple[ColumnInfo, ...], indexes: tuple[IndexInfo, ...]) -> tuple[ColumnInfo, ...]:
    """Mark key flags as TiDB does: PK columns are the handle; without a PK, the first unique index whose
    columns are all NOT NULL is. Every column of a unique index gets ``unique_key``."""
    by_name = {c.name.lower(): c for c in columns}
    handle: tuple[str, ...] = ()
    for idx in indexes:
        if idx.primary:
            handle = tuple(n.lower() for n in idx.columns)
            break
    if not handle:
        for idx in indexes:
            if idx.unique and all(n.lower() in by_name and not by_name[n.lower()].nullable for n in idx.columns):
                handle = tuple(n.lower() for n in idx.columns)
                break
    unique_cols = {n.lower() for idx in indexes if idx.unique or idx.primary for n in idx.columns}
    multiple_cols = {idx.columns[0].lower() for idx in indexes if not idx.unique and not idx.primary and idx.columns}
    primary_cols = {n.lower() for idx in indexes if idx.primary for n in idx.columns}
    out = []
    for c in columns:
        key = c.name.lower()
        out.append(
            replace(
                c,
                primary_key=c.primary_key or key in primary_cols,
                nullable=c.nullable and key not in primary_cols,
                unique_key=key in unique_cols,
                multiple_key=key in multiple_cols,
                handle_key=key in handle,
            )
        )
    return tuple(out)
