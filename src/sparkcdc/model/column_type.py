"""MySQL/TiDB column types and the Python value each one is carried as.

Every value inside an event is one of these Python types, chosen so that nothing is lost between the
binlog and every output format (TiCDC's mounter values, ``cdc/entry/mounter.go``):

==========================================  =================================================================
MySQL type                                  Python value
==========================================  =================================================================
TINYINT..BIGINT, signed or UNSIGNED, BOOL   ``int`` (UNSIGNED BIGINT up to 2**64-1)
YEAR                                        ``int`` (``0`` for the zero year)
BIT(n)                                      ``int``: the bits read big-endian as an unsigned integer
FLOAT                                       ``float`` holding an exact float32 value (NaN/Inf become 0.0)
DOUBLE                                      ``float``
DECIMAL(M,D)                                ``decimal.Decimal`` with exactly D fraction digits (``-12.50``)
DATE                                        ``str`` ``YYYY-MM-DD``; zero date ``0000-00-00`` (never None)
DATETIME(fsp), TIMESTAMP(fsp)               ``str`` ``YYYY-MM-DD HH:MM:SS`` + ``.`` + fsp digits when fsp > 0;
                                            TIMESTAMP is rendered in the capture server's time zone
TIME(fsp)                                   ``str`` ``[-]HH:MM:SS[.f]`` with 2-3 hour digits (``-838:59:59``)
CHAR, VARCHAR, *TEXT (non-binary charset)   ``str`` decoded from the column charset
BINARY(n), VARBINARY, *BLOB                 ``bytes`` (BINARY keeps its 0x00 padding)
ENUM                                        ``int``: 1-based element index (0 = the empty error value)
SET                                         ``int``: bitmask, bit i set = element i present
JSON                                        ``str``: the JSON text as the upstream renders it
GEOMETRY                                    ``bytes`` (the server's internal WKB form)
VECTOR                                      ``str`` (``[1,2,3]``)
NULL                                        ``None``
==========================================  =================================================================

Temporal values are strings because MySQL's ranges (zero dates, ``0000-00-00``, ``-838:59:59``,
fsp-exact fractions) do not fit Python's ``datetime``; every TiCDC format writes them as these strings.
"""

from __future__ import annotations

from typing import Final

INTEGER_TYPES: Final = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})
FLOAT_TYPES: Final = frozenset({"float", "double"})
TEMPORAL_TYPES: Final = frozenset({"date", "datetime", "timestamp", "time", "year"})
TEXT_TYPES: Final = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})
BLOB_TYPES: Final = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
ALL_TYPES: Final = (
    INTEGER_TYPES
    | FLOAT_TYPES
    | TEMPORAL_TYPES
    | TEXT_TYPES
    | BLOB_TYPES
    | frozenset({"decimal", "bit", "enum", "set", "json", "geometry", "vector"})
)

# TEXT and BLOB share TiDB type codes; the charset tells them apart.
BINARY_OF_TEXT: Final = {
    "char": "binary",
    "varchar": "varbinary",
    "tinytext": "tinyblob",
    "text": "blob",
    "mediumtext": "mediumblob",
    "longtext": "longblob",
}
TEXT_OF_BINARY: Final = {v: k for k, v in BINARY_OF_TEXT.items()}

# TiDB's default display length (flen) and decimal for a type when the DDL gives none
# (``mysql.GetDefaultFieldLengthAndDecimal``); used by schema files and the simple protocol.
DEFAULT_FLEN_DECIMAL: Final[dict[str, tuple[int, int]]] = {
    "bit": (1, 0),
    "tinyint": (4, 0),
    "smallint": (6, 0),
    "mediumint": (9, 0),
    "int": (11, 0),
    "bigint": (20, 0),
    "double": (22, -1),
    "float": (12, -1),
    "decimal": (10, 0),
    "time": (10, 0),
    "date": (10, 0),
    "timestamp": (19, 0),
    "datetime": (19, 0),
    "year": (4, 0),
    "char": (1, 0),
    "varchar": (5, 0),
    "binary": (1, 0),
    "varbinary": (5, 0),
    "tinytext": (255, 0),
    "tinyblob": (255, 0),
    "text": (65535, 0),
    "blob": (65535, 0),
    "mediumtext": (16777215, 0),
    "mediumblob": (16777215, 0),
    "longtext": (4294967295, 0),
    "longblob": (4294967295, 0),
    "json": (4294967295, 0),
    "enum": (-1, 0),
    "set": (-1, 0),
}

# TiDB's length for integer types depends on signedness (``int`` 11, ``int unsigned`` 10).
UNSIGNED_INT_FLEN: Final = {"tinyint": 3, "smallint": 5, "mediumint": 8, "int": 10, "bigint": 20}


def is_binary_type(type_name: str) -> bool:
    """True for types whose values are ``bytes`` (binary strings, blobs, geometry)."""
    return type_name in BLOB_TYPES or type_name == "geometry"
