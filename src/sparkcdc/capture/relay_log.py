"""The relay log: raw binlog events framed per transaction in segment files, plus a SQLite index.

Layout under ``<data_dir>/relay/``::

    000000000001.seg ...   frames: FRAME header + the transaction's raw events, exactly as received
    index.db               SQLite (WAL): txn(commit_ts -> segment, offset, length, binlog position, GTID),
                           progress (resolved ts, last TSO, resume position) and the schema history

Durability: a transaction's frame is written, the segment fsync'd, and only then its index row and the new
resolved ts are committed (SQLite ``synchronous=FULL``). On open for writing, bytes after the last indexed
frame of the newest segment (a crash mid-write) are truncated. A transaction is never held in memory: past
``SPILL_BYTES`` its events go straight to the segment and the header is patched at commit.

Readers ask ``RelayLog`` (the index's read API: progress, transactions, chunks, the next DDL, where a batch's bytes
pass a cap, which commit-ts a binlog position ends) on the driver, and ``read_chunk``/``iter_frames`` (no index) on
executors; nothing outside ``capture/`` reads the index's tables. A ``ChunkRef`` names a byte range of whole frames.
The append side is ``relay_writer``.
"""

from __future__ import annotations

import io
import logging
import os
import sqlite3
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sparkcdc.capture.binlog import HEADER_LEN
from sparkcdc.capture.position import file_seq
from sparkcdc.errors import CorruptDataError, StorageError

log = logging.getLogger(__name__)

MAGIC = b"SCTX"
FRAME = struct.Struct("<4sBBHQQI")  # magic, version, flags, reserved, payload length, commit ts, crc32(payload)
FRAME_LEN = FRAME.size
FLAG_CHECKSUM = 0x01  # every event ends with a 4-byte CRC32 (binlog_checksum=CRC32)
FLAG_DDL = 0x02  # the transaction holds a DDL query
SPILL_BYTES = 1 << 20
DEFAULT_SEGMENT_BYTES = 256 << 20

_SCHEMA = """
CREATE TABLE IF NOT EXISTS txn(
    commit_ts INTEGER PRIMARY KEY, segment INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL,
    binlog_file TEXT NOT NULL, binlog_pos INTEGER NOT NULL, gtid TEXT NOT NULL, gtid_state TEXT NOT NULL,
    is_ddl INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS txn_segment ON txn(segment);
CREATE TABLE IF NOT EXISTS reservation(
    binlog_file TEXT NOT NULL, binlog_pos INTEGER NOT NULL, tso INTEGER NOT NULL,
    PRIMARY KEY (binlog_file, binlog_pos));
CREATE TABLE IF NOT EXISTS progress(
    id INTEGER PRIMARY KEY CHECK (id = 1), resolved_ts INTEGER NOT NULL, last_tso INTEGER NOT NULL,
    binlog_file TEXT NOT NULL, binlog_pos INTEGER NOT NULL, gtid_state TEXT NOT NULL);
"""


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """A transaction-aligned byte range of one segment: picklable, primitives only."""

    path: str
    offset: int
    length: int
    first_ts: int
    last_ts: int
    txn_count: int


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """Index row of one transaction: where its frame is and where the upstream stood after it."""

    commit_ts: int
    segment: int
    offset: int
    length: int
    binlog_file: str
    binlog_pos: int
    gtid: str
    gtid_state: str
    is_ddl: bool


def _record(r: tuple[Any, ...]) -> TxnRecord:
    return TxnRecord(int(r[0]), int(r[1]), int(r[2]), int(r[3]), str(r[4]), int(r[5]), str(r[6]), str(r[7]), bool(r[8]))


@dataclass(frozen=True, slots=True)
class Progress:
    """The puller's durable state: everything <= resolved_ts is in the relay log; resume at the position."""

    resolved_ts: int
    last_tso: int
    binlog_file: str
    binlog_pos: int
    gtid_state: str


def segment_name(seq: int) -> str:
    return f"{seq:012d}.seg"


def connect_index(relay_dir: Path, readonly: bool = False) -> sqlite3.Connection:
    """Open index.db (created when writing). Raises StorageError when it is missing for a reader."""
    path = relay_dir / "index.db"
    if readonly and not path.exists():
        raise StorageError(f"{path}: relay log index not found; start the puller for this data dir first")
    try:
        conn = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        if not readonly:
            conn.executescript(_SCHEMA)
    except sqlite3.Error as e:
        raise StorageError(f"{path}: cannot open relay log index: {e}") from e
    return conn


