"""Persisted schema history: every table version and every DDL event, keyed by commit-ts.

How table definitions are obtained (the reviewer-relevant choice):

1. At the start position the tracker reads ``SHOW CREATE TABLE`` for every user table (under
   ``FLUSH TABLES WITH READ LOCK`` when starting from "now", so the snapshot matches the position).
2. Every DDL query in the binlog is parsed and applied in commit order (``ddl.py``); the result is the
   table's next version, stamped with the DDL's commit-ts. We never re-read the upstream after a DDL: by
   then later DDLs may already have run.
3. When a DDL cannot be reproduced (exotic syntax) or a table is unknown, the table is rebuilt from its next
   TABLE_MAP event, whose ``binlog_row_metadata=FULL`` metadata carries names, types, charsets, nullability
   and the primary key (unique keys are lost; a warning says so). That version keeps the DDL's commit-ts.

Everything lives in the relay log's index.db and is committed in the same SQLite transaction as the relay
index rows, so a restart reloads exactly the state that matches the durable relay log and produces the same
versions. ``SchemaHistory.load(data_dir)`` is a plain picklable object for executors (no connection).
"""

from __future__ import annotations

import bisect
import json
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

from sparkcdc.capture import table_map as tmm
from sparkcdc.capture.charsets import BINARY_COLLATION, charset_of_collation
from sparkcdc.capture.ddl import DDLApplier, DDLChange, SchemaState, UnsupportedDDL, build_table
from sparkcdc.capture.ddl_lexer import Cursor
from sparkcdc.capture.relay_log import connect_index
from sparkcdc.errors import CorruptDataError, StorageError
from sparkcdc.filter.system_schemas import is_system_schema
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.events import DDLEvent
from sparkcdc.model.table import ColumnInfo, IndexInfo, TableInfo
from sparkcdc.model.table_json import table_from_json, table_to_json

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version(
    schema_name TEXT NOT NULL, table_name TEXT NOT NULL, ts INTEGER NOT NULL, info TEXT,
    PRIMARY KEY (schema_name, table_name, ts));
CREATE TABLE IF NOT EXISTS ddl_event(
    commit_ts INTEGER NOT NULL, seq INTEGER NOT NULL, action INTEGER NOT NULL, query TEXT NOT NULL,
    schema_name TEXT NOT NULL, table_name TEXT NOT NULL, pre TEXT, post TEXT, PRIMARY KEY (commit_ts, seq));
