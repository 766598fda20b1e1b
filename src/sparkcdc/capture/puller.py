"""The binlog puller: a replica connection that frames raw events per transaction into the relay log.

It does only sequential, cheap work: read events (pymysql for the handshake and packet framing, our own
COM_BINLOG_DUMP — python-mysql-replication's MariaDB dump packet is one byte short and it silently restarts
from the original position on errors, see ENVIRONMENT.md), track positions and GTIDs, allocate commit-ts
TSOs, apply DDL to the schema tracker and fsync frames before acknowledging them. Rows are not decoded.

TSO rule: ``commit_ts = max(compose(event_seconds * 1000, 0), last_tso + 1)`` where ``event_seconds`` is the
timestamp of the transaction's terminating event (XID / COMMIT / the DDL query). It is strictly increasing
(same second or clock going back -> logical + 1) and a pure function of the binlog bytes and ``last_tso``,
which is stored with every durable position; restarting from any durable position reproduces the TSOs.
While idle, each heartbeat reserves ``compose(upstream_now_ms)`` as ``last_tso`` and resolved ts, so the
resolved ts advances and later transactions still get larger TSOs. Reservations are stored by binlog position
(table ``reservation``) and re-applied when the same position is pulled again after a rewind, so re-pulling
from any durable checkpoint reproduces every commit-ts exactly.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pymysql  # type: ignore[import-untyped]

from sparkcdc.capture import binlog as b
from sparkcdc.capture.binlog_stream import BinlogStream, PullerConfig, connect, query
from sparkcdc.capture.position import BinlogPosition, StartPoint, file_seq
from sparkcdc.capture.relay_log import FLAG_CHECKSUM, FLAG_DDL, Progress
from sparkcdc.capture.relay_writer import RESERVE_SQL, RelayLogWriter, reservations
from sparkcdc.capture.reservations import Reservations, position_key
from sparkcdc.capture.schema_history import SchemaTracker
from sparkcdc.capture.table_map import TableMap, parse_table_map
from sparkcdc.errors import ConfigError, UpstreamError
from sparkcdc.local_file import write_atomic
from sparkcdc.model import tso

log = logging.getLogger(__name__)

__all__ = ["CaptureLeader", "Puller", "PullerConfig", "next_commit_ts"]

LEADER_POLL_S = 0.05


class CaptureLeader(Protocol):
    """The capture a follower's puller trails: the cluster owner's, seen through the shared store."""

    def published(self) -> BinlogPosition | None:
        """Where the owner's relay log is durable (None: the owner has not published yet)."""
        ...

    def reservations(self) -> dict[tuple[str, int], int]: ...


class _Interrupted(Exception):
    """``stop`` was set while a follower waited for its leader."""



BOOTSTRAP_FILE = "bootstrap_ts"


def next_commit_ts(event_seconds: int, last_tso: int) -> int:
    """The TSO rule: the binlog second as physical milliseconds, or ``last_tso + 1`` when that is not larger
    (same second, or the upstream clock went back). Past 2**18 transactions in one millisecond the logical part
    carries into the physical one, so the result always increases strictly."""
    return max(tso.compose(event_seconds * 1000), last_tso + 1)


_DML_WORDS = ("INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD")


def _is_statement_dml(query: str) -> bool:
    head = query.lstrip(" \t\r\n(").split(None, 1)
    return bool(head) and head[0].upper() in _DML_WORDS


def _mariadb_only(cur: Any, sql: str, args: Any = None) -> str:
    """A MariaDB GTID query; "" on servers without it (MySQL)."""
    try:
        cur.execute(sql, args)
        row = cur.fetchone()
    except pymysql.err.MySQLError:
        return ""
    return str(row[0] or "") if row else ""


class _Txn:
    __slots__ = ("ddl_query", "ddl_schema", "gtid", "has_begin", "maps", "standalone", "start")

    def __init__(self, gtid: str, standalone: bool | None) -> None:
        self.gtid = gtid
        self.standalone = standalone
        self.has_begin = False
        self.ddl_query: str | None = None
        self.ddl_schema = ""
        self.maps: list[TableMap] = []
        self.start: tuple[str, int] = ("", 0)


