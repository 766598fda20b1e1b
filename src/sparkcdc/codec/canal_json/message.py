"""The canal-json wire layout: member names and order, java.sql.Types codes, ``mysqlType`` strings.

DML lines are written by TiCDC with a hand-written easyjson writer (``old`` before ``data``); DDL and
WATERMARK messages with a struct marshaller (``data`` before ``old``). ``spec/canal-json.md`` §2, §4, §5, §7.
"""

from __future__ import annotations

import re
from typing import Final

from sparkcdc.errors import DecodeError
from sparkcdc.model import ColumnInfo, DDLAction
from sparkcdc.model.column_type import ALL_TYPES, DEFAULT_FLEN_DECIMAL

# Members of a DML line in byte order; the decoder accepts any order.
DML_MEMBERS: Final = (
    "id",
    "database",
    "table",
    "pkNames",
    "isDdl",
    "type",
    "es",
    "ts",
    "sql",
    "sqlType",
    "mysqlType",
    "old",
    "data",
)
# Members of DDL / WATERMARK messages in struct order: the same, with data before old.
STRUCT_MEMBERS: Final = (*DML_MEMBERS[:-2], "data", "old")
TIDB_MEMBER: Final = "_tidb"
TIDB_MEMBERS: Final = frozenset({"commitTs", "watermarkTs", "onlyHandleKey", "claimCheckLocation"})
WATERMARK_TYPE: Final = "TIDB_WATERMARK"
DML_TYPES: Final = frozenset({"INSERT", "UPDATE", "DELETE"})

# java.sql.Types codes
JAVA_BIT: Final = -7
JAVA_TINYINT: Final = -6
JAVA_BIGINT: Final = -5
JAVA_BINARY: Final = -2
JAVA_NULL: Final = 0
JAVA_CHAR: Final = 1
JAVA_DECIMAL: Final = 3
JAVA_INTEGER: Final = 4
JAVA_SMALLINT: Final = 5
JAVA_REAL: Final = 7
JAVA_DOUBLE: Final = 8
JAVA_VARCHAR: Final = 12
JAVA_DATE: Final = 91
JAVA_TIME: Final = 92
JAVA_TIMESTAMP: Final = 93
JAVA_BLOB: Final = 2004
JAVA_CLOB: Final = 2005

_BASE_SQL_TYPE: Final[dict[str, int]] = {
    "tinyint": JAVA_TINYINT,
    "smallint": JAVA_SMALLINT,
    "mediumint": JAVA_INTEGER,
    "int": JAVA_INTEGER,
    "bigint": JAVA_BIGINT,
    "float": JAVA_REAL,
    "double": JAVA_DOUBLE,
    "decimal": JAVA_DECIMAL,
    "date": JAVA_DATE,
    "datetime": JAVA_TIMESTAMP,
    "timestamp": JAVA_TIMESTAMP,
    "time": JAVA_TIME,
    "year": JAVA_VARCHAR,
    "enum": JAVA_INTEGER,
    "set": JAVA_BIT,
    "bit": JAVA_BIT,
    "char": JAVA_CHAR,
    "varchar": JAVA_VARCHAR,
    "binary": JAVA_BLOB,
    "varbinary": JAVA_BLOB,
    "tinytext": JAVA_CLOB,
    "text": JAVA_CLOB,
    "mediumtext": JAVA_CLOB,
    "longtext": JAVA_CLOB,
    "tinyblob": JAVA_BLOB,
    "blob": JAVA_BLOB,
    "mediumblob": JAVA_BLOB,
    "longblob": JAVA_BLOB,
    "json": JAVA_VARCHAR,
    "vector": JAVA_VARCHAR,
    "geometry": JAVA_BINARY,
}

# UNSIGNED integer columns are promoted to the next wider java type when the value exceeds the signed range
# (Alibaba Canal's rule, kept by TiCDC). MEDIUMINT is never promoted.
_UNSIGNED_PROMOTION: Final[dict[str, tuple[int, int]]] = {
    "tinyint": (127, JAVA_SMALLINT),
    "smallint": (32767, JAVA_INTEGER),
    "int": (2147483647, JAVA_BIGINT),
    "bigint": (9223372036854775807, JAVA_DECIMAL),
}


def base_sql_type(column: ColumnInfo) -> int:
    """The java.sql.Types code of a column before any value-dependent promotion."""
    return _BASE_SQL_TYPE.get(column.type, JAVA_VARCHAR)


def unsigned_promotion(column: ColumnInfo) -> tuple[int, int] | None:
    """``(threshold, promoted code)`` when the code depends on the value (unsigned integers), else None."""
    if not column.unsigned:
        return None
    return _UNSIGNED_PROMOTION.get(column.type)


def sql_type(column: ColumnInfo, value: object) -> int:
    """java.sql.Types code for a column holding ``value`` (NULL keeps the base code)."""
    promotion = unsigned_promotion(column)
    if promotion is not None and isinstance(value, int) and value > promotion[0]:
        return promotion[1]
    return base_sql_type(column)


def short_mysql_type(column: ColumnInfo) -> str:
    """Default ``mysqlType``: the bare type name plus `` unsigned`` / `` zerofill`` (never for bit/year)."""
    text = column.type
    if column.unsigned and text not in ("bit", "year"):
        text += " unsigned"
    if column.zerofill and text != "year":
        text += " zerofill"
    return text


