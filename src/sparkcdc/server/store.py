"""The embedded metadata store: changefeed info and status in SQLite under ``--data-dir`` (0600 in a 0700 directory:
the sink URIs it holds carry passwords).

Every write is one transaction in WAL mode with ``synchronous=FULL``, so a committed change survives kill -9
and power loss, and a crash mid-write leaves the previous version. Info and status live in separate columns
so the status poller never rewrites the user's configuration. Thread-safe (one connection, one lock):
FastAPI handlers and the poller thread share it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from sparkcdc.changefeed.info import ChangefeedInfo, ChangefeedStatus
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.local_file import PRIVATE_FILE_MODE, private_dir, private_file

ERR_NOT_EXISTS = "CDC:ErrChangeFeedNotExists"
ERR_ALREADY_EXISTS = "CDC:ErrChangeFeedAlreadyExists"
ERR_META = "CDC:ErrMetaStore"
SCHEMA_VERSION = 1


class ChangefeedNotFound(ConfigError):
    default_code = ERR_NOT_EXISTS


class ChangefeedExists(ConfigError):
    default_code = ERR_ALREADY_EXISTS


class MetaStoreError(SparkcdcError):
    default_code = ERR_META


class ChangefeedStore(Protocol):
    """Where changefeeds live, keyed by (namespace, id): ``MetaStore`` (SQLite, one server) or
    ``etcd_store.EtcdStore`` (a cluster of servers). Every method is one atomic change or read."""

    def create(self, info: ChangefeedInfo, status: ChangefeedStatus) -> None: ...
    def get(self, namespace: str, changefeed_id: str) -> tuple[ChangefeedInfo, ChangefeedStatus]: ...
    def list(self, namespace: str | None = None) -> list[tuple[ChangefeedInfo, ChangefeedStatus]]: ...
    def put_info(self, info: ChangefeedInfo) -> None: ...
    def put_status(self, namespace: str, changefeed_id: str, status: ChangefeedStatus) -> None: ...
    def put(self, info: ChangefeedInfo, status: ChangefeedStatus) -> None: ...
    def delete(self, namespace: str, changefeed_id: str) -> bool: ...
    def close(self) -> None: ...


class MetaStore:
    """Changefeeds keyed by (namespace, id) in SQLite. Raises MetaStoreError when the database is unusable."""

    def __init__(self, data_dir: str | Path) -> None:
        self.path = Path(data_dir) / "meta.sqlite3"
        try:
            # The sink URIs in here carry passwords: this user's only, also when made by an older version.
            private_dir(self.path.parent)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE))
            for path in (self.path, *(self.path.with_name(self.path.name + x) for x in ("-wal", "-shm"))):
                private_file(path)  # SQLite creates its -wal and -shm files with the database file's mode
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS changefeed ("
                " namespace TEXT NOT NULL, id TEXT NOT NULL, info TEXT NOT NULL, status TEXT NOT NULL,"
                " PRIMARY KEY (namespace, id))"
            )
            self._conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        except (OSError, sqlite3.Error) as e:
            raise MetaStoreError(f"cannot open the metadata store {self.path}: {e}; check --data-dir") from e
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as e:
                raise MetaStoreError(f"metadata store {self.path}: {e}") from e

    def create(self, info: ChangefeedInfo, status: ChangefeedStatus) -> None:
        """Insert a new changefeed; raises ChangefeedExists (nothing written) when the id is taken."""
        with self._tx() as c:
            row = c.execute("SELECT 1 FROM changefeed WHERE namespace=? AND id=?", (info.namespace, info.id)).fetchone()
            if row is not None:
                raise ChangefeedExists(f"changefeed already exists, {info.id}")
            c.execute(
                "INSERT INTO changefeed (namespace, id, info, status) VALUES (?, ?, ?, ?)",
                (info.namespace, info.id, json.dumps(info.to_record()), json.dumps(status.to_record())),
            )

    def get(self, namespace: str, changefeed_id: str) -> tuple[ChangefeedInfo, ChangefeedStatus]:
        """Raises ChangefeedNotFound."""
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT info, status FROM changefeed WHERE namespace=? AND id=?", (namespace, changefeed_id)
                ).fetchone()
            except sqlite3.Error as e:
                raise MetaStoreError(f"metadata store {self.path}: {e}") from e
        if row is None:
            raise ChangefeedNotFound(f"changefeed not exists, {changefeed_id}")
        return decode_record(row[0], row[1])

    def list(self, namespace: str | None = None) -> list[tuple[ChangefeedInfo, ChangefeedStatus]]:
        """All changefeeds (of one namespace when given), ordered by namespace and id."""
        sql = "SELECT info, status FROM changefeed"
        args: tuple[str, ...] = ()
        if namespace is not None:
            sql += " WHERE namespace=?"
            args = (namespace,)
        with self._lock:
            try:
                rows = self._conn.execute(sql + " ORDER BY namespace, id", args).fetchall()
            except sqlite3.Error as e:
                raise MetaStoreError(f"metadata store {self.path}: {e}") from e
        return [decode_record(i, s) for i, s in rows]

    def put_info(self, info: ChangefeedInfo) -> None:
        """Replace the info of an existing changefeed; raises ChangefeedNotFound."""
        with self._tx() as c:
            cur = c.execute(
                "UPDATE changefeed SET info=? WHERE namespace=? AND id=?",
                (json.dumps(info.to_record()), info.namespace, info.id),
            )
            if cur.rowcount == 0:
                raise ChangefeedNotFound(f"changefeed not exists, {info.id}")

    def put_status(self, namespace: str, changefeed_id: str, status: ChangefeedStatus) -> None:
        """Replace the status; raises ChangefeedNotFound."""
        with self._tx() as c:
            cur = c.execute(
                "UPDATE changefeed SET status=? WHERE namespace=? AND id=?",
                (json.dumps(status.to_record()), namespace, changefeed_id),
            )
            if cur.rowcount == 0:
                raise ChangefeedNotFound(f"changefeed not exists, {changefeed_id}")

    def put(self, info: ChangefeedInfo, status: ChangefeedStatus) -> None:
        """Replace info and status together (one transaction); raises ChangefeedNotFound."""
        with self._tx() as c:
            cur = c.execute(
                "UPDATE changefeed SET info=?, status=? WHERE namespace=? AND id=?",
                (json.dumps(info.to_record()), json.dumps(status.to_record()), info.namespace, info.id),
            )
            if cur.rowcount == 0:
                raise ChangefeedNotFound(f"changefeed not exists, {info.id}")

    def delete(self, namespace: str, changefeed_id: str) -> bool:
        """Remove a changefeed; False when it did not exist."""
        with self._tx() as c:
            cur = c.execute("DELETE FROM changefeed WHERE namespace=? AND id=?", (namespace, changefeed_id))
            return cur.rowcount > 0


def decode_record(info: str, status: str) -> tuple[ChangefeedInfo, ChangefeedStatus]:
    try:
        return ChangefeedInfo.from_record(json.loads(info)), ChangefeedStatus.from_record(json.loads(status))
    except (ValueError, KeyError, TypeError) as e:
        raise MetaStoreError(f"corrupt changefeed record in the metadata store: {e}") from e
