"""Binlog event framing and the few event bodies the puller and the decoder need (no row values here).

Layout facts (MySQL and MariaDB agree unless noted):

- Every event starts with a 19-byte header ``<IBIIIH``: timestamp (epoch seconds), type, server id,
  event size (header + body + checksum), log position (END of this event in the master's file), flags.
- With ``binlog_checksum=CRC32`` every event ends with a 4-byte CRC; the relay log keeps events exactly
  as received and records in the frame whether they carry one.
- MariaDB starts every event group with a GTID event (type 162; flag ``FL_STANDALONE`` = no BEGIN/COMMIT,
  used for DDL); a DML group ends with an XID event (InnoDB) or a ``COMMIT`` query (non-transactional).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from sparkcdc.errors import CorruptDataError

HEADER = struct.Struct("<IBIIIH")
HEADER_LEN = 19

# Event types.
UNKNOWN_EVENT = 0
START_EVENT_V3 = 1
QUERY_EVENT = 2
STOP_EVENT = 3
ROTATE_EVENT = 4
INTVAR_EVENT = 5
RAND_EVENT = 13
USER_VAR_EVENT = 14
FORMAT_DESCRIPTION_EVENT = 15
XID_EVENT = 16
TABLE_MAP_EVENT = 19
WRITE_ROWS_V1 = 23
UPDATE_ROWS_V1 = 24
DELETE_ROWS_V1 = 25
INCIDENT_EVENT = 26
HEARTBEAT_EVENT = 27
ROWS_QUERY_EVENT = 29
WRITE_ROWS_V2 = 30
UPDATE_ROWS_V2 = 31
DELETE_ROWS_V2 = 32
MYSQL_GTID_EVENT = 33
MYSQL_ANONYMOUS_GTID_EVENT = 34
MYSQL_PREVIOUS_GTIDS_EVENT = 35
MYSQL_XA_PREPARE_EVENT = 38
PARTIAL_UPDATE_ROWS_EVENT = 39
MYSQL_TRANSACTION_PAYLOAD_EVENT = 40
MYSQL_HEARTBEAT_V2 = 41
ANNOTATE_ROWS_EVENT = 160
BINLOG_CHECKPOINT_EVENT = 161
MARIADB_GTID_EVENT = 162
MARIADB_GTID_LIST_EVENT = 163
MARIADB_START_ENCRYPTION_EVENT = 164
MARIADB_QUERY_COMPRESSED = 165
MARIADB_WRITE_ROWS_COMPRESSED_V1 = 169
MARIADB_UPDATE_ROWS_COMPRESSED_V1 = 170
MARIADB_DELETE_ROWS_COMPRESSED_V1 = 171

ROWS_EVENTS = frozenset(
    {WRITE_ROWS_V1, UPDATE_ROWS_V1, DELETE_ROWS_V1, WRITE_ROWS_V2, UPDATE_ROWS_V2, DELETE_ROWS_V2}
)
COMPRESSED_EVENTS = frozenset(
    {
        MARIADB_QUERY_COMPRESSED,
        MARIADB_WRITE_ROWS_COMPRESSED_V1,
        MARIADB_UPDATE_ROWS_COMPRESSED_V1,
        MARIADB_DELETE_ROWS_COMPRESSED_V1,
    }
)

LOG_EVENT_ARTIFICIAL_F = 0x20
MARIADB_FL_STANDALONE = 0x01
MARIADB_FL_GROUP_COMMIT_ID = 0x02


@dataclass(frozen=True, slots=True)
class EventHeader:
    timestamp: int
    type: int
    server_id: int
    size: int
    log_pos: int
    flags: int


def parse_header(data: bytes | memoryview, offset: int = 0) -> EventHeader:
    """Raises CorruptDataError when fewer than 19 bytes are available or the size is impossible."""
    if len(data) - offset < HEADER_LEN:
        raise CorruptDataError(f"binlog event header truncated at offset {offset}")
    ts, typ, sid, size, pos, flags = HEADER.unpack_from(data, offset)
    if size < HEADER_LEN:
        raise CorruptDataError(f"binlog event at offset {offset} has impossible size {size}")
    return EventHeader(ts, typ, sid, size, pos, flags)


def lenenc_int(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """MySQL length-encoded integer at ``pos``; returns (value, next position)."""
    first = data[pos]
    if first < 0xFB:
        return first, pos + 1
    if first == 0xFC:
        return data[pos + 1] | data[pos + 2] << 8, pos + 3
    if first == 0xFD:
        return data[pos + 1] | data[pos + 2] << 8 | data[pos + 3] << 16, pos + 4
    if first == 0xFE:
        return int.from_bytes(data[pos + 1 : pos + 9], "little"), pos + 9
    raise CorruptDataError(f"invalid length-encoded integer prefix 0x{first:02x} at {pos}")


def parse_rotate(body: bytes) -> tuple[str, int]:
    """ROTATE body (checksum already removed): 8-byte position then the next file name."""
    (pos,) = struct.unpack_from("<Q", body, 0)
    return body[8:].decode("utf-8", "replace"), pos


@dataclass(frozen=True, slots=True)
class MariadbGtid:
    domain_id: int
    server_id: int
    seq_no: int
    flags: int

    @property
    def text(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"

    @property
    def standalone(self) -> bool:
        return bool(self.flags & MARIADB_FL_STANDALONE)


def parse_mariadb_gtid(body: bytes, server_id: int) -> MariadbGtid:
    seq, domain, flags = struct.unpack_from("<QIB", body, 0)
    return MariadbGtid(domain, server_id, seq, flags)


def parse_mysql_gtid(body: bytes) -> str:
    """MySQL GTID event: flags(1) sid(16) gno(8) -> ``uuid:gno``."""
    sid = body[1:17].hex()
    (gno,) = struct.unpack_from("<q", body, 17)
    return f"{sid[:8]}-{sid[8:12]}-{sid[12:16]}-{sid[16:20]}-{sid[20:]}:{gno}"


@dataclass(frozen=True, slots=True)
class QueryEvent:
    schema: str
    query: str
    error_code: int


_QUERY_POST = struct.Struct("<IIBHH")


def parse_query(body: bytes) -> QueryEvent:
    """QUERY body: thread id, exec time, db length, error code, status-vars length, status vars, db, NUL, query."""
    _thread, _exec, db_len, err, sv_len = _QUERY_POST.unpack_from(body, 0)
    db_start = 13 + sv_len
    schema = body[db_start : db_start + db_len].decode("utf-8", "replace")
    query = body[db_start + db_len + 1 :].decode("utf-8", "replace")
    return QueryEvent(schema, query, err)


def is_begin(query: str) -> bool:
    return query in ("BEGIN", "START TRANSACTION") or query.upper().startswith(("BEGIN", "XA START"))


def is_commit(query: str) -> bool:
    q = query.strip().upper()
    return q == "COMMIT" or q.startswith("XA COMMIT") or q == "ROLLBACK"