class Puller:
    """Pulls the upstream binlog into ``<data_dir>/relay``.

    ``run(stop)`` blocks until ``stop`` is set (or ``until`` is reached); ``catch_up()`` pulls up to the
    upstream's current end and returns. A data dir that already holds a relay log resumes from its last
    durable position (``start`` is then ignored); otherwise ``start`` (default: now) decides.
    Raises UpstreamError when the upstream cannot be read (purged binlog: not retryable).
    """

    def __init__(
        self,
        config: PullerConfig,
        start: StartPoint | None = None,
        *,
        reserved: dict[tuple[str, int], int] | None = None,
        on_reserve: Callable[[str, int, int], None] | None = None,
        on_start: Callable[[BinlogPosition], None] | None = None,
        leader: CaptureLeader | None = None,
    ) -> None:
        """``reserved``: reservations made elsewhere (another server of a cluster) to apply as well as the relay
        log's; ``on_reserve(file, pos, tso)`` makes a reservation durable there before it counts (raise to
        refuse it); ``on_start`` is told where a fresh relay log starts, before anything is pulled.

        With ``leader`` the puller follows another capture instead of allocating TSOs itself: it gives a
        transaction its commit-ts only once the leader's relay log holds it (so every reservation that applies
        to it is known), and its heartbeats adopt the leader's reservations instead of making their own. Its
        relay log is then the leader's, commit-ts for commit-ts."""
        self.config = config
        self.start = start or StartPoint.now()
        self._on_reserve = on_reserve
        self._on_start = on_start
        self._leader = leader
        self._led_to: tuple[int, int] = (-1, 0)  # the leader's published position last read
        self._stop: threading.Event | None = None
        self.writer = RelayLogWriter(config.data_dir, config.segment_bytes)
        self.tracker = SchemaTracker(self.writer.db)
        self._stream = BinlogStream(config, lambda: f"{self.file or self.gtid_state}:{self.pos}")
        self._checksum = False
        self._events = 0
        self._reserved = Reservations(reserved)
        self._reserved.merge(reservations(self.writer.db))  # at one position the larger counts
        self._skip_until = 0
        self._txn: _Txn | None = None
        self._first_pending = 0.0
        self._gtid: dict[int, str] = {}
        progress = self.writer.progress()
        if progress is not None:
            self.file, self.pos = progress.binlog_file, progress.binlog_pos
            self.last_tso, self.resolved_ts = progress.last_tso, progress.resolved_ts
            self._set_gtid_state(progress.gtid_state)
            self._fresh = False
        else:
            self.file, self.pos, self.last_tso, self.resolved_ts = "", 4, 0, 0
            self._fresh = True
        self._applied = position_key(self.file, self.pos)  # where the last transaction ended

    # -- state helpers -----------------------------------------------------------------------------
    def _set_gtid_state(self, text: str) -> None:
        """MariaDB GTID list ``domain-server-seq,...``; anything else (MySQL GTID sets) is not tracked."""
        self._gtid = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            fields = part.split("-")
            if len(fields) == 3 and all(f.isdigit() for f in fields):
                self._gtid[int(fields[0])] = part

    @property
    def gtid_state(self) -> str:
        return ",".join(self._gtid[d] for d in sorted(self._gtid))

    def position(self) -> BinlogPosition:
        """The last durable position (with its last TSO and GTID state)."""
        p = self.writer.progress()
        if p is None:
            return BinlogPosition(self.file, max(self.pos, 4), self.gtid_state, self.last_tso)
        return BinlogPosition(p.binlog_file, p.binlog_pos, p.gtid_state, p.last_tso)

    def _open_stream(self) -> None:
        self._stream.open(self.file, self.pos, self.gtid_state)
        self._checksum = self._stream.checksum

    def _close_stream(self) -> None:
        self._stream.close()

    def _initialise(self) -> None:
        """Resolve a fresh start point into a position, TSO state and schema snapshot."""
        conn = connect(self.config)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT UNIX_TIMESTAMP(NOW(3))")
                now_ms = int(float(cur.fetchone()[0]) * 1000)
                mode = self.start.mode
                if mode == "now":
                    try:
                        cur.execute("FLUSH TABLES WITH READ LOCK")
                        locked = True
                    except pymysql.err.MySQLError as e:
                        # Without RELOAD the snapshot is not atomic with the position: a DDL racing the
                        # start may be seen twice or not at all. Say so once.
                        log.warning("cannot lock tables for the schema snapshot (%s); taking it unlocked", e)
                        locked = False
                    try:
                        cur.execute("SHOW MASTER STATUS")
                        row = cur.fetchone()
                        if row is None:
                            raise UpstreamError("upstream has no binary log; start it with log_bin and "
                                                "binlog_format=ROW")
                        self.file, self.pos = row[0], int(row[1])
                        self._set_gtid_state(_mariadb_only(cur, "SELECT @@GLOBAL.gtid_binlog_pos"))
                        self.last_tso = tso.compose(now_ms)
                        self.tracker.bootstrap(cur, self.last_tso)
                    finally:
                        if locked:
                            cur.execute("UNLOCK TABLES")
                elif mode == "position":
                    assert self.start.position is not None
                    p = self.start.position
                    self.file, self.pos, self.last_tso = p.file, p.pos, p.last_tso
                    gtid = p.gtid_state
                    if not gtid:
                        gtid = _mariadb_only(cur, "SELECT BINLOG_GTID_POS(%s, %s)", (p.file, p.pos))
                    self._set_gtid_state(gtid)
                    self.tracker.bootstrap(cur, p.last_tso)
                    self.tracker.mark_unverified(p.last_tso)
                elif mode == "gtid":
                    self._set_gtid_state(self.start.gtid)
                    self.file, self.pos = "", 4
                    self.tracker.bootstrap(cur, 0)
                    self.tracker.mark_unverified(0)
                elif mode == "tso":
                    self.file = self._file_for_tso(cur, self.start.tso)
                    self.pos = 4
                    self._skip_until = self.start.tso
                    self.tracker.bootstrap(cur, self.start.tso)
                    self.tracker.mark_unverified(self.start.tso)
                else:
                    raise ConfigError(f"unknown start mode {mode!r}")
                self._check_binlog_settings(cur)
        except pymysql.err.MySQLError as e:
            raise UpstreamError(f"cannot initialise capture from {self.config.host}:{self.config.port}: {e}") from e
        finally:
            conn.close()
        self.resolved_ts = self.last_tso
        self._applied = position_key(self.file, self.pos)
        if self._on_start is not None:  # before the relay log exists: a failure here leaves it fresh for a retry
            self._on_start(BinlogPosition(self.file, self.pos, self.gtid_state, self.last_tso))
        # the oldest commit-ts a changefeed can start after, written before the relay log exists (a crash in
        # between starts afresh and writes it again)
        write_atomic(Path(self.config.data_dir) / BOOTSTRAP_FILE, str(self.last_tso).encode(),
                     what="the relay log's start")  # fmt: skip
        self.writer.flush(self._progress(), self.tracker.take_pending())
        log.info("puller starting at %s:%d gtid=%s last_tso=%d", self.file, self.pos, self.gtid_state, self.last_tso)

    def _check_binlog_settings(self, cur: Any) -> None:
        cur.execute("SELECT @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image")
        fmt, image = cur.fetchone()
        if str(fmt).upper() != "ROW":
            raise UpstreamError(f"upstream binlog_format is {fmt}; set binlog_format=ROW")
        if str(image).upper() != "FULL":
            log.warning("upstream binlog_row_image=%s; UPDATE before-images will miss columns (use FULL)", image)
        metadata = _mariadb_only(cur, "SELECT @@GLOBAL.binlog_row_metadata")
        if metadata and metadata.upper() != "FULL":
            log.warning("upstream binlog_row_metadata=%s; tables the DDL parser cannot rebuild lose their column "
                        "names (use FULL)", metadata)

    def _file_for_tso(self, cur: Any, start_ts: int) -> str:
        """The oldest binlog file still on the server: TSOs are allocated from its start and transactions
        with commit-ts <= the start TSO are skipped, so the result does not depend on the moment we start."""
        cur.execute("SHOW BINARY LOGS")
        files = [r[0] for r in cur.fetchall()]
        if not files:
            raise UpstreamError("upstream has no binary logs")
        log.info("start-ts %d: scanning from the oldest binlog %s", start_ts, files[0])
        return str(files[0])

    # -- main loop ---------------------------------------------------------------------------------
    def catch_up(self, timeout: float = 120.0) -> Progress:
        """Pull until the upstream's binlog end as of now is durable in the relay log; returns the progress."""
        rows = query(self.config, "SHOW MASTER STATUS")
        if not rows:
            raise UpstreamError("upstream has no binary log")
        target = BinlogPosition(rows[0][0], int(rows[0][1]))
        self.run(until=target, timeout=timeout)
        p = self.writer.progress()
        assert p is not None
        return p

    def run(self, stop: threading.Event | None = None, until: BinlogPosition | None = None,
            timeout: float | None = None) -> None:
        """Pull until ``stop`` is set, ``until`` is durable, or ``timeout`` seconds pass (UpstreamError)."""
        if self._fresh:
            self._initialise()
            self._fresh = False
        deadline = None if timeout is None else time.monotonic() + timeout
        attempts = 0
        self._stop = stop
        while True:
            try:
                self._open_stream()
                self._events = 0
                self._pump(stop, until, deadline)
                return
            except _Interrupted:
                return
            except UpstreamError as e:
                if not e.retryable:
                    raise
                # Count consecutive failures only: a stream that delivered events was healthy for a while.
                attempts = 1 if self._events else attempts + 1
                if attempts > self.config.max_reconnects:
                    raise UpstreamError(f"binlog stream failed {attempts} times; last error: {e}") from e
                log.warning("binlog stream interrupted (%s); reconnecting from %s:%d (attempt %d)",
                            e, self.file, self.pos, attempts)
                time.sleep(min(self.config.reconnect_backoff_s * attempts, 5))
            finally:
                self._close_stream()
                if self.writer.in_txn:
                    self.writer.abort()
                    self._txn = None
                if self.writer.pending:
                    self._flush()

    def _reached(self, until: BinlogPosition | None) -> bool:
        if until is None or self.writer.pending or self._txn is not None:
            return False
        if not self.file:
            return False
        return (file_seq(self.file), self.pos) >= until.key()

    def _pump(self, stop: threading.Event | None, until: BinlogPosition | None, deadline: float | None) -> None:
        wait = min(0.05, self.config.flush_interval_s)
        while True:
            if (stop is not None and stop.is_set()) or self._reached(until):
                return
            if deadline is not None and time.monotonic() > deadline:
                raise UpstreamError(f"timed out pulling the binlog at {self.file}:{self.pos}", retryable=False)
            item = self._stream.get(wait)
            if item is None:
                if self.writer.pending and self._txn is None:
                    self._flush()
                continue
            self._events += 1
            self._on_event(item)
            if self.writer.pending and self._txn is None and (
                self._stream.idle()
                or self.writer.pending >= self.config.flush_txns
                or time.monotonic() - self._first_pending > self.config.flush_interval_s
            ):
                self._flush()

    def _flush(self) -> None:
        self.resolved_ts = max(self.resolved_ts, self.last_tso)
        self.writer.flush(self._progress(), self.tracker.take_pending())

    def _progress(self) -> Progress:
        return Progress(self.resolved_ts, self.last_tso, self.file, self.pos, self.gtid_state)

    # -- events ------------------------------------------------------------------------------------
    def _on_event(self, ev: bytes) -> None:
        ts, typ, sid, _size, log_pos, flags = b.HEADER.unpack_from(ev, 0)
        body_end = len(ev) - (4 if self._checksum else 0)
        txn = self._txn
        if typ == b.ROTATE_EVENT:
            name, pos = b.parse_rotate(ev[19:body_end])
            self.file = name
            if txn is None:
                self.pos = pos
            return
        if typ == b.HEARTBEAT_EVENT or typ == b.MYSQL_HEARTBEAT_V2:
            if txn is None:
                self._heartbeat()
            return
        if typ in (b.FORMAT_DESCRIPTION_EVENT, b.MARIADB_GTID_LIST_EVENT, b.BINLOG_CHECKPOINT_EVENT,
                   b.MYSQL_PREVIOUS_GTIDS_EVENT, b.STOP_EVENT, b.MARIADB_START_ENCRYPTION_EVENT,
                   b.INCIDENT_EVENT):
            if typ == b.INCIDENT_EVENT:
                raise UpstreamError(f"upstream binlog has an INCIDENT event at {self.file}:{log_pos}; "
                                    "data may be missing upstream", retryable=False)
            # Only move forward: the format description event re-sent after a reconnect carries an older
            # position, and resuming there would pull transactions twice.
            if txn is None and log_pos > self.pos and not flags & b.LOG_EVENT_ARTIFICIAL_F:
                self.pos = log_pos
            return
        if typ in (b.PARTIAL_UPDATE_ROWS_EVENT, b.MYSQL_TRANSACTION_PAYLOAD_EVENT):
            raise UpstreamError(
                "upstream writes partial JSON updates or compressed transaction payloads; set "
                "binlog_row_value_options='' and binlog_transaction_compression=OFF", retryable=False)
        if typ == b.MYSQL_XA_PREPARE_EVENT:
            raise UpstreamError(f"XA transaction at {self.file}:{log_pos}: XA PREPARE/COMMIT groups are not "
                                "supported by the capture", retryable=False)
        if typ in b.COMPRESSED_EVENTS:
            raise UpstreamError("compressed binlog events (log_bin_compress=ON) are not supported; disable it",
                                retryable=False)
        if typ == b.MARIADB_GTID_EVENT:
            g = b.parse_mariadb_gtid(ev[19:body_end], sid)
            self._begin(g.text, g.standalone)
            self._gtid[g.domain_id] = g.text
            self.writer.append(ev)
            return
        if typ in (b.MYSQL_GTID_EVENT, b.MYSQL_ANONYMOUS_GTID_EVENT):
            # MySQL GTIDs carry no "standalone" flag: a group without BEGIN is one DDL statement.
            self._begin(b.parse_mysql_gtid(ev[19:body_end]) if typ == b.MYSQL_GTID_EVENT else "", None)
            self.writer.append(ev)
            return
        if txn is None:
            if typ not in (b.QUERY_EVENT, b.TABLE_MAP_EVENT) and typ not in b.ROWS_EVENTS:
                if log_pos > self.pos:
                    self.pos = log_pos
                return
            self._begin("", None)
            txn = self._txn
            assert txn is not None
        self.writer.append(ev)
        if typ == b.XID_EVENT:
            self._commit(ts, log_pos)
        elif typ == b.QUERY_EVENT:
            q = b.parse_query(ev[19:body_end])
            if b.is_begin(q.query):
                txn.has_begin = True
            elif b.is_commit(q.query):
                self._commit(ts, log_pos)
            elif _is_statement_dml(q.query):
                raise UpstreamError(
                    f"statement-based DML in the binlog at {self.file}:{log_pos} ({q.query[:60]!r}); rows would "
                    "be lost. Every session must use binlog_format=ROW", retryable=False)
            else:
                # A DDL (or another statement logged as a query). In a MariaDB group that is not standalone
                # (CREATE TABLE ... SELECT) the group still ends with XID/COMMIT; keep the first statement.
                if txn.ddl_query is None:
                    txn.ddl_query, txn.ddl_schema = q.query, q.schema
                if txn.standalone or (txn.standalone is None and not txn.has_begin):
                    self._commit(ts, log_pos)
        elif typ == b.TABLE_MAP_EVENT:
            schema_len = ev[27]
            schema = ev[28 : 28 + schema_len].decode("utf-8", "replace")
            tpos = 28 + schema_len + 1
            table = ev[tpos + 1 : tpos + 1 + ev[tpos]].decode("utf-8", "replace")
            if self.tracker.needs_table_map(schema, table):
                txn.maps.append(parse_table_map(ev[19:body_end]))

    def _begin(self, gtid: str, standalone: bool | None) -> None:
        if self._txn is not None:
            raise UpstreamError(f"binlog at {self.file}:{self.pos}: a transaction started inside another one",
                                retryable=False)
        self._txn = _Txn(gtid, standalone)
        self._txn.start = (self.file, self.pos)
        self.writer.begin()

    def _commit(self, event_ts: int, log_pos: int) -> None:
        txn = self._txn
        assert txn is not None
        if self._leader is not None:
            self._await_leader(position_key(self.file, log_pos or self.pos))
        self._txn = None
        # Heartbeats reserved TSOs since the previous group ended (in an earlier run before a rewind, or on the
        # leader): apply them again so the commit-ts comes out identical.
        reserved = self._reserved.largest_in(self._applied, position_key(*txn.start))
        commit_ts = next_commit_ts(event_ts, max(self.last_tso, reserved))
        self.last_tso = commit_ts
        if log_pos:
            self.pos = log_pos
        self._applied = position_key(self.file, self.pos)
        flags = FLAG_CHECKSUM if self._checksum else 0
        if commit_ts <= self._skip_until:
            self.writer.abort()
            return
        if txn.ddl_query is not None:
            changes = self.tracker.apply_ddl(txn.ddl_query, txn.ddl_schema, commit_ts)
            if changes:
                flags |= FLAG_DDL
        for m in txn.maps:
            if self.tracker.needs_table_map(m.schema, m.table):
                self.tracker.refresh_from_map(m, commit_ts)
        if not self.writer.pending:
            self._first_pending = time.monotonic()
        self.writer.commit(commit_ts, flags, self.file, self.pos, txn.gtid, self.gtid_state)

    def _await_leader(self, end: tuple[int, int]) -> None:
        """Wait until the leader's relay log holds everything up to ``end``, then take its reservations: the
        leader stores a reservation before it applies it, and publishes a position only once it is durable."""
        assert self._leader is not None
        if self._led_to >= end:
            return
        while True:
            published = self._leader.published()
            if published is not None and published.key() >= end:
                self._led_to = published.key()
                self._reserved.merge(self._leader.reservations())
                return
            if self._stop is not None and self._stop.wait(LEADER_POLL_S):
                raise _Interrupted
            if self._stop is None:
                time.sleep(LEADER_POLL_S)

    def _heartbeat(self) -> None:
        if self.writer.pending:
            self._flush()
        if self._leader is not None:
            self._reserved.merge(self._leader.reservations())
            candidate = self._reserved.largest_in(self._applied, position_key(self.file, self.pos))
        else:
            candidate = tso.compose(int((time.time() + self._stream.clock_offset) * 1000))
        if candidate > self.last_tso:
            if self._on_reserve is not None:
                self._on_reserve(self.file, self.pos, candidate)
            self.last_tso = candidate
            self.resolved_ts = candidate
            self._reserved.add(self.file, self.pos, candidate)
            self.writer.flush(self._progress(),
                              [*self.tracker.take_pending(), (RESERVE_SQL, (self.file, self.pos, candidate))])

    def close(self) -> None:
        """Flush what is complete and release the relay log."""
        self._close_stream()
        if self.writer.pending and self._txn is None:
            self._flush()
        self.writer.close()
