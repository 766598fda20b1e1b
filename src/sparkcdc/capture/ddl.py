"""Apply DDL statements to an in-memory schema: classify them into TiDB action types and rebuild tables.

Supported: CREATE/DROP DATABASE, CREATE TABLE (incl. LIKE), DROP TABLE (several), RENAME TABLE (several),
TRUNCATE, CREATE/DROP INDEX and ALTER TABLE with ADD/DROP/MODIFY/CHANGE/RENAME/ALTER COLUMN, ADD/DROP
INDEX/KEY/PRIMARY KEY/UNIQUE, RENAME INDEX, RENAME TO and table options. A statement this module cannot
rebuild a table from raises ``UnsupportedDDL``; the tracker then records the DDL as QUERY and rebuilds
the table from the next TABLE_MAP (``binlog_row_metadata=FULL``). Other statements (GRANT, SET, …) are
not schema changes and produce nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import cast

from sparkcdc.capture.ddl_columns import (
    fill_charsets,
    parse_column_def,
    parse_index_columns,
    parse_index_def,
)
from sparkcdc.capture.ddl_lexer import Cursor
from sparkcdc.errors import CorruptDataError
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo, IndexInfo, TableInfo, with_handle_keys

DEFAULT_CHARSET = "utf8mb4"
DEFAULT_COLLATION = {"utf8mb4": "utf8mb4_general_ci", "utf8mb3": "utf8mb3_general_ci", "latin1": "latin1_swedish_ci",
                     "utf8": "utf8mb3_general_ci", "binary": "binary", "ascii": "ascii_general_ci"}  # fmt: skip
SYSTEM_SCHEMAS = frozenset({"mysql", "information_schema", "performance_schema", "sys"})


class UnsupportedDDL(CorruptDataError):
    """A DDL that changes a table in a way this parser cannot reproduce."""


@dataclass
class SchemaState:
    """Databases (name -> default charset) and tables ((db, name) -> TableInfo) at one point of the binlog."""

    databases: dict[str, str] = field(default_factory=dict)
    tables: dict[tuple[str, str], TableInfo] = field(default_factory=dict)
    next_table_id: int = 100

    def new_table_id(self) -> int:
        self.next_table_id += 1
        return self.next_table_id


@dataclass(frozen=True)
class DDLChange:
    """One DDL event's worth of change. ``pre``/``post`` are the table before/after (None when absent)."""

    action: DDLAction
    schema: str
    table: str
    pre: TableInfo | None
    post: TableInfo | None
    query: str


def _collation_for(charset: str) -> str:
    return DEFAULT_COLLATION.get(charset, f"{charset}_general_ci")


