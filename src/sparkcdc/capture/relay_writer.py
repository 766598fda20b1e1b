"""The relay log's append side, owned by the puller: frames, fsync, then the index rows and the resolved ts.

Layout and durability rules: ``relay_log``. A transaction is never held in memory: past ``SPILL_BYTES`` its events
go straight to the segment and the frame header is patched at commit. ``rewind`` forgets everything after a ts
(recovery drills and restart-identity tests).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import zlib
from pathlib import Path
from typing import Any

from sparkcdc.capture.relay_log import (
    DEFAULT_SEGMENT_BYTES,
    FLAG_DDL,
    FRAME,
    FRAME_LEN,
    MAGIC,
    SPILL_BYTES,
    Progress,
    TxnRecord,
    connect_index,
    segment_name,
)
from sparkcdc.errors import StorageError

log = logging.getLogger(__name__)


class RelayLogWriter:
    """Append side, owned by one puller. Not thread-safe."""

    def __init__(self, data_dir: str | os.PathLike[str], segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> None:
        self.dir = Path(data_dir) / "relay"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.db = connect_index(self.dir)
        self._pending: list[TxnRecord] = []
        self._txn: bytearray | None = None
        self._txn_start = 0
        self._txn_len = 0
        self._txn_crc = 0
        self._spilled = False
        self._recover()

    # -- recovery ----------------------------------------------------------------------------------
    def _recover(self) -> None:
        row = self.db.execute("SELECT segment, offset + length FROM txn ORDER BY commit_ts DESC LIMIT 1").fetchone()
        segs = sorted(int(p.stem) for p in self.dir.glob("*.seg") if p.stem.isdigit())
        if row is None:
            self.segment = (segs[-1] + 1) if segs else 1
            end = 0
        else:
            self.segment, end = int(row[0]), int(row[1])
        for s in segs:
            if s > self.segment:
                (self.dir / segment_name(s)).unlink()
        path = self.dir / segment_name(self.segment)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        size = os.fstat(self.fd).st_size
        if size > end:
            log.warning("relay log %s: truncating %d bytes after the last durable transaction", path, size - end)
            os.ftruncate(self.fd, end)
            os.fsync(self.fd)
        self.offset = end

    def progress(self) -> Progress | None:
        row = self.db.execute(
            "SELECT resolved_ts, last_tso, binlog_file, binlog_pos, gtid_state FROM progress WHERE id = 1"
        ).fetchone()
        return Progress(*row) if row else None

    # -- transactions ------------------------------------------------------------------------------
    @property
    def in_txn(self) -> bool:
        return self._txn is not None

    def begin(self) -> None:
        if self.offset >= self.segment_bytes:
            self._rotate()
        self._txn = bytearray()
        self._txn_start = self.offset
        self._txn_len = 0
        self._txn_crc = 0
        self._spilled = False

    def append(self, event: bytes) -> None:
        assert self._txn is not None, "append outside a transaction"
        self._txn_crc = zlib.crc32(event, self._txn_crc)
        self._txn_len += len(event)
        if self._spilled:
            self._write(event)
            return
        self._txn += event
        if len(self._txn) >= SPILL_BYTES:
            # Huge transaction: placeholder header now, events straight to disk, header patched at commit.
            self._write(bytes(FRAME_LEN))
            self._write(bytes(self._txn))
            self._txn = bytearray()
            self._spilled = True

    def commit(self, commit_ts: int, flags: int, file: str, pos: int, gtid: str, gtid_state: str) -> None:
        """Finish the open transaction's frame; durable (and visible) after the next ``flush``."""
        assert self._txn is not None, "commit outside a transaction"
        header = FRAME.pack(MAGIC, 1, flags, 0, self._txn_len, commit_ts, self._txn_crc)
        if self._spilled:
            os.pwrite(self.fd, header, self._txn_start)
        else:
            self._write(header + bytes(self._txn))
        self._pending.append(
            TxnRecord(
                commit_ts,
                self.segment,
                self._txn_start,
                FRAME_LEN + self._txn_len,
                file,
                pos,
                gtid,
                gtid_state,
                bool(flags & FLAG_DDL),
            )
        )
        self._txn = None

    def abort(self) -> None:
        """Drop the open transaction (connection lost mid-transaction); it will be pulled again."""
        if self._txn is None:
            return
        if self._spilled:
            os.ftruncate(self.fd, self._txn_start)
        self.offset = self._txn_start
        self._txn = None

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.pwrite(self.fd, view, self.offset)
            self.offset += n
            view = view[n:]

    def _rotate(self) -> None:
        os.fsync(self.fd)
        os.close(self.fd)
        self.segment += 1
        self.fd = os.open(self.dir / segment_name(self.segment), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.offset = 0

    @property
    def pending(self) -> int:
        return len(self._pending)

    def flush(self, progress: Progress, extra: list[tuple[str, tuple[Any, ...]]] | None = None) -> None:
        """fsync the segment, then commit the pending index rows, ``extra`` statements (schema history) and
        the new progress in one SQLite transaction. Only after this are those transactions acknowledged."""
        if self._pending:
            os.fsync(self.fd)
        try:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.executemany(
                "INSERT INTO txn VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (r.commit_ts, r.segment, r.offset, r.length, r.binlog_file, r.binlog_pos, r.gtid, r.gtid_state,
                     int(r.is_ddl))
                    for r in self._pending
                ],
            )
            for sql, args in extra or ():
                self.db.execute(sql, args)
            self.db.execute(
                "INSERT OR REPLACE INTO progress VALUES (1, ?, ?, ?, ?, ?)",
                (progress.resolved_ts, progress.last_tso, progress.binlog_file, progress.binlog_pos,
                 progress.gtid_state),
            )
            self.db.execute("COMMIT")
        except sqlite3.Error as e:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise StorageError(f"{self.dir}/index.db: cannot commit relay index: {e}") from e
        self._pending.clear()

    def close(self) -> None:
        self.abort()
        try:
            os.fsync(self.fd)
            os.close(self.fd)
        except OSError:
            pass
        self.db.close()