class RelayLog:
    """Read side of a relay log under ``data_dir`` (the puller's data dir)."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.dir = Path(data_dir).resolve() / "relay"  # ChunkRef paths must not depend on the reader's cwd
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect_index(self.dir, readonly=True)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __getstate__(self) -> dict[str, Any]:
        return {"dir": self.dir, "_conn": None}

    def progress(self) -> Progress | None:
        row = self._db().execute(
            "SELECT resolved_ts, last_tso, binlog_file, binlog_pos, gtid_state FROM progress WHERE id = 1"
        ).fetchone()
        return Progress(*row) if row else None

    def resolved_ts(self) -> int:
        """Every transaction with commit-ts <= this is durable in the relay log (0 before the first flush)."""
        p = self.progress()
        return p.resolved_ts if p else 0

    def transactions(self, start_ts_exclusive: int = 0, end_ts_inclusive: int = 1 << 63) -> list[TxnRecord]:
        rows = self._db().execute(
            "SELECT commit_ts, segment, offset, length, binlog_file, binlog_pos, gtid, gtid_state, is_ddl FROM txn "
            "WHERE commit_ts > ? AND commit_ts <= ? ORDER BY commit_ts",
            (start_ts_exclusive, min(end_ts_inclusive, (1 << 63) - 1)),
        ).fetchall()
        return [_record(r) for r in rows]

    def next_ddl(self, after_ts: int, upto_ts: int) -> int | None:
        """The commit-ts of the first DDL transaction in ``(after_ts, upto_ts]``, None when there is none (a batch
        ends at it: the DDL barrier)."""
        row = self._db().execute(
            "SELECT MIN(commit_ts) FROM txn WHERE is_ddl = 1 AND commit_ts > ? AND commit_ts <= ?", (after_ts, upto_ts)
        ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def byte_capped_end(self, after_ts: int, upto_ts: int, max_bytes: int) -> int | None:
        """The commit-ts of the first transaction in ``(after_ts, upto_ts]`` at which the frames since ``after_ts``
        reach ``max_bytes``, None when they all stay below it (a batch ends there: bounded memory)."""
        row = self._db().execute(
            "SELECT commit_ts FROM (SELECT commit_ts, SUM(length) OVER (ORDER BY commit_ts) AS total FROM txn "
            "WHERE commit_ts > ? AND commit_ts <= ?) WHERE total >= ? ORDER BY commit_ts LIMIT 1",
            (after_ts, upto_ts, max_bytes),
        ).fetchone()
        return None if row is None else int(row[0])

    def last_commit_at(self, point: tuple[str, int], low: int) -> int | None:
        """The greatest commit-ts ``u`` such that every transaction at or before ``u`` (and after ``low``) ends at
        or before binlog position ``point`` (file, pos), None while the relay log has no transaction after ``point``.

        Binlog order is commit-ts order, so this is a binary search over commit-ts (the index's key)."""
        db = self._db()
        limit = (file_seq(point[0]), point[1])

        def after_point(row: Any) -> bool:
            return (file_seq(row[1]), int(row[2])) > limit

        last = db.execute("SELECT commit_ts, binlog_file, binlog_pos FROM txn ORDER BY commit_ts DESC LIMIT 1"
                          ).fetchone()  # fmt: skip
        if last is None or not after_point(last):
            return None
        if last[0] <= low:
            return low
        lo, hi = low, int(last[0])  # every txn in (low, lo] ends within the point; the txn at hi after it
        while hi - lo > 1:
            mid = (lo + hi) // 2
            row = db.execute("SELECT commit_ts, binlog_file, binlog_pos FROM txn WHERE commit_ts > ? AND "
                             "commit_ts <= ? ORDER BY commit_ts DESC LIMIT 1", (lo, mid)).fetchone()  # fmt: skip
            if row is not None and after_point(row):
                hi = int(row[0])
            else:
                lo = mid
        return hi - 1

    def schema_history(self) -> Any:
        """The schema history the index holds (a ``SchemaHistory``: every DDL of the transactions it holds)."""
        from sparkcdc.capture.schema_history import SchemaHistory

        return SchemaHistory.from_connection(self._db())

    def position_after(self, ts: int) -> TxnRecord | None:
        """The last transaction with commit-ts <= ts (its binlog position is where a restart at ts resumes)."""
        row = self._db().execute(
            "SELECT commit_ts, segment, offset, length, binlog_file, binlog_pos, gtid, gtid_state, is_ddl FROM txn "
            "WHERE commit_ts <= ? ORDER BY commit_ts DESC LIMIT 1",
            (ts,),
        ).fetchone()
        return _record(row) if row else None

    def chunks(self, start_ts_exclusive: int, end_ts_inclusive: int, target_bytes: int = 8 << 20) -> list[ChunkRef]:
        """Transaction-aligned chunks covering commit-ts in (start, end], in commit order. A chunk holds
        contiguous frames of one segment up to about ``target_bytes`` (a bigger transaction is one chunk).
        ``end`` is clamped to the resolved ts so a chunk never names bytes that are not durable."""
        end = min(end_ts_inclusive, self.resolved_ts())
        if end <= start_ts_exclusive:
            return []
        out: list[ChunkRef] = []
        cur: list[Any] | None = None  # [segment, offset, length, first, last, count]
        for rec in self.transactions(start_ts_exclusive, end):
            if (
                cur is not None
                and cur[0] == rec.segment
                and cur[1] + cur[2] == rec.offset
                and cur[2] + rec.length <= max(target_bytes, 1)
            ):
                cur[2] += rec.length
                cur[4] = rec.commit_ts
                cur[5] += 1
                continue
            if cur is not None:
                out.append(self._ref(cur))
            cur = [rec.segment, rec.offset, rec.length, rec.commit_ts, rec.commit_ts, 1]
        if cur is not None:
            out.append(self._ref(cur))
        return out

    def _ref(self, cur: list[Any]) -> ChunkRef:
        return ChunkRef(str(self.dir / segment_name(cur[0])), cur[1], cur[2], cur[3], cur[4], cur[5])

    def gc(self, min_checkpoint_ts: int) -> list[str]:
        """Delete segments whose transactions all have commit-ts < ``min_checkpoint_ts`` (never the newest
        segment, which the puller may be writing). Returns the deleted paths."""
        db = self._db()
        newest = db.execute("SELECT MAX(segment) FROM txn").fetchone()[0]
        if newest is None:
            return []
        rows = db.execute(
            "SELECT segment FROM txn GROUP BY segment HAVING MAX(commit_ts) < ? AND segment < ?",
            (min_checkpoint_ts, newest),
        ).fetchall()
        deleted = []
        for (seg,) in rows:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM txn WHERE segment = ?", (seg,))
            db.execute("COMMIT")
            path = self.dir / segment_name(seg)
            path.unlink(missing_ok=True)
            deleted.append(str(path))
            log.info("relay log gc removed %s (below checkpoint %d)", path, min_checkpoint_ts)
        return deleted


def read_chunk(ref: ChunkRef) -> bytes:
    """The raw bytes of a chunk (whole frames). Raises StorageError when the segment is gone or short."""
    try:
        with open(ref.path, "rb") as f:
            f.seek(ref.offset)
            data = f.read(ref.length)
    except OSError as e:
        raise StorageError(f"{ref.path}: cannot read relay chunk at {ref.offset}: {e}") from e
    if len(data) != ref.length:
        raise StorageError(f"{ref.path}: relay chunk at {ref.offset} truncated ({len(data)} of {ref.length} bytes)")
    return data


@dataclass(frozen=True, slots=True)
class Frame:
    commit_ts: int
    flags: int
    length: int
    crc: int


def open_chunk(source: ChunkRef | bytes) -> tuple[IO[bytes], int, str]:
    """A readable stream positioned at the chunk, its length and a name for errors."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(source)), len(source), "<chunk bytes>"
    try:
        f = open(source.path, "rb", buffering=1 << 20)  # noqa: SIM115 - closed by the caller
        f.seek(source.offset)
    except OSError as e:
        raise StorageError(f"{source.path}: cannot open relay chunk: {e}") from e
    return f, source.length, f"{source.path}@{source.offset}"


def iter_frames(stream: IO[bytes], length: int, name: str) -> Iterator[tuple[Frame, Iterator[bytes]]]:
    """Yield each frame with an iterator over its raw events (read lazily: bounded memory). The event
    iterator must be exhausted before the next frame is requested; the frame CRC is checked at its end."""
    consumed = 0
    while consumed < length:
        head = stream.read(FRAME_LEN)
        if len(head) != FRAME_LEN:
            raise CorruptDataError(f"{name}: frame header truncated at +{consumed}")
        magic, version, flags, _res, plen, ts, crc = FRAME.unpack(head)
        if magic != MAGIC or version != 1:
            raise CorruptDataError(f"{name}: bad frame magic at +{consumed}; the relay log is corrupt")
        frame = Frame(ts, flags, plen, crc)
        yield frame, _events(stream, plen, crc, f"{name}+{consumed}")
        consumed += FRAME_LEN + plen
    if consumed != length:
        raise CorruptDataError(f"{name}: chunk length does not end on a frame boundary")


def _events(stream: IO[bytes], plen: int, crc: int, name: str) -> Iterator[bytes]:
    left = plen
    running = 0
    while left > 0:
        head = stream.read(HEADER_LEN)
        if len(head) != HEADER_LEN:
            raise CorruptDataError(f"{name}: event header truncated")
        size = int.from_bytes(head[9:13], "little")
        if size < HEADER_LEN or size > left:
            raise CorruptDataError(f"{name}: event size {size} does not fit its frame")
        body = stream.read(size - HEADER_LEN)
        if len(body) != size - HEADER_LEN:
            raise CorruptDataError(f"{name}: event truncated")
        event = head + body
        running = zlib.crc32(event, running)
        left -= size
        yield event
    if running != crc:
        raise CorruptDataError(f"{name}: frame checksum mismatch; the relay log is corrupt")