def build_table(
    schema: str,
    name: str,
    table_id: int,
    columns: list[ColumnInfo],
    indexes: list[IndexInfo],
    version: int,
    charset: str,
    collation: str,
) -> TableInfo:
    cols = fill_charsets(columns, charset, collation)
    cols = [replace(col, column_id=i + 1) for i, col in enumerate(cols)]
    return TableInfo(
        schema=schema,
        table=name,
        table_id=table_id,
        columns=with_handle_keys(tuple(cols), tuple(indexes)),
        indexes=tuple(indexes),
        version=version,
        charset=charset,
        collation=collation,
    )


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
        collation = _collation_for(charset)
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
        post = _rebuild(pre, list(pre.columns), indexes, ts)
        self.state.tables[(schema, name)] = post
        action = DDLAction.ADD_INDEX if add is not None else DDLAction.DROP_INDEX
        return [DDLChange(action, schema, name, pre, post, query)]

    # -- ALTER -------------------------------------------------------------------------------------
    def _alter(self, c: Cursor, query: str, default_schema: str, ts: int) -> list[DDLChange]:
        c.next()
        c.accept("ONLINE")
        c.accept("IGNORE")
        if c.accept("DATABASE") or c.accept("SCHEMA"):
            db = default_schema if c.is_kw("DEFAULT", "CHARACTER", "CHARSET", "COLLATE") else c.ident()
            while not c.at_end():
                if c.accept("CHARACTER", "SET") or c.accept("CHARSET"):
                    c.accept_op("=")
                    self.state.databases[db] = c.ident().lower()
                else:
                    c.next()
            return [DDLChange(DDLAction.MODIFY_SCHEMA_CHARSET_AND_COLLATE, db, "", None, None, query)]
        if not c.accept("TABLE"):
            return []
        c.accept("IF", "EXISTS")
        schema, name = c.qualified(default_schema)
        pre = self._table(schema, name)
        if pre is None:
            raise UnsupportedDDL(f"ALTER TABLE on unknown table {schema}.{name}")
        columns = list(pre.columns)
        indexes = list(pre.indexes)
        actions: list[DDLAction] = []
        new_name = (schema, name)
        charset, collation = pre.charset, pre.collation
        while not c.at_end():
            act = self._alter_spec(c, columns, indexes, default_schema)
            if isinstance(act, tuple):
                if act[0] == "rename":
                    new_name = cast(tuple[str, str], act[1])
                    actions.append(DDLAction.RENAME_TABLE)
                else:
                    charset, collation = cast(tuple[str, str], act[1])
                    actions.append(DDLAction.MODIFY_TABLE_CHARSET_AND_COLLATE)
            elif act is not None:
                actions.append(act)
            if not c.accept_op(","):
                break
        if not c.at_end() and not c.is_kw("PARTITION"):
            c.fail("unexpected text after ALTER TABLE specification")
        if not actions:
            return []
        action = actions[0] if len(set(actions)) == 1 else DDLAction.MULTI_SCHEMA_CHANGE
        if len(actions) > 1 and set(actions) == {DDLAction.ADD_COLUMN}:
            action = DDLAction.MULTI_SCHEMA_CHANGE
        post = _rebuild(pre, columns, indexes, ts)
        post = replace(post, schema=new_name[0], table=new_name[1], charset=charset, collation=collation)
        if new_name != (schema, name):
            del self.state.tables[(schema, name)]
        self.state.tables[new_name] = post
        return [DDLChange(action, new_name[0], new_name[1], pre, post, query)]

    def _alter_spec(self, c: Cursor, columns: list[ColumnInfo], indexes: list[IndexInfo],
                    default_schema: str) -> DDLAction | tuple[str, object] | None:
        if c.accept("ADD"):
            if c.is_kw("PRIMARY", "UNIQUE", "KEY", "INDEX", "CONSTRAINT", "FOREIGN", "FULLTEXT", "SPATIAL", "CHECK"):
                is_pk = c.is_kw("PRIMARY") or (c.is_kw("CONSTRAINT") and c.is_kw("PRIMARY", k=2))
                is_fk = c.is_kw("FOREIGN") or (c.is_kw("CONSTRAINT") and c.is_kw("FOREIGN", k=2))
                is_check = c.is_kw("CHECK") or (c.is_kw("CONSTRAINT") and c.is_kw("CHECK", k=2))
                idx = parse_index_def(c, indexes)
                if idx is None:
                    return (DDLAction.ADD_FOREIGN_KEY if is_fk else DDLAction.ADD_CHECK_CONSTRAINT if is_check
                            else DDLAction.NONE)
                if idx.primary:
                    indexes.insert(0, idx)
                else:
                    indexes.append(idx)
                return DDLAction.ADD_PRIMARY_KEY if is_pk else DDLAction.ADD_INDEX
            if c.accept("PARTITION"):
                _skip_rest(c)
                return DDLAction.ADD_TABLE_PARTITION
            c.accept("COLUMN")
            c.accept("IF", "NOT", "EXISTS")
            if c.accept_op("("):
                while True:
                    self._add_col(c, columns, indexes)
                    if c.accept_op(")"):
                        break
                    c.expect_op(",")
                return DDLAction.ADD_COLUMN
            self._add_col(c, columns, indexes)
            return DDLAction.ADD_COLUMN
        if c.accept("DROP"):
            if c.accept("PRIMARY", "KEY"):
                indexes[:] = [i for i in indexes if not i.primary]
                return DDLAction.DROP_PRIMARY_KEY
            if c.accept("INDEX") or c.accept("KEY"):
                c.accept("IF", "EXISTS")
                nm = c.ident()
                indexes[:] = [i for i in indexes if i.name.lower() != nm.lower()]
                return DDLAction.DROP_INDEX
            if c.accept("FOREIGN", "KEY"):
                c.accept("IF", "EXISTS")
                c.ident()
                return DDLAction.DROP_FOREIGN_KEY
            if c.accept("CONSTRAINT") or c.accept("CHECK"):
                c.accept("IF", "EXISTS")
                c.ident()
                return DDLAction.DROP_CHECK_CONSTRAINT
            if c.accept("PARTITION"):
                _skip_rest(c)
                return DDLAction.DROP_TABLE_PARTITION
            c.accept("COLUMN")
            c.accept("IF", "EXISTS")
            nm = c.ident()
            pos = _find(columns, nm)
            if pos < 0:
                raise UnsupportedDDL(f"DROP COLUMN of unknown column {nm}")
            del columns[pos]
            indexes[:] = _drop_col_from_indexes(indexes, nm)
            c.accept("RESTRICT") or c.accept("CASCADE")
            return DDLAction.DROP_COLUMN
        if c.accept("MODIFY"):
            c.accept("COLUMN")
            c.accept("IF", "EXISTS")
            nm = c.ident()
            pos = _find(columns, nm)
            if pos < 0:
                raise UnsupportedDDL(f"MODIFY of unknown column {nm}")
            cd = parse_column_def_with_pos(c, nm)
            del columns[pos]
            _insert_col(columns, cd[0], cd[1], pos)
            return DDLAction.MODIFY_COLUMN
        if c.accept("CHANGE"):
            c.accept("COLUMN")
            c.accept("IF", "EXISTS")
            old = c.ident()
            new = c.ident()
            pos = _find(columns, old)
            if pos < 0:
                raise UnsupportedDDL(f"CHANGE of unknown column {old}")
            cd = parse_column_def_with_pos(c, new)
            del columns[pos]
            _insert_col(columns, cd[0], cd[1], pos)
            if old.lower() != new.lower():
                indexes[:] = _rename_in_indexes(indexes, old, new)
            return DDLAction.MODIFY_COLUMN
        if c.accept("RENAME"):
            if c.accept("COLUMN"):
                old = c.ident()
                c.expect("TO")
                new = c.ident()
                pos = _find(columns, old)
                if pos < 0:
                    raise UnsupportedDDL(f"RENAME COLUMN of unknown column {old}")
                columns[pos] = replace(columns[pos], name=new)
                indexes[:] = _rename_in_indexes(indexes, old, new)
                return DDLAction.MODIFY_COLUMN
            if c.accept("INDEX") or c.accept("KEY"):
                old = c.ident()
                c.expect("TO")
                new = c.ident()
                indexes[:] = [replace(i, name=new) if i.name.lower() == old.lower() else i for i in indexes]
                return DDLAction.RENAME_INDEX
            c.accept("TO") or c.accept("AS")
            return ("rename", c.qualified(default_schema))
        if c.accept("ALTER"):
            if c.accept("INDEX") or c.accept("KEY"):
                c.skip_until_comma_or_close()
                return DDLAction.ALTER_INDEX_VISIBILITY
            c.accept("COLUMN")
            nm = c.ident()
            pos = _find(columns, nm)
            if pos < 0:
                raise UnsupportedDDL(f"ALTER COLUMN of unknown column {nm}")
            if c.accept("SET", "DEFAULT"):
                from sparkcdc.capture.ddl_columns import _default_value

                columns[pos] = replace(columns[pos], default=_default_value(c))
            elif c.accept("DROP", "DEFAULT"):
                columns[pos] = replace(columns[pos], default=None)
            else:
                c.skip_until_comma_or_close()
            return DDLAction.SET_DEFAULT_VALUE
        if c.accept("CONVERT", "TO"):
            c.accept("CHARACTER", "SET") or c.accept("CHARSET")
            cs = c.ident().lower()
            coll = _collation_for(cs)
            if c.accept("COLLATE"):
                coll = c.ident().lower()
            from sparkcdc.model.column_type import TEXT_TYPES

            columns[:] = [replace(col, charset=cs, collation=coll) if col.type in TEXT_TYPES else col
                          for col in columns]
            return ("charset", (cs, coll))
        if c.accept("DEFAULT") or c.is_kw("CHARACTER", "CHARSET", "COLLATE"):
            new_cs: str | None = None
            new_coll: str | None = None
            while not c.at_end() and not c.is_op(","):
                if c.accept("CHARACTER", "SET") or c.accept("CHARSET"):
                    c.accept_op("=")
                    new_cs = c.ident().lower()
                elif c.accept("COLLATE"):
                    c.accept_op("=")
                    new_coll = c.ident().lower()
                else:
                    c.next()
            final_cs = new_cs or (new_coll.split("_")[0] if new_coll else DEFAULT_CHARSET)
            return ("charset", (final_cs, new_coll or _collation_for(final_cs)))
        if c.accept("COMMENT"):
            c.accept_op("=")
            c.next()
            return DDLAction.MODIFY_TABLE_COMMENT
        if c.accept("AUTO_INCREMENT"):
            c.accept_op("=")
            c.next()
            return DDLAction.REBASE_AUTO_ID
        if c.is_kw("ENGINE", "ROW_FORMAT", "ALGORITHM", "LOCK", "KEY_BLOCK_SIZE", "FORCE", "STATS_PERSISTENT"):
            c.skip_until_comma_or_close()
            return None
        if c.is_kw("PARTITION"):  # PARTITION BY: columns are unchanged
            _skip_rest(c)
            return DDLAction.ALTER_TABLE_PARTITIONING
        if c.accept("REMOVE", "PARTITIONING"):
            return DDLAction.REMOVE_PARTITIONING
        for words, action in _PARTITION_SPECS:
            if c.accept(*words):
                _skip_rest(c)
                return action
        c.skip_until_comma_or_close()
        return DDLAction.NONE

    def _add_col(self, c: Cursor, columns: list[ColumnInfo], indexes: list[IndexInfo]) -> None:
        nm = c.ident()
        col, where = parse_column_def_with_pos(c, nm)
        if _find(columns, nm) >= 0:
            return  # ADD COLUMN IF NOT EXISTS of an existing column
        _insert_col(columns, col, where, len(columns))
        if col.primary_key:
            indexes.insert(0, IndexInfo("PRIMARY", (nm,), primary=True, unique=True))
        elif col.unique_key:
            indexes.append(IndexInfo(nm, (nm,), unique=True))


