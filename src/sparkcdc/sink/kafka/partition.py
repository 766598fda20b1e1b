"""TiCDC's partition dispatchers: which partition of its topic a row goes to.

A row must land on the partition TiCDC would pick, so a consumer that relies on per-key ordering sees the
same layout from us as from TiCDC. Every hashing dispatcher uses TiCDC's ``PositionInertia``: each
``write(a, b, …)`` is one CRC-32 (IEEE) over the concatenated bytes, and the hash is the XOR of all writes
(so column order does not matter), starting from 0. The partition is ``hash % partition_num``.

* ``default`` and ``table``: one write of ``schema, table``.
* ``ts``: ``commit_ts % partition_num``, no hash.
* ``index-value`` (alias ``rowid``, deprecated in TiCDC): ``schema, table``, then ``name, value`` for every
  handle-key column, or for every column of the index named by ``index``.
* ``columns``: ``schema, table``, then ``name, value`` for every listed column (matched case-insensitively,
  hashed under the table's own spelling).

The value bytes are TiCDC's ``ColumnValueString`` of the mounter's Go value (see :func:`value_bytes`). A NULL
value is hashed as the text ``null`` (tiflow; the new-architecture pingcap/ticdc skips NULL columns instead,
which only matters for a nullable column named by ``index`` or ``columns``). Virtual generated columns are never
hashed. Any other rule name falls back to ``default`` with a warning, as TiCDC does (there is no ``pk``
rule).

The string key returned beside the partition is TiCDC's partition key (``schema.table``, the commit ts, or the
hash in decimal); TiCDC uses it only for Pulsar. Kafka messages of canal-json and simple carry no key.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, Protocol

from sparkcdc.codec.canal_json.values import f32_text, f64_text
from sparkcdc.errors import ConfigError
from sparkcdc.model import ColumnInfo, RowChange, TableInfo

log = logging.getLogger(__name__)

ERR_DISPATCHER = "CDC:ErrDispatcherFailed"
NULL_TEXT: Final = b"null"
_PLAN_CACHE_LIMIT: Final = 4096


@dataclass(frozen=True, slots=True)
class Partition:
    """Where a row goes: ``index`` in ``[0, partition_num)`` and TiCDC's partition ``key``."""

    index: int
    key: str


class PartitionGenerator(Protocol):
    """One dispatcher rule's way of choosing a partition (TiCDC's ``partition.Generator``)."""

    rule: str

    def partition(self, row: RowChange, partition_num: int) -> Partition: ...


def position_inertia(groups: Sequence[Sequence[bytes]]) -> int:
    """TiCDC's ``PositionInertia``: XOR over groups of the CRC-32 of each group's concatenated bytes."""
    value = 0
    for group in groups:
        crc = 0
        for part in group:
            crc = zlib.crc32(part, crc)
        value ^= crc
    return value


def _text_bytes(text: str) -> bytes:
    # Lone surrogates are bytes the capture decoded with surrogateescape: hash the original bytes, as Go does.
    return text.encode("utf-8", "surrogateescape")


def value_bytes(value: Any, column: ColumnInfo) -> bytes:
    """The bytes TiCDC hashes for a column value: ``model.ColumnValueString`` of the mounter's Go value.

    Integers (signed, UNSIGNED, BIT, ENUM index, SET bitmask, YEAR) are decimal; booleans ``1``/``0``;
    FLOAT and DOUBLE are Go's shortest ``'f'`` format of the float32/float64 (``90.5``, never an exponent);
    DECIMAL is its fixed-point text with the column's scale (``-12.50``); temporal, JSON and VECTOR values are
    their text; CHAR/VARCHAR/TEXT are the UTF-8 bytes and binary types the raw bytes; NULL is ``null``.
    """
    if value is None:
        return NULL_TEXT
    if value.__class__ is bool:
        return b"1" if value else b"0"
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, float):
        return (f32_text(value) if column.type == "float" else f64_text(float(value))).encode()
    if isinstance(value, Decimal):
        return format(value, "f").encode()
    if isinstance(value, str):
        return _text_bytes(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return _text_bytes(str(value))


def _table_key(table: TableInfo) -> tuple[bytes, bytes]:
    return _text_bytes(table.schema), _text_bytes(table.table)


def _check_partitions(partition_num: int) -> None:
    if partition_num <= 0:
        raise ConfigError(
            f"invalid partition number {partition_num}; a topic has at least 1 partition",
            code="CDC:ErrKafkaInvalidPartitionNum",
        )


class TablePartition:
    """``default`` / ``table``: all rows of a table go to one partition."""

    def __init__(self, rule: str = "table") -> None:
        self.rule = rule

    def partition(self, row: RowChange, partition_num: int) -> Partition:
        _check_partitions(partition_num)
        table = row.table
        index = position_inertia((_table_key(table),)) % partition_num
        return Partition(index, f"{table.schema}.{table.table}")


class TsPartition:
    """``ts``: rows spread by commit ts (a transaction stays on one partition)."""

    rule = "ts"

    def partition(self, row: RowChange, partition_num: int) -> Partition:
        _check_partitions(partition_num)
        return Partition(row.commit_ts % partition_num, str(row.commit_ts))


class _HashingPartition:
    """Shared shape of ``index-value`` and ``columns``: per table, the positions and names hashed."""

    rule = ""

    def __init__(self) -> None:
        self._plans: dict[int, tuple[TableInfo, tuple[tuple[int, bytes], ...]]] = {}

    def _plan(self, table: TableInfo) -> tuple[tuple[int, bytes], ...]:
        cached = self._plans.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1]
        plan = tuple((pos, _text_bytes(name)) for pos, name in self.columns_of(table))
        if len(self._plans) >= _PLAN_CACHE_LIMIT:
            self._plans.clear()
        self._plans[id(table)] = (table, plan)
        return plan

    def columns_of(self, table: TableInfo) -> list[tuple[int, str]]:
        """(position, name to hash) of the columns this rule hashes; raises ConfigError (dispatcher failed)."""
        raise NotImplementedError

    def partition(self, row: RowChange, partition_num: int) -> Partition:
        _check_partitions(partition_num)
        table = row.table
        image = row.values
        groups: list[tuple[bytes, ...]] = [_table_key(table)]
        columns = table.columns
        for pos, name in self._plan(table):
            groups.append((name, value_bytes(image[pos], columns[pos])))
        value = position_inertia(groups)
        return Partition(value % partition_num, str(value))

    def __getstate__(self) -> dict[str, Any]:
        # Plans are keyed by object ids, which mean nothing in another process.
        state = dict(self.__dict__)
        state["_plans"] = {}
        return state


