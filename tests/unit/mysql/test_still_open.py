"""The idle-connection check the applier runs before it reuses a connection (``applier.still_open``)."""

from __future__ import annotations

import socket
from types import SimpleNamespace

from sparkcdc.mysql.applier import still_open


def test_an_idle_connection_is_open_until_the_server_closes_it_or_speaks() -> None:
    ours, server = socket.socketpair()
    conn = SimpleNamespace(_sock=ours)
    assert still_open(conn)
    server.sendall(b"\x17\x00\x00\x00\xff")  # what a server sends before it closes (an error packet)
    assert not still_open(conn)
    ours.recv(16)
    assert still_open(conn)
    server.close()  # a restart: EOF
    assert not still_open(conn)
    ours.close()
    assert not still_open(conn)
    assert not still_open(SimpleNamespace(_sock=None))  # pymysql dropped it after an error