_PARTITION_SPECS: tuple[tuple[tuple[str, ...], DDLAction], ...] = (
    (("TRUNCATE", "PARTITION"), DDLAction.TRUNCATE_TABLE_PARTITION),
    (("REORGANIZE", "PARTITION"), DDLAction.REORGANIZE_PARTITION),
    (("COALESCE", "PARTITION"), DDLAction.REORGANIZE_PARTITION),
    (("EXCHANGE", "PARTITION"), DDLAction.EXCHANGE_TABLE_PARTITION),
    (("REBUILD", "PARTITION"), DDLAction.NONE),
    (("OPTIMIZE", "PARTITION"), DDLAction.NONE),
    (("ANALYZE", "PARTITION"), DDLAction.NONE),
    (("CHECK", "PARTITION"), DDLAction.NONE),
    (("REPAIR", "PARTITION"), DDLAction.NONE),
)


def _skip_rest(c: Cursor) -> None:
    """Partition clauses run to the end of the statement."""
    while not c.at_end():
        if c.is_op("("):
            c.skip_parens()
        else:
            c.next()


def parse_column_def_with_pos(c: Cursor, name: str) -> tuple[ColumnInfo, str | None]:
    """Column definition followed by an optional FIRST / AFTER col. Returns (column, position): position is
    ``""`` for FIRST, the column name for AFTER, None for the end. Inline PRIMARY KEY/UNIQUE set the flags."""
    cd = parse_column_def(c, name)
    col = replace(cd.column, primary_key=cd.inline_primary, unique_key=cd.inline_unique)
    where: str | None = None
    if c.accept("FIRST"):
        where = ""
    elif c.accept("AFTER"):
        where = c.ident()
    return col, where


