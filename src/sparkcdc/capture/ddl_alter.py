"""ALTER TABLE: apply each specification to a copy of the table's columns and indexes."""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from sparkcdc.capture.ddl_columns import parse_column_def, parse_default, parse_index_def
from sparkcdc.capture.ddl_lexer import Cursor
from sparkcdc.capture.ddl_state import (
    DEFAULT_CHARSET,
    DDLChange,
    SchemaState,
    UnsupportedDDL,
    collation_for,
    rebuild_table,
)
from sparkcdc.model.column_type import TEXT_TYPES
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo, IndexInfo


def alter_table(state: SchemaState, c: Cursor, query: str, default_schema: str, ts: int) -> list[DDLChange]:
    """ALTER TABLE / ALTER DATABASE at the cursor (after ALTER)."""
    c.next()
    c.accept("ONLINE")
    c.accept("IGNORE")
    if c.accept("DATABASE") or c.accept("SCHEMA"):
        db = default_schema if c.is_kw("DEFAULT", "CHARACTER", "CHARSET", "COLLATE") else c.ident()
        while not c.at_end():
            if c.accept("CHARACTER", "SET") or c.accept("CHARSET"):
                c.accept_op("=")
                state.databases[db] = c.ident().lower()
            else:
                c.next()
        return [DDLChange(DDLAction.MODIFY_SCHEMA_CHARSET_AND_COLLATE, db, "", None, None, query)]
    if not c.accept("TABLE"):
        return []
    c.accept("IF", "EXISTS")
    schema, name = c.qualified(default_schema)
    pre = state.tables.get((schema, name))
    if pre is None:
        raise UnsupportedDDL(f"ALTER TABLE on unknown table {schema}.{name}")
    columns = list(pre.columns)
    indexes = list(pre.indexes)
    actions: list[DDLAction] = []
    new_name = (schema, name)
    charset, collation = pre.charset, pre.collation
    while not c.at_end():
        act = _alter_spec(c, columns, indexes, default_schema)
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
    post = rebuild_table(pre, columns, indexes, ts)
    post = replace(post, schema=new_name[0], table=new_name[1], charset=charset, collation=collation)
    if new_name != (schema, name):
        del state.tables[(schema, name)]
    state.tables[new_name] = post
    return [DDLChange(action, new_name[0], new_name[1], pre, post, query)]

def _alter_spec(c: Cursor, columns: list[ColumnInfo], indexes: list[IndexInfo],
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
                _add_col(c, columns, indexes)
                if c.accept_op(")"):
                    break
                c.expect_op(",")
            return DDLAction.ADD_COLUMN
        _add_col(c, columns, indexes)
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
    for verb in ("MODIFY", "CHANGE"):
        if c.accept(verb):
            c.accept("COLUMN")
            c.accept("IF", "EXISTS")
            old = c.ident()
            new = c.ident() if verb == "CHANGE" else old
            pos = _find(columns, old)
            if pos < 0:
                raise UnsupportedDDL(f"{verb} of unknown column {old}")
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
            columns[pos] = replace(columns[pos], default=parse_default(c))
        elif c.accept("DROP", "DEFAULT"):
            columns[pos] = replace(columns[pos], default=None)
        else:
            c.skip_until_comma_or_close()
        return DDLAction.SET_DEFAULT_VALUE
    if c.accept("CONVERT", "TO"):
        c.accept("CHARACTER", "SET") or c.accept("CHARSET")
        cs = c.ident().lower()
        coll = collation_for(cs)
        if c.accept("COLLATE"):
            coll = c.ident().lower()
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
        return ("charset", (final_cs, new_coll or collation_for(final_cs)))
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

def _add_col(c: Cursor, columns: list[ColumnInfo], indexes: list[IndexInfo]) -> None:
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
