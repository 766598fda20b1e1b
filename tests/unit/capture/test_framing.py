"""The puller's framing of synthetic event streams (no server): MariaDB and MySQL 8 shapes."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from sparkcdc.capture import PullerConfig, RelayLog, SchemaHistory, decode_chunk
from sparkcdc.capture import binlog as b
from sparkcdc.capture.puller import Puller
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.events import DDLEvent, RowChange, RowOp

T0 = 1_700_000_000


class Stream:
    """Builds raw events (with a dummy 4-byte checksum) at increasing positions of one binlog file."""

    def __init__(self) -> None:
        self.pos = 4

    def event(self, typ: int, body: bytes, ts: int = T0, server_id: int = 1, flags: int = 0) -> bytes:
        size = 19 + len(body) + 4
        self.pos += size
        return struct.pack("<IBIIIH", ts, typ, server_id, size, self.pos, flags) + body + b"\xde\xad\xbe\xef"

    def gtid(self, seq: int, standalone: bool) -> bytes:
        return self.event(b.MARIADB_GTID_EVENT, struct.pack("<QIB", seq, 0, 1 if standalone else 0) + bytes(6))

    def mysql_gtid(self, gno: int) -> bytes:
        return self.event(b.MYSQL_GTID_EVENT, b"\x01" + bytes(range(16)) + struct.pack("<q", gno) + bytes(17))

    def query(self, sql: str, db: str = "app", ts: int = T0) -> bytes:
        body = struct.pack("<IIBHH", 1, 0, len(db), 0, 0) + db.encode() + b"\x00" + sql.encode()
        return self.event(b.QUERY_EVENT, body, ts)

    def xid(self, ts: int = T0) -> bytes:
        return self.event(b.XID_EVENT, struct.pack("<Q", 7), ts)

    def table_map(self, table_id: int, table: str, names: tuple[str, ...], types: bytes, meta: bytes) -> bytes:
        body = table_id.to_bytes(6, "little") + b"\x01\x00"
        body += bytes([3]) + b"app\x00" + bytes([len(table)]) + table.encode() + b"\x00"
        body += bytes([len(types)]) + types + bytes([len(meta)]) + meta + b"\xff"
        name_field = b"".join(bytes([len(n)]) + n.encode() for n in names)
        body += bytes([4, len(name_field)]) + name_field  # optional metadata: COLUMN_NAME
        return self.event(b.TABLE_MAP_EVENT, body)

    def write_rows(self, table_id: int, ncols: int, rows: list[bytes], v2: bool = False) -> bytes:
        body = table_id.to_bytes(6, "little") + b"\x01\x00"
        if v2:
            body += struct.pack("<H", 2)  # extra data length (includes itself)
        body += bytes([ncols, (1 << ncols) - 1]) + b"".join(b"\x00" + r for r in rows)
        return self.event(b.WRITE_ROWS_V2 if v2 else b.WRITE_ROWS_V1, body)


def _puller(tmp_path: Path) -> Puller:
    p = Puller(PullerConfig(host="127.0.0.1", port=1, user="u", data_dir=str(tmp_path)))
    p._fresh = False
    p.file, p.pos, p._checksum = "mysql-bin.000001", 4, True
    return p


def test_mariadb_groups(tmp_path: Path) -> None:
    s = Stream()
    p = _puller(tmp_path)
    events = [
        s.gtid(1, standalone=True),
        s.query("CREATE TABLE t (id INT PRIMARY KEY, v BIGINT)"),
        s.gtid(2, standalone=False),
        s.table_map(70, "t", ("id", "v"), bytes([3, 8]), b""),
        s.write_rows(70, 2, [struct.pack("<iq", 1, -5), struct.pack("<iq", 2, 6)]),
        s.xid(),
        s.event(b.HEARTBEAT_EVENT, b"mysql-bin.000001", ts=0),
        s.gtid(3, standalone=False),  # CREATE ... SELECT: a query inside a group that ends with XID
        s.query("CREATE TABLE u (id INT PRIMARY KEY)"),
        s.table_map(71, "u", ("id",), bytes([3]), b""),
        s.write_rows(71, 1, [struct.pack("<i", 9)]),
        s.xid(ts=T0 - 5),  # event time older than the reservation
    ]
    for ev in events:
        p._on_event(ev)
    p._flush()
    p.close()
    relay = RelayLog(tmp_path)
    txns = relay.transactions()
    assert [t.gtid for t in txns] == ["0-1-1", "0-1-2", "0-1-3"]
    assert [t.is_ddl for t in txns] == [True, False, True]
    ts = [t.commit_ts for t in txns]
    assert ts[1] == ts[0] + 1  # same second: logical + 1
    # The idle heartbeat reserved "now" as resolved ts, so the next group (older event time) comes after it.
    assert ts[2] > ts[1] + (1 << 18) * 1000
    assert txns[-1].binlog_pos == s.pos and relay.progress() is not None
    out = list(decode_chunk(relay.chunks(0, 1 << 62, 1 << 20)[0], SchemaHistory.load(tmp_path)))
    summary = [(e.action, e.table) if isinstance(e, DDLEvent) else (e.op, e.after) for e in out]
    assert summary == [
        (DDLAction.CREATE_TABLE, "t"),
        (RowOp.INSERT, (1, -5)),
        (RowOp.INSERT, (2, 6)),
        (DDLAction.CREATE_TABLE, "u"),
        (RowOp.INSERT, (9,)),
    ]


def test_mysql8_groups_with_v2_rows_and_binary_json(tmp_path: Path) -> None:
    s = Stream()
    p = _puller(tmp_path)
    json_doc = bytes([2]) + struct.pack("<HH", 1, 7) + bytes([5]) + struct.pack("<h", 42)  # [42]
    events = [
        s.mysql_gtid(10),
        s.query("CREATE TABLE j (id INT PRIMARY KEY, doc JSON)"),  # no BEGIN: a DDL group
        s.mysql_gtid(11),
        s.query("BEGIN"),
        s.table_map(80, "j", ("id", "doc"), bytes([3, 245]), bytes([4])),
        s.write_rows(80, 2, [struct.pack("<iI", 1, len(json_doc)) + json_doc], v2=True),
        s.xid(ts=T0 + 1),
        s.event(b.ROTATE_EVENT, struct.pack("<Q", 4) + b"mysql-bin.000002"),
    ]
    for ev in events:
        p._on_event(ev)
    p._flush()
    assert (p.file, p.pos) == ("mysql-bin.000002", 4)
    p.close()
    relay = RelayLog(tmp_path)
    txns = relay.transactions()
    assert [t.is_ddl for t in txns] == [True, False] and txns[0].gtid.endswith(":10")
    out = list(decode_chunk(relay.chunks(0, 1 << 62, 1 << 20)[0], SchemaHistory.load(tmp_path)))
    rows = [e for e in out if isinstance(e, RowChange)]
    assert [r.after for r in rows] == [(1, "[42]")]
    assert rows[0].table.column("doc").type == "json"


def test_a_reader_of_some_tables_skips_the_others_rows_by_table_id(tmp_path: Path, monkeypatch: Any) -> None:
    """A writer task decodes only its own tables: another table's table map is read no further than its name (never
    parsed) and its rows events are skipped; DDL events still come through."""
    from sparkcdc.capture import decode

    s = Stream()
    p = _puller(tmp_path)
    events = [
        s.gtid(1, standalone=True),
        s.query("CREATE TABLE t (id INT PRIMARY KEY, v BIGINT)"),
        s.gtid(2, standalone=True),
        s.query("CREATE TABLE u (id INT PRIMARY KEY)"),
        s.gtid(3, standalone=False),
        s.table_map(70, "t", ("id", "v"), bytes([3, 8]), b""),
        s.write_rows(70, 2, [struct.pack("<iq", 1, -5)]),
        s.table_map(71, "u", ("id",), bytes([3]), b""),
        s.write_rows(71, 1, [struct.pack("<i", 9)]),
        s.write_rows(70, 2, [struct.pack("<iq", 2, 6)]),
        s.xid(),
    ]
    for ev in events:
        p._on_event(ev)
    p._flush()
    p.close()
    parsed: list[str] = []
    real = decode.parse_table_map

    def spy(body: bytes) -> Any:
        m = real(body)
        parsed.append(m.table)
        return m

    monkeypatch.setattr(decode, "parse_table_map", spy)
    ref = RelayLog(tmp_path).chunks(0, 1 << 62, 1 << 20)[0]
    history = SchemaHistory.load(tmp_path)
    out = list(decode_chunk(ref, history, tables=lambda schema, table: (schema, table) == ("app", "u")))
    summary = [(e.action, e.table) if isinstance(e, DDLEvent) else (e.table.table, e.after) for e in out]
    assert summary == [(DDLAction.CREATE_TABLE, "t"), (DDLAction.CREATE_TABLE, "u"), ("u", (9,))]
    assert parsed == ["u"]
    every = [(e.table.table, e.after) for e in decode_chunk(ref, history) if isinstance(e, RowChange)]
    assert every == [("t", (1, -5)), ("u", (9,)), ("t", (2, 6))]
