"""Apply DDL statements to an in-memory schema: classify them into TiDB action types and rebuild tables.

Supported: CREATE/DROP DATABASE, CREATE TABLE (incl. LIKE), DROP TABLE (several), RENAME TABLE (several),
TRUNCATE, CREATE/DROP INDEX and ALTER TABLE with ADD/DROP/MODIFY/CHANGE/RENAME/ALTER COLUMN, ADD/DROP
INDEX/KEY/PRIMARY KEY/UNIQUE, RENAME INDEX, RENAME TO and table options. A statement this module cannot
rebuild a table from raises ``UnsupportedDDL``; the tracker then records the DDL as QUERY and rebuilds
the table from the next TABLE_MAP (``binlog_row_metadata=FULL``). Other statements (GRANT, SET, …) are
not schema changes and produce nothing.
"""

from __future__ import annotations

from dataclasses import replace

from sparkcdc.capture.ddl_alter import alter_table
from sparkcdc.capture.ddl_columns import parse_column_def, parse_index_columns, parse_index_def
from sparkcdc.capture.ddl_lexer import Cursor
from sparkcdc.capture.ddl_state import (
    DEFAULT_CHARSET,
    DDLChange,
    SchemaState,
    UnsupportedDDL,
    build_table,
    collation_for,
    rebuild_table,
)
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo, IndexInfo, TableInfo

__all__ = [
    "DEFAULT_CHARSET",
    "DDLApplier",
    "DDLChange",
    "SchemaState",
    "UnsupportedDDL",
    "build_table",
    "parse_create_table",
]


def parse_create_table(sql: str, default_schema: str, table_id: int, version: int,
                       db_charset: str = DEFAULT_CHARSET) -> TableInfo:
    """Parse CREATE TABLE (including SHOW CREATE TABLE output) into a TableInfo."""
    c = Cursor(sql)
    c.expect("CREATE")
    c.accept("OR", "REPLACE")
    c.accept("TEMPORARY")
    c.expect("TABLE")
    c.accept("IF", "NOT", "EXISTS")
    schema, name = c.qualified(default_schema)
    return _create_body(c, schema, name, table_id, version, db_charset)


def _create_body(c: Cursor, schema: str, name: str, table_id: int, version: int, db_charset: str) -> TableInfo:
    columns: list[ColumnInfo] = []
    indexes: list[IndexInfo] = []
    c.expect_op("(")
    while True:
        if c.is_kw("PRIMARY", "UNIQUE", "KEY", "INDEX", "CONSTRAINT", "FOREIGN", "FULLTEXT", "SPATIAL", "CHECK",
                   "PERIOD"):
            if c.is_kw("KEY", "INDEX", "CHECK", "PERIOD") and _looks_like_column(c):
                _add_column(c, columns, indexes)
            else:
                idx = parse_index_def(c, indexes)
                if idx is not None:
                    if idx.primary:
                        indexes.insert(0, idx)
                    else:
                        indexes.append(idx)
        else:
            _add_column(c, columns, indexes)
        if c.accept_op(")"):
            break
        c.expect_op(",")
    charset, collation = db_charset, None
    while not c.at_end():
        if c.accept("DEFAULT"):
            continue
        if c.accept("CHARACTER", "SET") or c.accept("CHARSET"):
            c.accept_op("=")
            charset = c.ident().lower()
        elif c.accept("COLLATE"):
            c.accept_op("=")
            collation = c.ident().lower()
        elif c.is_kw("PARTITION"):
            break
        elif c.is_op("("):
            c.skip_parens()
        else:
            c.next()
    if collation is None:
        collation = collation_for(charset)
    elif charset == db_charset and not collation.startswith(charset):
        charset = collation.split("_")[0]
    return build_table(schema, name, table_id, columns, indexes, version, charset, collation)


def _looks_like_column(c: Cursor) -> bool:
    """``key`` / ``index`` / ``check`` can be column names when followed by a type."""
    nxt = c.peek(1)
    return nxt is not None and nxt.kind == "id" and not c.is_op("(", k=1) and nxt.upper not in ("IF", "USING")


