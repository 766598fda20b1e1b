"""TiCDC's avro test table (``avroTestColumns`` / ``newLargeEvent`` of tiflow's avro tests) and an in-memory
registry for the unit tests (integration tests use the real one)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sparkcdc.errors import ConfigError
from sparkcdc.model import ColumnInfo, IndexInfo, TableInfo
from sparkcdc.model.table import with_handle_keys


class MemoryRegistry:
    """Confluent's id rules in memory: one id per distinct schema text, versions per subject; ``refuse`` makes
    ``register`` fail as an incompatible schema does."""

    def __init__(self) -> None:
        self.schemas: dict[int, str] = {}
        self.subjects: dict[str, list[int]] = {}
        self.refuse = False

    def register(self, subject: str, schema: str) -> int:
        if self.refuse:
            raise ConfigError(f"schema of {subject} is incompatible", code="CDC:ErrAvroSchemaAPIError")
        schema_id = next((i for i, s in self.schemas.items() if s == schema), len(self.schemas) + 1)
        self.schemas[schema_id] = schema
        versions = self.subjects.setdefault(subject, [])
        if schema_id not in versions:
            versions.append(schema_id)
        return schema_id

    def schema(self, schema_id: int) -> str:
        return self.schemas[schema_id]


# (name, our type, unsigned, elements, value, avro type, tidb_type, datum): TiCDC's avroTestColumns with the model's
# value for each TiCDC value (ENUM/SET as index/bitmask, BIT as its unsigned integer).
TICDC_COLUMNS: list[tuple[str, str, bool, tuple[str, ...], Any, str, str, Any]] = [
    ("tiny", "tinyint", False, (), 1, "int", "INT", 1),
    ("short", "smallint", False, (), 1, "int", "INT", 1),
    ("int24", "mediumint", False, (), 1, "int", "INT", 1),
    ("long", "int", False, (), 1, "int", "INT", 1),
    ("longlong", "bigint", False, (), 1, "long", "BIGINT", 1),
    ("tinyunsigned", "tinyint", True, (), 1, "int", "INT UNSIGNED", 1),
    ("shortunsigned", "smallint", True, (), 1, "int", "INT UNSIGNED", 1),
    ("int24unsigned", "mediumint", True, (), 1, "int", "INT UNSIGNED", 1),
    ("longunsigned", "int", True, (), 1, "long", "INT UNSIGNED", 1),
    ("longlongunsigned", "bigint", True, (), 1, "long", "BIGINT UNSIGNED", 1),
    ("float", "float", False, (), 3.140000104904175, "float", "FLOAT", 3.140000104904175),
    ("double", "double", False, (), 3.14, "double", "DOUBLE", 3.14),
    ("bit", "bit", False, (), 683, "bytes", "BIT", b"\x02\xab"),
    ("decimal", "decimal", False, (), Decimal("129012.1230000"), "bytes", "DECIMAL", b"\x01\xf7\xf4"),
    ("tinytext", "tinytext", False, (), "hello world", "string", "TEXT", "hello world"),
    ("mediumtext", "mediumtext", False, (), "hello world", "string", "TEXT", "hello world"),
    ("text", "text", False, (), "hello world", "string", "TEXT", "hello world"),
    ("longtext", "longtext", False, (), "hello world", "string", "TEXT", "hello world"),
    ("varchar", "varchar", False, (), "hello world", "string", "TEXT", "hello world"),
    ("varstring", "varchar", False, (), "hello world", "string", "TEXT", "hello world"),
    ("string", "char", False, (), "hello world", "string", "TEXT", "hello world"),
    ("tinyblob", "tinyblob", False, (), b"hello world", "bytes", "BLOB", b"hello world"),
    ("mediumblob", "mediumblob", False, (), b"hello world", "bytes", "BLOB", b"hello world"),
    ("blob", "blob", False, (), b"hello world", "bytes", "BLOB", b"hello world"),
    ("longblob", "longblob", False, (), b"hello world", "bytes", "BLOB", b"hello world"),
    ("varbinary", "varbinary", False, (), b"hello world", "bytes", "BLOB", b"hello world"),
    ("varbinary1", "varbinary", False, (), b"hello world", "bytes", "BLOB", b"hello world"),
    ("binary", "binary", False, (), b"hello world", "bytes", "BLOB", b"hello world"),
    ("enum", "enum", False, ("a", "b"), 1, "string", "ENUM", "a"),
    ("set", "set", False, ("a", "b"), 1, "string", "SET", "a"),
    ("json", "json", False, (), '{"key": "value"}', "string", "JSON", '{"key": "value"}'),
    ("date", "date", False, (), "2000-01-01", "string", "DATE", "2000-01-01"),
    ("datetime", "datetime", False, (), "2015-12-20 23:58:58", "string", "DATETIME", "2015-12-20 23:58:58"),
    ("timestamp", "timestamp", False, (), "1973-12-30 15:30:00", "string", "TIMESTAMP", "1973-12-30 15:30:00"),
    ("time", "time", False, (), "23:59:59", "string", "TIME", "23:59:59"),
    ("year", "year", False, (), 1970, "int", "YEAR", 1970),
]


def ticdc_column(name: str, mysql_type: str, unsigned: bool, elements: tuple[str, ...], nullable: bool) -> ColumnInfo:
    # TiCDC's field types carry no length: BIT and DECIMAL take TiDB's defaults (1; 10, 0)
    return ColumnInfo(name, mysql_type, unsigned=unsigned, elements=elements, nullable=nullable)


def large_table() -> TableInfo:
    """``testdb.avroencode`` of TiCDC's ``newLargeEvent``: ``id`` INT primary key, then every test column NOT NULL
    followed by its nullable twin ``<name>nullable``."""
    columns = [ColumnInfo("id", "int", nullable=False)]
    for name, mysql_type, unsigned, elements, *_ in TICDC_COLUMNS:
        columns.append(ticdc_column(name, mysql_type, unsigned, elements, nullable=False))
        columns.append(ticdc_column(name + "nullable", mysql_type, unsigned, elements, nullable=True))
    indexes = (IndexInfo("PRIMARY", ("id",), primary=True),)
    return TableInfo("testdb", "avroencode", 100, with_handle_keys(tuple(columns), indexes), indexes, 100)


def large_row() -> tuple[Any, ...]:
    values: list[Any] = [1]
    for _, _, _, _, value, *_ in TICDC_COLUMNS:
        values += [value, None]
    return tuple(values)
