"""The redo log file format (pure: records to bytes and back).

A file is ``MAGIC`` (8 bytes), one flags byte (bit 0: ``compression = "lz4"``: then the ``u64`` length of the
frames and one LZ4 frame of them, pyarrow's codec) and then frames, each ``u32 length | u32 crc32 | kind | body``
(little-endian; the CRC covers kind and body). The records follow each other in commit order:

``TABLE`` (1)  ``u32 ref`` + a table definition as JSON (``model.table_json``), before the first rows that use it
``ROWS`` (2)   ``commit_ts u64, seq u32, ref u32, physical_table_id i64, nrows u32`` + the MySQL sink's payload of
               one table's rows of one transaction, as its writers receive it (``sparkcdc.sink.row_payload``)
``DDL`` (3)    JSON ``{"ts", "seq", "action", "query", "schema", "table"}``
``END`` (9)    ``u32`` number of records before it: a file without it was cut short

So a torn, truncated or altered file is told from a good one (:class:`~sparkcdc.errors.CorruptDataError` naming the
file and byte offset), whatever the storage does. TiCDC's redo files hold msgpack-encoded events in 8-byte aligned
length-prefixed records; this format is ours (the README says where they differ).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from sparkcdc.errors import CorruptDataError
from sparkcdc.model.table import TableInfo
from sparkcdc.model.table_json import table_from_json, table_to_json

MAGIC: Final = b"SPKREDO1"
_LZ4: Final = 0x01
_FRAME = struct.Struct("<IIB")  # length (kind + body), crc32 (kind + body), kind
_ROWS = struct.Struct("<QIIqI")
_REF = struct.Struct("<I")
_SIZE = struct.Struct("<Q")
TABLE, ROWS, DDL, END = 1, 2, 3, 9


@dataclass(frozen=True, slots=True)
class RowsRecord:
    """One table's rows of one transaction: ``payload`` is the MySQL sink's encoding of them."""

    commit_ts: int
    seq: int
    table: TableInfo
    physical_table_id: int
    nrows: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class DdlRecord:
    commit_ts: int
    seq: int
    schema: str
    table: str
    query: str
    action: int


Record = RowsRecord | DdlRecord


class LogEncoder:
    """Builds one file: add records in commit order, then :meth:`finish`. ``size`` is the bytes so far (before
    compression), for rotating at ``max-log-size``."""

    def __init__(self, *, lz4: bool = False) -> None:
        self.lz4 = lz4
        self._frames: list[bytes] = []
        self._refs: dict[tuple[str, str, int], int] = {}
        self._records = 0
        self.size = 0

    @property
    def records(self) -> int:
        return self._records

    def _frame(self, kind: int, body: bytes) -> None:
        head = bytes((kind,))
        self._frames.append(_FRAME.pack(len(body) + 1, zlib.crc32(body, zlib.crc32(head)), kind) + body)
        self.size += _FRAME.size + len(body)

    def add_rows(self, commit_ts: int, seq: int, table: TableInfo, physical_table_id: int, nrows: int,
                 payload: bytes) -> None:  # fmt: skip
        key = (table.schema, table.table, table.version)
        ref = self._refs.get(key)
        if ref is None:
            ref = self._refs[key] = len(self._refs)
            self._frame(TABLE, _REF.pack(ref) + table_to_json(table).encode())
        self._frame(ROWS, _ROWS.pack(commit_ts, seq, ref, physical_table_id, nrows) + payload)
        self._records += 1

    def add_ddl(self, commit_ts: int, seq: int, schema: str, table: str, query: str, action: int) -> None:
        doc = {"ts": commit_ts, "seq": seq, "action": action, "query": query, "schema": schema, "table": table}
        self._frame(DDL, json.dumps(doc, ensure_ascii=True, separators=(",", ":")).encode())
        self._records += 1

    def finish(self) -> bytes:
        self._frame(END, _REF.pack(self._records))
        body = b"".join(self._frames)
        if self.lz4:
            packed: bytes = _lz4().compress(body, asbytes=True)
            return MAGIC + bytes((_LZ4,)) + _SIZE.pack(len(body)) + packed
        return MAGIC + b"\x00" + body


def decode(data: bytes, name: str) -> Iterator[Record]:
    """The records of file ``name`` (for errors), in order. Raises CorruptDataError at the first thing wrong; the
    records before it have been yielded, so read a file whole (``list``) before using any of it."""
    if len(data) < len(MAGIC) + 1 or not data.startswith(MAGIC):
        raise CorruptDataError(f"redo log {name}: not a redo log file (its first bytes are not {MAGIC.decode()}); "
                               "it was cut short or is another file")  # fmt: skip
    flags = data[len(MAGIC)]
    body = memoryview(data)[len(MAGIC) + 1 :]
    if flags & ~_LZ4:
        raise CorruptDataError(f"redo log {name}: unknown flags {flags:#04x}: written by a newer version?")
    if flags & _LZ4:
        size = _SIZE.unpack_from(body)[0] if len(body) >= _SIZE.size else -1
        try:
            raw: bytes = _lz4().decompress(body[_SIZE.size :], size, asbytes=True) if size >= 0 else b""
        except (OSError, ValueError) as e:
            raise CorruptDataError(f"redo log {name}: its LZ4 data is damaged or cut short ({e})") from None
        if len(raw) != size:
            raise CorruptDataError(f"redo log {name}: its LZ4 data is cut short ({len(raw)} of {size} bytes)")
        body = memoryview(raw)
    tables: dict[int, TableInfo] = {}
    pos, records = 0, 0
    while pos < len(body):
        where = f"redo log {name} at byte {pos}{' of the LZ4 data' if flags & _LZ4 else ''}"
        if len(body) - pos < _FRAME.size:
            raise CorruptDataError(f"{where}: cut short (a record header needs {_FRAME.size} bytes)")
        length, crc, kind = _FRAME.unpack_from(body, pos)
        end = pos + _FRAME.size - 1 + length
        if length < 1 or end > len(body):
            raise CorruptDataError(f"{where}: cut short (a record of {length} bytes, {len(body) - pos} left)")
        chunk = body[pos + _FRAME.size - 1 : end]
        if zlib.crc32(chunk) != crc:
            raise CorruptDataError(f"{where}: checksum mismatch: the record was altered")
        raw = bytes(chunk[1:])
        pos = end
        if kind == END:
            if len(raw) != _REF.size or _REF.unpack(raw)[0] != records:
                raise CorruptDataError(f"{where}: its end record does not count the {records} records before it")
            if pos != len(body):
                raise CorruptDataError(f"{where}: bytes after its end record")
            return
        if kind == TABLE and len(raw) >= _REF.size:
            tables[_REF.unpack_from(raw)[0]] = table_from_json(raw[_REF.size :], where)
        elif kind == ROWS and len(raw) >= _ROWS.size:
            ts, seq, ref, pid, nrows = _ROWS.unpack_from(raw)
            table = tables.get(ref)
            if table is None:
                raise CorruptDataError(f"{where}: rows of table #{ref}, which the file does not define before")
            records += 1
            yield RowsRecord(ts, seq, table, pid, nrows, raw[_ROWS.size :])
        elif kind == DDL:
            records += 1
            yield _ddl(raw, where)
        else:
            raise CorruptDataError(f"{where}: unknown record kind {kind}")
    raise CorruptDataError(f"redo log {name}: cut short: no end record after {records} records")


def _lz4() -> Any:
    """pyarrow's LZ4 frame codec (pyarrow is there anyway: PySpark's Arrow batches)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    return pa.Codec("lz4")


def _ddl(raw: bytes, where: str) -> DdlRecord:
    try:
        d = json.loads(raw)
        return DdlRecord(int(d["ts"]), int(d["seq"]), str(d["schema"]), str(d["table"]), str(d["query"]),
                         int(d["action"]))  # fmt: skip
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptDataError(f"{where}: malformed DDL record: {e}") from None