def _add_column(c: Cursor, columns: list[ColumnInfo], indexes: list[IndexInfo]) -> None:
    name = c.ident()
    cd = parse_column_def(c, name)
    columns.append(cd.column)
    if cd.inline_primary:
        indexes.insert(0, IndexInfo("PRIMARY", (name,), primary=True, unique=True))
    elif cd.inline_unique:
        indexes.append(IndexInfo(name, (name,), unique=True))


class DDLApplier:
    """Applies one statement to a SchemaState; returns the DDL events it produces (possibly none)."""

    def __init__(self, state: SchemaState) -> None:
        self.state = state

    def apply(self, query: str, default_schema: str, commit_ts: int) -> list[DDLChange]:
        c = Cursor(query)
        if c.at_end():
            return []
        first = c.peek()
        assert first is not None
        kw = first.upper
        if kw == "CREATE":
            return self._create(c, query, default_schema, commit_ts)
        if kw == "DROP":
            return self._drop(c, query, default_schema, commit_ts)
        if kw == "ALTER":
            return self._alter(c, query, default_schema, commit_ts)
        if kw == "RENAME":
            return self._rename(c, query, default_schema, commit_ts)
        if kw == "TRUNCATE":
            c.next()
            c.accept("TABLE")
            schema, name = c.qualified(default_schema)
            pre = self._table(schema, name)
            if pre is None:
                return [DDLChange(DDLAction.TRUNCATE_TABLE, schema, name, None, None, query)]
            post = replace(pre, table_id=self.state.new_table_id(), version=commit_ts)
            self.state.tables[(schema, name)] = post
            return [DDLChange(DDLAction.TRUNCATE_TABLE, schema, name, pre, post, query)]
        return []

    def _table(self, schema: str, name: str) -> TableInfo | None:
        return self.state.tables.get((schema, name))

    # -- CREATE ------------------------------------------------------------------------------------
    def _create(self, c: Cursor, query: str, default_schema: str, ts: int) -> list[DDLChange]:
        c.next()
        c.accept("OR", "REPLACE")
        if c.accept("DATABASE") or c.accept("SCHEMA"):
            c.accept("IF", "NOT", "EXISTS")
            db = c.ident()
            charset = DEFAULT_CHARSET
            while not c.at_end():
                if c.accept("CHARACTER", "SET") or c.accept("CHARSET"):
                    c.accept_op("=")
                    charset = c.ident().lower()
                else:
                    c.next()
            existed = db in self.state.databases
            self.state.databases[db] = charset
            if existed and "IF NOT EXISTS" in query.upper():
                return []
            return [DDLChange(DDLAction.CREATE_SCHEMA, db, "", None, None, query)]
        c.accept("TEMPORARY")
        if c.accept("UNIQUE") or c.accept("FULLTEXT") or c.accept("SPATIAL") or c.is_kw("INDEX"):
            unique = c.toks[c.i - 1].upper == "UNIQUE"
            c.expect("INDEX")
            c.accept("IF", "NOT", "EXISTS")
            idx_name = c.ident()
            c.accept("USING") and c.next()
            c.expect("ON")
            schema, name = c.qualified(default_schema)
            cols = parse_index_columns(c)
            return self._change_indexes(schema, name, query, ts, add=IndexInfo(idx_name, cols, unique=unique))
        if c.is_kw("VIEW") or c.is_kw("ALGORITHM", "DEFINER", "SQL"):
            return [DDLChange(DDLAction.CREATE_VIEW, default_schema, "", None, None, query)]
        if not c.accept("TABLE"):
            return []
        if_not_exists = c.accept("IF", "NOT", "EXISTS")
        schema, name = c.qualified(default_schema)
        if if_not_exists and (schema, name) in self.state.tables:
            return []
        table_id = self.state.new_table_id()
        charset = self.state.databases.get(schema, DEFAULT_CHARSET)
        if c.accept("LIKE") or (c.is_op("(") and c.is_kw("LIKE", k=1)):
            c.accept_op("(")
            c.accept("LIKE")
            src = self._table(*c.qualified(default_schema))
            if src is None:
                raise UnsupportedDDL(f"CREATE TABLE {schema}.{name} LIKE an unknown table")
            post = replace(src, schema=schema, table=name, table_id=table_id, version=ts)
        elif c.is_op("("):
            post = _create_body(c, schema, name, table_id, ts, charset)
        else:
            raise UnsupportedDDL(f"CREATE TABLE {schema}.{name} without a column list")
        self.state.tables[(schema, name)] = post
        return [DDLChange(DDLAction.CREATE_TABLE, schema, name, None, post, query)]

    # -- DROP --------------------------------------------------------------------------------------
    def _drop(self, c: Cursor, query: str, default_schema: str, ts: int) -> list[DDLChange]:
        c.next()
        if c.accept("DATABASE") or c.accept("SCHEMA"):
            c.accept("IF", "EXISTS")
            db = c.ident()
            for key in [k for k in self.state.tables if k[0] == db]:
                del self.state.tables[key]
            if self.state.databases.pop(db, None) is None and "IF EXISTS" in query.upper():
                return []
            return [DDLChange(DDLAction.DROP_SCHEMA, db, "", None, None, query)]
        c.accept("TEMPORARY")
        if c.accept("INDEX"):
            c.accept("IF", "EXISTS")
            idx_name = c.ident()
            c.expect("ON")
            schema, name = c.qualified(default_schema)
            return self._change_indexes(schema, name, query, ts, drop=idx_name)
        if c.accept("VIEW"):
            return [DDLChange(DDLAction.DROP_VIEW, default_schema, "", None, None, query)]
        if not c.accept("TABLE"):
            return []
        c.accept("IF", "EXISTS")
        out = []
        while True:
            schema, name = c.qualified(default_schema)
            pre = self.state.tables.pop((schema, name), None)
            if pre is not None:
                out.append(DDLChange(DDLAction.DROP_TABLE, schema, name, pre, None, f"DROP TABLE `{schema}`.`{name}`"
                                     if self._multi(query) else query))
            if not c.accept_op(","):
                break
        return out

    @staticmethod
    def _multi(query: str) -> bool:
        return "," in query

    # -- RENAME ------------------------------------------------------------------------------------
    def _rename(self, c: Cursor, query: str, default_schema: str, ts: int) -> list[DDLChange]:
        c.next()
        if not (c.accept("TABLE") or c.accept("TABLES")):
            return []
        pairs = []
        while True:
            old = c.qualified(default_schema)
            c.expect("TO")
            new = c.qualified(default_schema)
            pairs.append((old, new))
            if not c.accept_op(","):
                break
        out = []
        action = DDLAction.RENAME_TABLE if len(pairs) == 1 else DDLAction.RENAME_TABLES
        for old, new in pairs:
            pre = self.state.tables.pop(old, None)
            if pre is None:
                raise UnsupportedDDL(f"RENAME of unknown table {old[0]}.{old[1]}")
            post = replace(pre, schema=new[0], table=new[1], version=ts)
            self.state.tables[new] = post
            q = query if len(pairs) == 1 else f"RENAME TABLE `{old[0]}`.`{old[1]}` TO `{new[0]}`.`{new[1]}`"
            out.append(DDLChange(action, new[0], new[1], pre, post, q))
        return out

    # -- indexes -----------------------------------------------------------------------------------
    def _change_indexes(self, schema: str, name: str, query: str, ts: int, add: IndexInfo | None = None,
                        drop: str | None = None) -> list[DDLChange]:
        pre = self._table(schema, name)
        if pre is None:
            raise UnsupportedDDL(f"index change on unknown table {schema}.{name}")
        indexes = [i for i in pre.indexes if drop is None or i.name.lower() != drop.lower()]
        if add is not None:
            indexes.append(add)
        post = rebuild_table(pre, list(pre.columns), indexes, ts)
        self.state.tables[(schema, name)] = post
        action = DDLAction.ADD_INDEX if add is not None else DDLAction.DROP_INDEX
        return [DDLChange(action, schema, name, pre, post, query)]

    # -- ALTER -------------------------------------------------------------------------------------
    def _alter(self, c: Cursor, query: str, default_schema: str, ts: int) -> list[DDLChange]:
        return alter_table(self.state, c, query, default_schema, ts)