RESERVE_SQL = (
    "INSERT INTO reservation VALUES (?, ?, ?) "
    "ON CONFLICT (binlog_file, binlog_pos) DO UPDATE SET tso = MAX(tso, excluded.tso)"
)


def reservations(db: sqlite3.Connection) -> dict[tuple[str, int], int]:
    """Heartbeat TSO reservations by binlog position (they survive ``rewind``: re-pulling the same binlog
    applies them again at the same positions, which keeps commit-ts values identical)."""
    return {(f, p): t for f, p, t in db.execute("SELECT binlog_file, binlog_pos, tso FROM reservation")}


def rewind(data_dir: str | os.PathLike[str], ts: int) -> Progress:
    """Forget everything after commit-ts ``ts`` (which must be a transaction in the relay log or its
    bootstrap point): index rows, schema history and segment bytes. The next puller run re-pulls from the
    binlog position recorded with that transaction and, by the TSO rule, reproduces the same commit-ts.
    Used for recovery drills and to prove restart identity. Raises StorageError when ``ts`` is unknown."""
    relay_dir = Path(data_dir) / "relay"
    db = connect_index(relay_dir)
    try:
        row = db.execute(
            "SELECT segment, offset + length, binlog_file, binlog_pos, gtid_state FROM txn WHERE commit_ts = ?", (ts,)
        ).fetchone()
        if row is None:
            raise StorageError(f"{relay_dir}: no transaction with commit-ts {ts} to rewind to")
        segment, end, file, pos, gtid_state = row
        db.execute("BEGIN IMMEDIATE")
        db.execute("DELETE FROM txn WHERE commit_ts > ?", (ts,))
        for table, col in (("schema_version", "ts"), ("ddl_event", "commit_ts"), ("schema_meta", "ts")):
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
                db.execute(f"DELETE FROM {table} WHERE {col} > ?", (ts,))
        db.execute("INSERT OR REPLACE INTO progress VALUES (1, ?, ?, ?, ?, ?)", (ts, ts, file, pos, gtid_state))
        db.execute("COMMIT")
    finally:
        db.close()
    for p in relay_dir.glob("*.seg"):
        if p.stem.isdigit() and int(p.stem) > segment:
            p.unlink()
    with open(relay_dir / segment_name(segment), "r+b") as f:
        f.truncate(end)
    return Progress(ts, ts, file, pos, gtid_state)
