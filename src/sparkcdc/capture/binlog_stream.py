"""The replica connection: puller settings, COM_BINLOG_DUMP and a reader thread feeding a bounded queue.

pymysql does the handshake, authentication and packet framing (including >16 MiB events split over several
packets); we send COM_BINLOG_DUMP ourselves. python-mysql-replication is not used for the stream: with
``is_mariadb=True`` its dump packet is one byte short and it silently reconnects from the original start
position on errors (ENVIRONMENT.md), and we want the raw event bytes anyway, since that is what the relay
log stores.
"""

from __future__ import annotations

import queue
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pymysql  # type: ignore[import-untyped]

from sparkcdc.capture.relay_log import DEFAULT_SEGMENT_BYTES
from sparkcdc.errors import ConfigError, UpstreamError

_COM_BINLOG_DUMP = 0x12
_ER_MASTER_FATAL_READING_BINLOG = 1236
_RETRYABLE_ERRNOS = frozenset({2006, 2013, 2003, 1053, 1927})  # gone away, lost, can't connect, shutdown, killed
_QUEUE_EVENTS = 512  # bounded: at most this many events are buffered between the socket and the puller


@dataclass(frozen=True)
class PullerConfig:
    """Connection and relay settings. ``password`` never appears in repr/str. ``ssl``: pymysql's TLS settings from
    the upstream URI (``MysqlTarget.client_args``), None for none asked."""

    host: str
    port: int
    user: str
    password: str = field(default="", repr=False)
    ssl: dict[str, Any] | None = field(default=None, repr=False)
    data_dir: str = ""
    server_id: int = 1001
    heartbeat_s: float = 1.0
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    max_reconnects: int = 10
    reconnect_backoff_s: float = 0.5
    flush_interval_s: float = 0.1
    flush_txns: int = 5000

    def __post_init__(self) -> None:
        if not self.data_dir:
            raise ConfigError("puller: data_dir is required")
        if not 0 < self.heartbeat_s <= 60:
            raise ConfigError(f"puller: heartbeat_s must be in (0, 60], got {self.heartbeat_s}")
        if not 1 <= self.server_id < 2**32:
            raise ConfigError(f"puller: server_id must be a positive 32-bit integer, got {self.server_id}")


def connect(config: PullerConfig) -> Any:
    """A pymysql connection to the upstream (TLS as ``config.ssl`` says); UpstreamError when it cannot be opened:
    retryable for the server's or the network's refusal (a TLS handshake's too), final when the TLS files went
    missing since the URI was checked."""
    c = config
    try:
        return pymysql.connect(host=c.host, port=c.port, user=c.user, password=c.password, charset="utf8mb4",
                               connect_timeout=10, read_timeout=max(c.heartbeat_s * 5, 10), autocommit=True,
                               ssl=c.ssl)  # fmt: skip
    except pymysql.err.OperationalError as e:
        raise UpstreamError(f"cannot connect to upstream {c.host}:{c.port} as {c.user}: {e.args[-1]}",
                            retryable=True) from e
    except OSError as e:  # pymysql loads the TLS files before connecting
        raise UpstreamError(f"cannot connect to upstream {c.host}:{c.port}: its TLS files cannot be used "
                            f"({type(e).__name__}: {e.strerror or e}); check ssl-ca, ssl-cert and ssl-key in "
                            "--upstream", code="CDC:ErrInvalidServerOption", retryable=False) from None  # fmt: skip


def query(config: PullerConfig, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    conn = connect(config)
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())
    finally:
        conn.close()