def full_mysql_type(column: ColumnInfo) -> str:
    """``content-compatible`` ``mysqlType``: TiDB's column type description (``int(10) unsigned``)."""
    kind = column.type
    default_flen, default_decimal = DEFAULT_FLEN_DECIMAL.get(kind, (-1, 0))
    decimal = column.decimal if column.decimal is not None else -1
    custom_decimal = decimal not in (default_decimal, 0, -1)
    suffix = ""
    if kind in ("enum", "set"):
        suffix = "('" + "','".join(e.replace("\\", "\\\\").replace("'", "''") for e in column.elements) + "')"
    elif kind in ("timestamp", "datetime", "time"):
        if custom_decimal:
            suffix = f"({decimal})"
    elif kind in ("float", "double"):
        if custom_decimal:
            suffix = f"({column.flen},{decimal})"
    elif kind == "decimal":
        suffix = f"({column.flen},{decimal if decimal != -1 else default_decimal})"
    elif kind in (
        "bit",
        "tinyint",
        "smallint",
        "mediumint",
        "int",
        "bigint",
        "char",
        "varchar",
        "binary",
        "varbinary",
        "year",
    ):
        suffix = f"({column.flen if column.flen != -1 else default_flen})"
    elif kind == "vector" and column.length is not None:
        suffix = f"({column.length})"
    text = kind + suffix
    if column.unsigned and kind not in ("bit", "year"):
        text += " unsigned"
    if column.zerofill and kind != "year":
        text += " zerofill"
    return text


_MYSQL_TYPE_RE = re.compile(r"([a-z_]+)(?:\((.*)\))?((?: unsigned)?)((?: zerofill)?)\Z", re.S | re.I)
_TYPE_ALIASES: Final = {"var_string": "varchar", "numeric": "decimal", "integer": "int", "bool": "tinyint"}


def parse_mysql_type(name: str, text: str, *, where: str) -> ColumnInfo:
    """A ColumnInfo from a ``mysqlType`` string, short (``int unsigned``) or full (``decimal(5,2)``).

    Raises DecodeError for an unknown type or malformed parameters.
    """
    match = _MYSQL_TYPE_RE.match(text.strip())
    if match is None:
        raise DecodeError(f"{where}: mysqlType {text!r:.80} of column {name!r} is not a MySQL type")
    kind = match.group(1).lower()
    kind = _TYPE_ALIASES.get(kind, kind)
    if kind not in ALL_TYPES:
        raise DecodeError(f"{where}: mysqlType {text!r:.80} of column {name!r} is not a MySQL type")
    params = match.group(2)
    length: int | None = None
    decimal: int | None = None
    elements: tuple[str, ...] = ()
    if params is not None:
        if kind in ("enum", "set"):
            elements = _parse_elements(params, name=name, where=where)
        else:
            parts = params.split(",")
            if len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
                raise DecodeError(f"{where}: mysqlType {text!r:.80} of column {name!r} has bad parameters")
            numbers = [int(p) for p in parts]
            if kind in ("timestamp", "datetime", "time"):
                decimal = numbers[0]
            else:
                length = numbers[0]
                decimal = numbers[1] if len(numbers) == 2 else None
    zerofill = bool(match.group(4))
    return ColumnInfo(
        name=name,
        type=kind,
        unsigned=bool(match.group(3)) or zerofill,
        zerofill=zerofill,
        length=length,
        decimal=decimal,
        elements=elements,
    )


def _parse_elements(params: str, *, name: str, where: str) -> tuple[str, ...]:
    """``'a','b''c'`` -> ``('a', "b'c")`` (TiDB doubles quotes and backslashes in element names)."""
    out: list[str] = []
    i, n = 0, len(params)
    while i < n:
        if params[i] != "'":
            raise DecodeError(f"{where}: enum/set elements of column {name!r} are malformed")
        i += 1
        chars: list[str] = []
        while True:
            if i >= n:
                raise DecodeError(f"{where}: enum/set elements of column {name!r} are not terminated")
            ch = params[i]
            if ch == "'" and i + 1 < n and params[i + 1] == "'":
                chars.append("'")
                i += 2
            elif ch == "\\" and i + 1 < n and params[i + 1] == "\\":
                chars.append("\\")
                i += 2
            elif ch == "'":
                i += 1
                break
            else:
                chars.append(ch)
                i += 1
        out.append("".join(chars))
        if i < n:
            if params[i] != ",":
                raise DecodeError(f"{where}: enum/set elements of column {name!r} are malformed")
            i += 1
    return tuple(out)


# canal DDL type -> a representative TiDB action (the canal name covers several actions; see decoder).
DDL_ACTION_OF_TYPE: Final[dict[str, DDLAction]] = {
    "CREATE": DDLAction.CREATE_TABLE,
    "ERASE": DDLAction.DROP_TABLE,
    "RENAME": DDLAction.RENAME_TABLE,
    "TRUNCATE": DDLAction.TRUNCATE_TABLE,
    "CINDEX": DDLAction.ADD_INDEX,
    "DINDEX": DDLAction.DROP_INDEX,
    "ALTER": DDLAction.MODIFY_COLUMN,
    "QUERY": DDLAction.NONE,
}
