"""The bulk path's connection sends the server the load's own file and no other (``sparkcdc.mysql.local_infile``),
against a fake server speaking the LOAD DATA LOCAL exchange; a real MariaDB loading its own file is
``tests/integration/sink/test_mysql_bulk_load.py``."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from sparkcdc.errors import SparkcdcError
from sparkcdc.mysql.bulk_load import BulkLoad, BulkLoader
from sparkcdc.mysql.local_infile import OwnFileConnection
from sparkcdc.mysql.target import MysqlTarget

TARGET = MysqlTarget.parse("mysql://root:hunter2@db.example:3306/")
LOAD = BulkLoad("`db`.`t`", "(`id`,`v`)", ["(1,'a')", "(2,NULL)"])


def _packet(seq: int, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


class FakeServer:
    """The server's side of one LOAD DATA LOCAL, as the client's socket and read file: it answers the statement by
    asking for the file ``ask`` names (given the statement's), and the empty packet that ends the file with an OK
    saying it read ``records`` rows. ``sent`` is every byte the client wrote."""

    def __init__(self, ask: Callable[[bytes], bytes], records: int) -> None:
        self.ask = ask
        self.records = records
        self.sent = bytearray()
        self._inbox = bytearray()

    def sendall(self, data: bytes) -> None:
        self.sent += data
        seq = data[3]
        if seq == 0:  # the statement
            m = re.search(rb"INFILE '([^']*)'", data)
            assert m is not None
            self._inbox += _packet(1, b"\xfb" + self.ask(m.group(1)))
        elif data[:3] == b"\0\0\0":  # an empty packet: the end of the file
            info = f"Records: {self.records}  Deleted: 0  Skipped: 0  Warnings: 0".encode()
            self._inbox += _packet(seq + 1, b"\x00\x00\x00" + struct.pack("<HH", 0, 0) + info)

    def settimeout(self, timeout: float | None) -> None:
        pass

    def close(self) -> None:
        """pymysql closes the socket when the connection is collected (``Connection.__del__``)."""

    def read(self, n: int) -> bytes:
        out = bytes(self._inbox[:n])
        del self._inbox[:n]
        return out


def _connection(server: FakeServer) -> OwnFileConnection:
    conn = OwnFileConnection(defer_connect=True, local_infile=True, charset="utf8mb4")
    conn._sock = conn._rfile = server
    conn._next_seq_id, conn._current_timeout = 0, None
    return conn


def _statement_packet(data: bytes) -> bytes:
    return data[: 4 + struct.unpack("<I", data[:3] + b"\0")[0]]


def test_a_request_for_another_file_sends_nothing_of_it_and_fails_the_batch(tmp_path: Path) -> None:
    secret = tmp_path / "meta.sqlite3"
    secret.write_bytes(b"sink password: hunter3")
    server = FakeServer(lambda _own: str(secret).encode(), records=0)
    conn = _connection(server)
    loader = BulkLoader()
    try:
        with conn.cursor() as cur, pytest.raises(SparkcdcError) as failed:
            loader.load(conn, cur, LOAD, target=TARGET, schema="db", table="t")
    finally:
        loader.close()
    statement = _statement_packet(bytes(server.sent))
    assert bytes(server.sent) == statement + _packet(2, b"")  # the statement, then an empty file: nothing else
    assert b"hunter3" not in server.sent
    assert failed.value.permanent and failed.value.code == "CDC:ErrMySQLTxnError"
    message = failed.value.message
    assert "\n" not in message and "hunter2" not in message
    assert f"the server asked for the local file '{secret}' instead of the load's own '/" in message
    assert "nothing of that file was sent and nothing of the batch committed" in message
    assert "set bulk-load=false" in message
    assert not conn._local_infile  # local files are off again
    with conn.cursor() as cur, pytest.raises(RuntimeError, match="local_infile option is false"):
        cur.execute(f"LOAD DATA LOCAL INFILE '{secret}' INTO TABLE db.t")  # outside a load: pymysql's own refusal
    assert b"hunter3" not in server.sent


def test_a_request_for_the_loads_own_file_sends_it() -> None:
    server = FakeServer(lambda own: own, records=2)
    conn = _connection(server)
    loader = BulkLoader()
    try:
        with conn.cursor() as cur:
            loader.load(conn, cur, LOAD, target=TARGET, schema="db", table="t")
    finally:
        loader.close()
    statement = _statement_packet(bytes(server.sent))
    assert bytes(server.sent) == statement + _packet(2, LOAD.data()) + _packet(3, b"")
    assert not conn._local_infile
