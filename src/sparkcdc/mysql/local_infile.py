"""The only connections allowed to send local files: each sends the server no file but the one its bulk load wrote.

Why this exists: in ``LOAD DATA LOCAL INFILE`` the server answers the statement by naming the file the client is to
send, and pymysql, once ``local_infile`` is on, opens and sends whichever file is named. A downstream that is
malicious or compromised (or anything between it and us) could answer the bulk load's own statement with a request
for any file the cdc process can read, such as the server's ``meta.sqlite3`` with the sinks' passwords. This
connection checks the name first: only while :meth:`OwnFileConnection.sending` runs, and only the file it names,
goes out; any other request is answered with an empty file (nothing of the one named is read) and raises
:class:`ForeignFileRequest`.

The check sits in ``_read_packet``, the one place where every pymysql release since 1.0 reads the server's request
before acting on it (``MySQLResult._read_load_local_packet`` then sends ``LoadLocalPacketWrapper(packet).filename``;
the sending itself moved between releases). It compares exactly those bytes, the path pymysql would open, with the
load's own path. It looks only while a load runs: a row whose first value is NULL starts with the same byte as a
file request, and a load's statement returns no rows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pymysql  # type: ignore[import-untyped]
from pymysql.connections import Connection  # type: ignore[import-untyped]
from pymysql.protocol import LoadLocalPacketWrapper, MysqlPacket  # type: ignore[import-untyped]


class ForeignFileRequest(Exception):
    """The server asked for a local file other than the load's own: nothing of it was sent, and the server was
    answered with an empty file. ``requested`` is the name it gave, ``own`` the load's file."""

    def __init__(self, requested: bytes, own: bytes) -> None:
        super().__init__(requested, own)
        self.requested = requested
        self.own = own


class OwnFileConnection(Connection):  # type: ignore[misc]
    """A pymysql connection made with ``local_infile`` whose local files are off except inside :meth:`sending`
    (the server is told the client can send them, or it would refuse LOCAL outright)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._own_file: bytes | None = None
        super().__init__(*args, **kwargs)
        self._local_infile = False

    @contextmanager
    def sending(self, path: str) -> Iterator[None]:
        """While the statement that loads ``path`` runs: the server may have that file, and no other."""
        self._own_file, self._local_infile = os.fsencode(path), True
        try:
            yield
        finally:
            self._own_file, self._local_infile = None, False

    def _read_packet(self, packet_type: Any = MysqlPacket) -> Any:
        packet = super()._read_packet(packet_type)
        own = self._own_file
        if own is not None and packet.is_load_local_packet():
            requested = LoadLocalPacketWrapper(packet).filename
            if requested != own:
                with suppress(pymysql.MySQLError):  # the connection closed: the server has nothing either
                    self.write_packet(b"")  # an empty file ends the request
                    super()._read_packet()  # the server's answer (0 rows loaded, or an error): back in step
                raise ForeignFileRequest(requested, own)
        return packet
