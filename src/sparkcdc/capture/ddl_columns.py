"""Column and index definitions of CREATE/ALTER TABLE (MySQL/MariaDB syntax, including SHOW CREATE TABLE)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sparkcdc.capture.ddl_lexer import Cursor
from sparkcdc.model.column_type import BINARY_OF_TEXT, TEXT_TYPES
from sparkcdc.model.table import ColumnInfo, IndexInfo

_TYPE_ALIASES = {
    "integer": "int",
    "int1": "tinyint",
    "int2": "smallint",
    "int3": "mediumint",
    "int4": "int",
    "int8": "bigint",
    "middleint": "mediumint",
    "dec": "decimal",
    "numeric": "decimal",
    "fixed": "decimal",
    "real": "double",
    "float4": "float",
    "float8": "double",
    "character": "char",
    "nchar": "char",
    "nvarchar": "varchar",
    "varchar2": "varchar",
    "bool": "tinyint",
    "boolean": "tinyint",
}
_GEOMETRY = {"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
             "geometrycollection"}  # fmt: skip
_KNOWN = {
    "tinyint", "smallint", "mediumint", "int", "bigint", "float", "double", "decimal", "bit", "date", "datetime",
    "timestamp", "time", "year", "char", "varchar", "binary", "varbinary", "tinytext", "text", "mediumtext",
    "longtext", "tinyblob", "blob", "mediumblob", "longblob", "enum", "set", "json", "vector",
}  # fmt: skip
# Words that end a column definition's attribute list.
_INDEX_WORDS = ("PRIMARY", "UNIQUE", "KEY", "INDEX", "CONSTRAINT", "FOREIGN", "FULLTEXT", "SPATIAL", "CHECK", "PERIOD")


@dataclass
class ColumnDef:
    column: ColumnInfo
    inline_primary: bool = False
    inline_unique: bool = False
    json_check: bool = False
    explicit_charset: bool = False


def parse_column_def(c: Cursor, name: str) -> ColumnDef:
    """After the column name: type, arguments and attributes."""
    word = c.ident().lower()
    if word == "national":
        word = c.ident().lower()
    if word == "long":  # LONG VARCHAR / LONG VARBINARY / LONG
        word = {"varchar": "mediumtext", "varbinary": "mediumblob"}.get(c.ident().lower() if c.peek() and
                                                                          c.is_kw("VARCHAR", "VARBINARY")
                                                                          else "", "mediumtext")
    if word == "double" and c.is_kw("PRECISION"):
        c.next()
    if word in ("character", "char") and c.is_kw("VARYING"):
        c.next()
        word = "varchar"
    unsigned = zerofill = False
    length: int | None = None
    decimal: int | None = None
    elements: tuple[str, ...] = ()
    nullable = True
    auto_inc_unique = False
    if word == "serial":
        word, unsigned, nullable, auto_inc_unique = "bigint", True, False, True
    is_bool = word in ("bool", "boolean")
    typ = _TYPE_ALIASES.get(word, word)
    if typ in _GEOMETRY:
        typ = "geometry"
    if typ not in _KNOWN and typ != "geometry":
        c.fail(f"unknown column type {word!r}")
    if is_bool:
        length = 1
    if c.is_op("("):
        if typ in ("enum", "set"):
            c.expect_op("(")
            items = []
            while True:
                items.append(c.next().text)
                if c.accept_op(")"):
                    break
                c.expect_op(",")
            elements = tuple(items)
        else:
            args = [a.strip() for a in c.skip_parens().split(",")]
            length = int(args[0]) if args[0].isdigit() else None
            if len(args) > 1 and args[1].isdigit():
                decimal = int(args[1])
    if typ in ("datetime", "timestamp", "time") and length is not None:
        decimal, length = length, None
    charset: str | None = None
    collation: str | None = None
    explicit_charset = False
    default: str | None = None
    generated: str | None = None
    primary = unique = json_check = False
    binary_attr = False
    while not c.at_end() and not c.is_op(",") and not c.is_op(")") and not c.is_kw("FIRST", "AFTER"):
        if c.accept("UNSIGNED"):
            unsigned = True
        elif c.accept("SIGNED"):
            pass
        elif c.accept("ZEROFILL"):
            zerofill = unsigned = True
        elif c.accept("NOT", "NULL"):
            nullable = False
        elif c.accept("NULL"):
            nullable = True
        elif c.accept("CHARACTER", "SET") or c.accept("CHARSET"):
            charset = c.ident().lower()
            explicit_charset = True
        elif c.accept("ASCII"):
            charset = "latin1"
        elif c.accept("UNICODE"):
            charset = "ucs2"
        elif c.accept("COLLATE"):
            collation = c.ident().lower()
        elif c.accept("BINARY"):
            binary_attr = True
        elif c.accept("DEFAULT"):
            default = parse_default(c)
        elif c.accept("ON", "UPDATE"):
            parse_default(c)
        elif c.accept("AUTO_INCREMENT"):
            pass
        elif c.accept("PRIMARY", "KEY") or c.accept("KEY"):
            primary = True
        elif c.accept("UNIQUE"):
            c.accept("KEY") or c.accept("INDEX")
            unique = True
        elif c.accept("COMMENT"):
            c.next()
        elif c.accept("GENERATED", "ALWAYS") or c.is_kw("AS"):
            c.expect("AS")
            c.skip_parens()
            generated = "virtual"
            if c.accept("STORED") or c.accept("PERSISTENT"):
                generated = "stored"
            else:
                c.accept("VIRTUAL")
        elif c.accept("CHECK"):
            text = c.skip_parens()
            if "json_valid" in text.lower():
                json_check = True
        elif c.accept("CONSTRAINT"):
            if not c.is_kw("CHECK"):
                c.ident()
        elif c.accept("REFERENCES"):
            c.ident()
            if c.accept_op("."):
                c.ident()
            if c.is_op("("):
                c.skip_parens()
            while c.is_kw("ON", "MATCH"):
                c.next()
                c.next()
                if c.is_kw("NULL", "ACTION", "DEFAULT"):
                    c.next()
        elif c.accept("INVISIBLE") or c.accept("VISIBLE") or c.accept("COMPRESSED") or c.accept("WITH", "SYSTEM",
                                                                                              "VERSIONING"):
            if c.accept_op("="):
                c.next()
        elif c.accept("COLUMN_FORMAT") or c.accept("STORAGE") or c.accept("SRID"):
            c.next()
        else:
            c.fail("unknown column attribute")
    if auto_inc_unique:
        unique = True
    if json_check and typ == "longtext":
        typ = "json"
    if typ in TEXT_TYPES and (charset == "binary"):
        typ = BINARY_OF_TEXT[typ]
        charset = collation = None
    if typ in ("binary", "varbinary") or typ.endswith("blob") or typ == "geometry":
        charset = collation = None
    if binary_attr and typ in TEXT_TYPES and collation is None:
        collation = f"{charset}_bin" if charset else "_bin"
    if typ in ("char", "binary") and length is None:
        length = 1
    col = ColumnInfo(
        name=name,
        type=typ,
        unsigned=unsigned,
        zerofill=zerofill,
        nullable=nullable and not primary,
        generated=generated,
        charset=charset,
        collation=collation,
        length=length,
        decimal=decimal,
        elements=elements,
        default=default,
    )
    return ColumnDef(col, primary, unique, json_check, explicit_charset)


def parse_default(c: Cursor) -> str | None:
    if c.is_op("("):
        return "(" + c.skip_parens() + ")"
    t = c.next()
    if t.kind == "op" and t.text in ("-", "+"):
        return t.text + c.next().text if t.text == "-" else c.next().text
    if t.kind == "id" and t.upper == "NULL":
        return None
    if t.kind == "id" and t.upper in ("CURRENT_TIMESTAMP", "NOW", "LOCALTIME", "LOCALTIMESTAMP"):
        if c.is_op("("):
            args = c.skip_parens()
            return "CURRENT_TIMESTAMP" + (f"({args})" if args else "")
        return "CURRENT_TIMESTAMP"
    if t.kind == "id" and c.is_op("("):  # a function call
        return t.text + "(" + c.skip_parens() + ")"
    if t.kind == "id" and t.text.lower() in ("_binary", "_utf8mb4", "_latin1", "_utf8"):
        return c.next().text
    return t.text


def parse_index_columns(c: Cursor) -> tuple[str, ...]:
    c.expect_op("(")
    cols = []
    while True:
        if c.is_op("("):  # functional index part
            c.skip_parens()
            cols.append("")
        else:
            cols.append(c.ident())
            if c.is_op("("):
                c.skip_parens()
        c.accept("ASC") or c.accept("DESC")
        if c.accept_op(")"):
            break
        c.expect_op(",")
    return tuple(x for x in cols if x)


def _skip_index_options(c: Cursor) -> None:
    while not c.at_end() and not c.is_op(",") and not c.is_op(")"):
        if c.is_op("("):
            c.skip_parens()
        else:
            c.next()


def parse_index_def(c: Cursor, existing: list[IndexInfo]) -> IndexInfo | None:
    """A table-level index/constraint at the cursor; None for FOREIGN KEY/CHECK/PERIOD (not tracked)."""
    constraint_name: str | None = None
    if c.accept("CONSTRAINT") and not c.is_kw("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
        constraint_name = c.ident()
    if c.accept("PRIMARY", "KEY"):
        c.accept("USING") and c.next()
        cols = parse_index_columns(c)
        _skip_index_options(c)
        return IndexInfo("PRIMARY", cols, primary=True, unique=True)
    if c.accept("UNIQUE"):
        c.accept("KEY") or c.accept("INDEX")
        name = constraint_name
        if not c.is_op("(") and not c.is_kw("USING"):
            name = c.ident()
        c.accept("USING") and c.next()
        cols = parse_index_columns(c)
        _skip_index_options(c)
        return IndexInfo(name or _auto_name(cols, existing), cols, unique=True)
    if c.is_kw("KEY", "INDEX", "FULLTEXT", "SPATIAL"):
        if c.accept("FULLTEXT") or c.accept("SPATIAL"):
            c.accept("KEY") or c.accept("INDEX")
        else:
            c.next()
        c.accept("IF", "NOT", "EXISTS")
        name = None
        if not c.is_op("(") and not c.is_kw("USING"):
            name = c.ident()
        c.accept("USING") and c.next()
        cols = parse_index_columns(c)
        _skip_index_options(c)
        return IndexInfo(name or _auto_name(cols, existing), cols)
    # FOREIGN KEY, CHECK, PERIOD FOR: not part of TableInfo.
    c.skip_until_comma_or_close()
    return None


def _auto_name(cols: tuple[str, ...], existing: list[IndexInfo]) -> str:
    base = cols[0] if cols else "idx"
    names = {i.name.lower() for i in existing}
    if base.lower() not in names:
        return base
    n = 2
    while f"{base}_{n}".lower() in names:
        n += 1
    return f"{base}_{n}"


def fill_charsets(columns: list[ColumnInfo], charset: str, collation: str | None) -> list[ColumnInfo]:
    """Give text columns without an explicit charset the table's (SHOW CREATE TABLE omits the default)."""
    out = []
    for col in columns:
        if col.type in TEXT_TYPES or col.type in ("enum", "set"):
            cs = col.charset or charset
            coll = col.collation
            if coll == "_bin":
                coll = f"{cs}_bin"
            if coll is None and col.charset is None:
                coll = collation
            col = replace(col, charset=cs, collation=coll)
        elif col.type == "json":
            col = replace(col, charset=col.charset or "utf8mb4", collation=col.collation or "utf8mb4_bin")
        out.append(col)
    return out