CREATE TABLE IF NOT EXISTS schema_meta(k TEXT NOT NULL, ts INTEGER NOT NULL, v TEXT NOT NULL, PRIMARY KEY (k, ts));
"""

Statement = tuple[str, tuple[Any, ...]]


# -- read side ----------------------------------------------------------------------------------------
class SchemaHistory:
    """All table versions and DDL events, in memory. Picklable; built by ``load`` from a data dir."""

    def __init__(
        self,
        versions: dict[tuple[str, str], list[tuple[int, TableInfo | None]]],
        ddls: dict[int, list[DDLEvent]],
    ) -> None:
        self.versions = versions
        self._ts = {k: [ts for ts, _ in v] for k, v in versions.items()}
        self.ddls = ddls

    @classmethod
    def load(cls, data_dir: str | os.PathLike[str]) -> SchemaHistory:
        """Read the persisted history (raises StorageError when the data dir has none)."""
        conn = connect_index(Path(data_dir) / "relay", readonly=True)
        try:
            return cls.from_connection(conn)
        except sqlite3.Error as e:
            raise StorageError(f"{data_dir}: cannot read schema history: {e}") from e
        finally:
            conn.close()

    @classmethod
    def from_connection(cls, conn: sqlite3.Connection) -> SchemaHistory:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone():
            return cls({}, {})  # a relay log without schema history yet (readers never create tables)
        # A relay log written before a schema joined SYSTEM_SCHEMAS may hold its tables and DDLs: never read them.
        versions: dict[tuple[str, str], list[tuple[int, TableInfo | None]]] = {}
        for schema, table, ts, info in conn.execute(
            "SELECT schema_name, table_name, ts, info FROM schema_version ORDER BY schema_name, table_name, ts"
        ):
            if is_system_schema(schema):
                continue
            versions.setdefault((schema, table), []).append((ts, table_from_json(info) if info else None))
        ddls: dict[int, list[DDLEvent]] = {}
        for ts, _seq, action, query, schema, table, pre, post in conn.execute(
            "SELECT commit_ts, seq, action, query, schema_name, table_name, pre, post FROM ddl_event "
            "ORDER BY commit_ts, seq"
        ):
            if is_system_schema(schema):
                continue
            ddls.setdefault(ts, []).append(
                DDLEvent(
                    commit_ts=ts,
                    action=DDLAction(action),
                    query=query,
                    schema=schema,
                    table=table,
                    table_info=table_from_json(post) if post else None,
                    pre_table_info=table_from_json(pre) if pre else None,
                )
            )
        return cls(versions, ddls)

    def table_info_at(self, schema: str, table: str, ts: int) -> TableInfo | None:
        """The table as of commit-ts ``ts`` (the version with the greatest version-ts <= ts), or None when it
        did not exist then or is unknown."""
        key = (schema, table)
        tss = self._ts.get(key)
        if not tss:
            return None
        i = bisect.bisect_right(tss, ts) - 1
        if i < 0:
            return None
        return self.versions[key][i][1]

    def versions_between(self, schema: str, table: str, after: int, upto: int) -> list[tuple[int, TableInfo | None]]:
        """The versions DDL gave the table with commit-ts in ``(after, upto]``, in commit order (None: the name
        was dropped or renamed away then)."""
        key = (schema, table)
        tss = self._ts.get(key, [])
        return self.versions[key][bisect.bisect_right(tss, after) : bisect.bisect_right(tss, upto)] if tss else []

    def ddl_events_at(self, commit_ts: int) -> list[DDLEvent]:
        return list(self.ddls.get(commit_ts, ()))

    def tables_at(self, ts: int) -> list[TableInfo]:
        """Every table that exists at ``ts``."""
        out = []
        for schema, table in self.versions:
            info = self.table_info_at(schema, table, ts)
            if info is not None:
                out.append(info)
        return out


# -- write side ---------------------------------------------------------------------------------------
_BINLOG_TYPE_NAME = {
    tmm.T_TINY: "tinyint", tmm.T_SHORT: "smallint", tmm.T_INT24: "mediumint", tmm.T_LONG: "int",
    tmm.T_LONGLONG: "bigint", tmm.T_FLOAT: "float", tmm.T_DOUBLE: "double", tmm.T_NEWDECIMAL: "decimal",
    tmm.T_DATE: "date", tmm.T_NEWDATE: "date", tmm.T_DATETIME: "datetime", tmm.T_DATETIME2: "datetime",
    tmm.T_TIMESTAMP: "timestamp", tmm.T_TIMESTAMP2: "timestamp", tmm.T_TIME: "time", tmm.T_TIME2: "time",
    tmm.T_YEAR: "year", tmm.T_BIT: "bit", tmm.T_JSON: "json", tmm.T_GEOMETRY: "geometry", tmm.T_ENUM: "enum",
    tmm.T_SET: "set",
}  # fmt: skip
_BLOB_BY_PACK = {1: ("tinyblob", "tinytext"), 2: ("blob", "text"), 3: ("mediumblob", "mediumtext"),
                 4: ("longblob", "longtext")}  # fmt: skip
_MBMAXLEN = {"utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "ucs2": 2, "utf16": 4, "utf16le": 4, "utf32": 4, "gbk": 2,
             "big5": 2, "gb2312": 2, "sjis": 2, "cp932": 2, "euckr": 2, "ujis": 3, "eucjpms": 3}  # fmt: skip


def table_from_map(m: tmm.TableMap, table_id: int, version: int, previous: TableInfo | None) -> TableInfo:
    """A TableInfo from TABLE_MAP metadata alone (names need binlog_row_metadata=FULL). Unique keys and
    defaults are taken from ``previous`` for columns whose name still exists."""
    cols = []
    prev_cols = {c.name.lower(): c for c in previous.columns} if previous else {}
    for i, typ in enumerate(m.types):
        name = m.names[i] if i < len(m.names) else f"col_{i + 1}"
        coll = m.collations[i] if m.collations else 0
        charset = charset_of_collation(coll) if coll else None
        meta = m.meta[i]
        length: int | None = None
        decimal: int | None = None
        elements: tuple[str, ...] = ()
        if typ in (tmm.T_VARCHAR, tmm.T_VAR_STRING, tmm.T_STRING):
            binary = coll == BINARY_COLLATION
            base = ("varbinary" if binary else "varchar") if typ != tmm.T_STRING else ("binary" if binary else "char")
            length = int(meta) // (1 if binary else _MBMAXLEN.get(charset or "utf8mb4", 1))  # type: ignore[arg-type]
            name_type = base
        elif typ == tmm.T_BLOB:
            blob, text = _BLOB_BY_PACK.get(int(meta), ("longblob", "longtext"))  # type: ignore[arg-type]
            name_type = blob if coll in (0, BINARY_COLLATION) else text
            prev = prev_cols.get(name.lower())
            if prev is not None and prev.type == "json" and name_type == "longtext":
                name_type = "json"
        else:
            name_type = _BINLOG_TYPE_NAME.get(typ, "")
            if not name_type:
                raise CorruptDataError(f"{m.schema}.{m.table}: unsupported binlog column type {typ}")
            if typ == tmm.T_NEWDECIMAL and isinstance(meta, tuple):
                length, decimal = meta
            elif typ in (tmm.T_DATETIME2, tmm.T_TIMESTAMP2, tmm.T_TIME2):
                decimal = int(meta)  # type: ignore[arg-type]
            elif typ == tmm.T_BIT and isinstance(meta, tuple):
                length = meta[1] * 8 + meta[0]
            elif typ == tmm.T_ENUM:
                elements = m.enum_values.get(i, ())
            elif typ == tmm.T_SET:
                elements = m.set_values.get(i, ())
        binary_type = name_type in ("binary", "varbinary") or name_type.endswith("blob") or name_type == "geometry"
        prev = prev_cols.get(name.lower())
        cols.append(
            ColumnInfo(
                name=name,
                type=name_type,
                unsigned=bool(m.unsigned and m.unsigned[i]),
                nullable=m.nullable[i] if i < len(m.nullable) else True,
                charset=None if binary_type or (name_type not in ("char", "varchar") and not name_type.endswith(
                    "text") and name_type not in ("enum", "set", "json")) else (charset or "utf8mb4"),
                length=length,
                decimal=decimal,
                elements=elements,
                default=prev.default if prev else None,
            )
        )
    names = [c.name for c in cols]
    indexes: list[IndexInfo] = []
    if m.primary_key:
        indexes.append(IndexInfo("PRIMARY", tuple(names[i] for i in m.primary_key), primary=True, unique=True))
    if previous is not None:
        lower = {n.lower() for n in names}
        for idx in previous.indexes:
            if not idx.primary and all(c.lower() in lower for c in idx.columns):
                indexes.append(idx)
    schema_cs = previous.charset if previous else "utf8mb4"
    schema_coll = previous.collation if previous else "utf8mb4_general_ci"
    return build_table(m.schema, m.table, table_id, cols, indexes, version, schema_cs, schema_coll)


class SchemaTracker:
    """The puller's schema state. Changes are queued as SQL statements and committed by the relay log's flush
    (same transaction as the index rows)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        conn.executescript(_SCHEMA)
        self.state = SchemaState()
        self.stale: set[tuple[str, str]] = set()
        # Tables snapshotted "now" for a start point in the past: checked against their first table map.
        self.unverified: set[tuple[str, str]] = set()
        self._pending: list[Statement] = []
        self._load()

    def _load(self) -> None:
        meta = dict(self.conn.execute("SELECT k, v FROM schema_meta ORDER BY ts").fetchall())
        self.state.databases = json.loads(meta.get("databases", "{}"))
        self.state.next_table_id = int(meta.get("next_table_id", "100"))
        self.stale = {(str(x[0]), str(x[1])) for x in json.loads(meta.get("stale", "[]"))}
        self.unverified = {(str(x[0]), str(x[1])) for x in json.loads(meta.get("unverified", "[]"))}
        self.bootstrapped = "bootstrap_ts" in meta
        hist = SchemaHistory.from_connection(self.conn)
        for key, versions in hist.versions.items():
            info = versions[-1][1]
            if info is not None:
                self.state.tables[key] = info

    def take_pending(self) -> list[Statement]:
        out = self._pending
        self._pending = []
        return out

    def _save_meta(self, ts: int) -> None:
        for k, v in (
            ("databases", json.dumps(self.state.databases, sort_keys=True)),
            ("next_table_id", str(self.state.next_table_id)),
            ("stale", json.dumps(sorted(self.stale))),
            ("unverified", json.dumps(sorted(self.unverified))),
        ):
            self._pending.append(("INSERT OR REPLACE INTO schema_meta VALUES (?, ?, ?)", (k, ts, v)))

    def _version(self, schema: str, table: str, ts: int, info: TableInfo | None) -> None:
        self._pending.append(
            (
                "INSERT OR REPLACE INTO schema_version VALUES (?, ?, ?, ?)",
                (schema, table, ts, table_to_json(info) if info else None),
            )
        )

    # -- bootstrap ---------------------------------------------------------------------------------
    def bootstrap(self, cursor: Any, ts: int) -> None:
        """Snapshot every user table through a DB-API cursor; versions are ``ts`` (the start TSO)."""
        cursor.execute("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA")
        for db, cs in cursor.fetchall():
            if is_system_schema(db):
                continue
            self.state.databases[db] = cs
        cursor.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
            "ORDER BY TABLE_SCHEMA, TABLE_NAME"
        )
        names = [(s, t) for s, t in cursor.fetchall() if not is_system_schema(s)]
        for schema, table in names:
            cursor.execute(f"SHOW CREATE TABLE `{schema.replace('`', '``')}`.`{table.replace('`', '``')}`")
            ddl = cursor.fetchone()[1]
            try:
                from sparkcdc.capture.ddl import parse_create_table

                info = parse_create_table(ddl, schema, self.state.new_table_id(), ts,
                                          self.state.databases.get(schema, "utf8mb4"))
            except CorruptDataError as e:
                log.warning("schema bootstrap: %s.%s: %s; it will be rebuilt from its table map", schema, table, e)
                self.stale.add((schema, table))
                continue
            self.state.tables[(schema, table)] = info
            self._version(schema, table, ts, info)
        self._pending.append(("INSERT OR REPLACE INTO schema_meta VALUES (?, ?, ?)", ("bootstrap_ts", ts, str(ts))))
        self.bootstrapped = True
        self._save_meta(ts)

    # -- DDL ---------------------------------------------------------------------------------------
    def apply_ddl(self, query: str, default_schema: str, commit_ts: int) -> list[DDLChange]:
        """Apply one DDL at ``commit_ts``; queue the new versions and DDL events. Never raises on SQL it does
        not understand: such statements become action NONE (QUERY) and the affected table goes stale."""
        applier = DDLApplier(self.state)
        before = dict(self.state.tables)
        try:
            changes = applier.apply(query, default_schema, commit_ts)
        except CorruptDataError as e:
            target = _guess_table(query, default_schema)
            log.warning("DDL at ts=%d not reproduced (%s); %s will be rebuilt from its next table map",
                        commit_ts, e, ".".join(target) if target else "no table")
            changes = []
            if target is not None and is_system_schema(target[0]):
                target = None
                query = ""
            if target is not None:
                self.stale.add(target)
                pre = self.state.tables.get(target)
                changes = [DDLChange(DDLAction.NONE, target[0], target[1], pre, pre, query)]
                if pre is not None:
                    bumped = pre.with_version(commit_ts)
                    self.state.tables[target] = bumped
                    changes = [DDLChange(DDLAction.NONE, target[0], target[1], pre, bumped, query)]
            elif query and (isinstance(e, UnsupportedDDL)
                            or query.strip().upper().startswith(("CREATE", "ALTER", "DROP"))):
                changes = [DDLChange(DDLAction.NONE, default_schema, "", None, None, query)]
        # System schemas (mysql.*, tidb_cdc.*, …) are neither tracked nor replicated.
        changes = [ch for ch in changes if not is_system_schema(ch.schema)]
        for key in before.keys() - self.state.tables.keys():
            self._version(key[0], key[1], commit_ts, None)
        for key, info in self.state.tables.items():
            if before.get(key) is not info:
                self._version(key[0], key[1], commit_ts, info)
        for seq, ch in enumerate(changes):
            post = ch.post
            if post is None and ch.action is DDLAction.DROP_TABLE and ch.pre is not None:
                post = ch.pre.with_version(commit_ts)
            self._pending.append(
                (
                    "INSERT OR REPLACE INTO ddl_event VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (commit_ts, seq, int(ch.action), ch.query, ch.schema, ch.table,
                     table_to_json(ch.pre) if ch.pre else None, table_to_json(post) if post else None),
                )
            )
        self._save_meta(commit_ts)
        return changes

    def mark_unverified(self, ts: int) -> None:
        """The snapshot was taken now but capture starts in the past: compare each table with its first table
        map and rebuild it from the map when the columns differ (a DDL ran in between)."""
        self.unverified = set(self.state.tables)
        self._save_meta(ts)

    def needs_table_map(self, schema: str, table: str) -> bool:
        return (schema, table) in self.stale or (schema, table) in self.unverified or (
            (schema, table) not in self.state.tables and not is_system_schema(schema)
        )

    def refresh_from_map(self, m: tmm.TableMap, commit_ts: int) -> None:
        """Rebuild a stale/unknown table from a table map seen in the transaction committed at ``commit_ts``."""
        key = (m.schema, m.table)
        previous = self.state.tables.get(key)
        if key in self.unverified and key not in self.stale:
            self.unverified.discard(key)
            if previous is not None and _same_layout(previous, m):
                self._save_meta(commit_ts)
                return
            log.warning("table %s.%s changed since the start point; rebuilt from its table map at ts=%d",
                        m.schema, m.table, commit_ts)
            self.stale.add(key)
        version = previous.version if previous is not None and key in self.stale else commit_ts
        table_id = previous.table_id if previous is not None else self.state.new_table_id()
        info = table_from_map(m, table_id, version, previous)
        if previous is None or key not in self.stale:
            log.warning("table %s.%s was not in the schema snapshot; built from its table map at ts=%d",
                        m.schema, m.table, commit_ts)
        self.stale.discard(key)
        self.state.tables[key] = info
        self._version(m.schema, m.table, version, info)
        self._save_meta(commit_ts)


def _same_layout(info: TableInfo, m: tmm.TableMap) -> bool:
    """True when the table map's columns (names, and count) match the tracked table."""
    if len(info.columns) != m.column_count:
        return False
    return not m.names or [c.name.lower() for c in info.columns] == [n.lower() for n in m.names]


def _guess_table(query: str, default_schema: str) -> tuple[str, str] | None:
    try:
        c = Cursor(query)
        if c.accept("ALTER") or c.accept("TRUNCATE") or c.accept("CREATE") or c.accept("DROP"):
            c.accept("ONLINE")
            c.accept("IGNORE")
            c.accept("TEMPORARY")
            if c.accept("TABLE"):
                c.accept("IF", "NOT", "EXISTS") or c.accept("IF", "EXISTS")
                return c.qualified(default_schema)
    except CorruptDataError:
        return None
    return None