def _find(columns: list[ColumnInfo], name: str) -> int:
    for i, col in enumerate(columns):
        if col.name.lower() == name.lower():
            return i
    return -1


def _insert_col(columns: list[ColumnInfo], col: ColumnInfo, where: str | None, default_pos: int) -> None:
    if where is None:
        columns.insert(min(default_pos, len(columns)), col)
    elif where == "":
        columns.insert(0, col)
    else:
        pos = _find(columns, where)
        if pos < 0:
            raise UnsupportedDDL(f"AFTER unknown column {where}")
        columns.insert(pos + 1, col)


def _drop_col_from_indexes(indexes: list[IndexInfo], name: str) -> list[IndexInfo]:
    out = []
    for idx in indexes:
        cols = tuple(x for x in idx.columns if x.lower() != name.lower())
        if cols:
            out.append(replace(idx, columns=cols))
    return out


def _rename_in_indexes(indexes: list[IndexInfo], old: str, new: str) -> list[IndexInfo]:
    return [replace(i, columns=tuple(new if x.lower() == old.lower() else x for x in i.columns)) for i in indexes]


def _rebuild(pre: TableInfo, columns: list[ColumnInfo], indexes: list[IndexInfo], ts: int) -> TableInfo:
    # Reset derived key flags, then let with_handle_keys recompute them from the indexes.
    inline_pk = [col.name for col in columns if col.primary_key and not any(i.primary for i in indexes)]
    if inline_pk:
        indexes = [IndexInfo("PRIMARY", tuple(inline_pk), primary=True, unique=True), *indexes]
    pk_names = {n.lower() for i in indexes if i.primary for n in i.columns}
    cleared = [
        replace(col, primary_key=False, unique_key=False, multiple_key=False, handle_key=False,
                nullable=col.nullable and col.name.lower() not in pk_names)
        for col in columns
    ]
    return build_table(pre.schema, pre.table, pre.table_id, cleared, indexes, ts, pre.charset, pre.collation)