class IndexValuePartition(_HashingPartition):
    """``index-value``: the handle key's values, or those of the named (unique) index."""

    def __init__(self, index: str = "", rule: str = "index-value") -> None:
        super().__init__()
        self.index = index
        self.rule = rule

    def columns_of(self, table: TableInfo) -> list[tuple[int, str]]:
        if not self.index:
            return [(i, c.name) for i, c in enumerate(table.columns) if c.handle_key and not c.is_virtual]
        wanted = self.index.lower()
        for idx in table.indexes:
            if idx.name.lower() == wanted:
                out = []
                for name in idx.columns:
                    pos = _position(table, name)
                    if pos is None:
                        raise ConfigError(
                            f"index {idx.name!r} of table {table.qualified_name} names column {name!r}, which the "
                            "table does not have; the table definition is inconsistent",
                            code=ERR_DISPATCHER,
                        )
                    if not table.columns[pos].is_virtual:
                        out.append((pos, table.columns[pos].name))
                return out
        raise ConfigError(
            f"index not found when dispatch event, table: {table.qualified_name}, index: {self.index}; "
            'fix the dispatcher\'s index or use partition = "index-value" without index',
            code=ERR_DISPATCHER,
        )


class ColumnsPartition(_HashingPartition):
    """``columns``: the values of the listed columns."""

    rule = "columns"

    def __init__(self, columns: Sequence[str]) -> None:
        super().__init__()
        self.columns = tuple(columns)

    def columns_of(self, table: TableInfo) -> list[tuple[int, str]]:
        out = []
        for name in self.columns:
            pos = _position(table, name)
            if pos is None:
                raise ConfigError(
                    f"columns not found when dispatch event, table: {table.qualified_name}, "
                    f"columns: {list(self.columns)}, column: {name.lower()}; fix the dispatcher's columns",
                    code=ERR_DISPATCHER,
                )
            column = table.columns[pos]
            if column.is_virtual:
                raise ConfigError(
                    f"found virtual generated columns when dispatch event, table: {table.qualified_name}, "
                    f"columns: {list(self.columns)}, column: {name.lower()}; dispatch on stored columns",
                    code=ERR_DISPATCHER,
                )
            out.append((pos, column.name))
        return out


def _position(table: TableInfo, name: str) -> int | None:
    try:
        return table.column_position(name)
    except KeyError:
        return None


def partition_generator(rule: str, index: str = "", columns: Sequence[str] = ()) -> PartitionGenerator:
    """The generator for a dispatcher's ``partition`` rule (case-insensitive, TiCDC's names).

    An unknown rule logs a warning and dispatches as ``default``, as TiCDC does for Kafka.
    """
    name = rule.lower()
    if name in ("default", "table"):
        return TablePartition(name)
    if name == "ts":
        return TsPartition()
    if name == "index-value":
        return IndexValuePartition(index)
    if name == "rowid":
        log.warning("partition rule 'rowid' is deprecated; using 'index-value'")
        return IndexValuePartition(index, rule="rowid")
    if name == "columns":
        return ColumnsPartition(columns)
    log.warning("partition rule %r is not default, table, ts, index-value or columns; using default (by table)", rule)
    return TablePartition("default")