class BinlogStream:
    """One dump connection. ``get`` returns the next raw event (header + body + checksum), None after
    ``timeout`` without one, and raises UpstreamError when the stream fails (``where()`` names the position
    in the message)."""

    def __init__(self, config: PullerConfig, where: Callable[[], str]) -> None:
        self.config = config
        self.where = where
        self.checksum = False
        self.clock_offset = 0.0
        self._conn: Any = None
        self._queue: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=_QUEUE_EVENTS)
        self._reader: threading.Thread | None = None

    def open(self, file: str, pos: int, gtid_state: str) -> None:
        """Start streaming at ``file``:``pos``, or after ``gtid_state`` when ``file`` is empty (MariaDB)."""
        conn = connect(self.config)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT UNIX_TIMESTAMP(NOW(3)), @@GLOBAL.binlog_checksum")
                now, checksum = cur.fetchone()
                self.clock_offset = float(now) - time.time()
                self.checksum = str(checksum).upper() != "NONE"
                cur.execute("SET @master_binlog_checksum = @@GLOBAL.binlog_checksum")
                cur.execute("SET @mariadb_slave_capability = 4")
                cur.execute("SET @master_heartbeat_period = %s", (int(self.config.heartbeat_s * 1e9),))
                if not file:
                    cur.execute("SET @slave_connect_state = %s", (gtid_state,))
                    cur.execute("SET @slave_gtid_strict_mode = 1")
                    cur.execute("SET @slave_gtid_ignore_duplicates = 0")
        except pymysql.err.MySQLError as e:
            conn.close()
            raise UpstreamError(f"cannot prepare binlog stream: {e}", retryable=True) from e
        payload = struct.pack("<BIHI", _COM_BINLOG_DUMP, pos if file else 4, 0, self.config.server_id) + file.encode()
        conn._write_bytes(struct.pack("<I", len(payload))[:3] + b"\x00" + payload)
        conn._next_seq_id = 1
        self._conn = conn
        self._queue = queue.Queue(maxsize=_QUEUE_EVENTS)
        self._reader = threading.Thread(target=_read_loop, args=(conn, self._queue), daemon=True,
                                        name="binlog-reader")
        self._reader.start()

    def get(self, timeout: float) -> bytes | None:
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is None:
            raise UpstreamError("upstream ended the binlog stream", retryable=True)
        if isinstance(item, BaseException):
            raise self._translate(item) from item
        return item

    def idle(self) -> bool:
        """No event is waiting (the puller flushes then)."""
        return self._queue.empty()

    def _translate(self, e: BaseException) -> UpstreamError:
        if isinstance(e, pymysql.err.MySQLError) and e.args and isinstance(e.args[0], int):
            code = e.args[0]
            msg = e.args[1] if len(e.args) > 1 else str(e)
            if code == _ER_MASTER_FATAL_READING_BINLOG:
                return UpstreamError(
                    f"upstream cannot serve the binlog from {self.where()}: {msg}. The needed binlog was "
                    "probably purged; recreate the changefeed from a newer position",
                    code="CDC:ErrBinlogPurged", retryable=False)
            return UpstreamError(f"binlog stream error {code} at {self.where()}: {msg}",
                                 retryable=code in _RETRYABLE_ERRNOS or code >= 2000)
        return UpstreamError(f"binlog stream error at {self.where()}: {type(e).__name__}: {e}", retryable=True)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            sock = getattr(conn, "_sock", None)
            try:
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)  # wakes the reader thread blocked in recv()
            except OSError:
                pass
            try:
                conn._force_close() if hasattr(conn, "_force_close") else conn.close()
            except Exception:  # closing a broken socket must not mask the original error
                pass
        if self._reader is not None:
            # The reader may be blocked on a full queue rather than in recv(): drain until it exits.
            deadline = time.monotonic() + 10
            while self._reader.is_alive() and time.monotonic() < deadline:
                try:
                    while True:
                        self._queue.get_nowait()
                except queue.Empty:
                    pass
                self._reader.join(timeout=0.05)
            self._reader = None


def _read_loop(conn: Any, q: queue.Queue[bytes | BaseException | None]) -> None:
    try:
        while True:
            data = conn._read_packet().get_all_data()
            if data[0] == 0xFE and len(data) < 9:
                q.put(None)  # EOF: the server ended the stream
                return
            q.put(data[1:])  # strip the OK byte: the rest is one raw event
    except BaseException as e:
        q.put(e)
