"""Tables and rows shared by the simple-protocol tests (built by hand from the spec's vector inputs)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sparkcdc.codec.simple.config import SimpleConfig
from sparkcdc.codec.simple.decoder import SimpleDecoder
from sparkcdc.codec.simple.encoder import SimpleEncoder
from sparkcdc.model import ColumnInfo, IndexInfo, TableInfo
from sparkcdc.model.table import with_handle_keys


class Clock:
    """A settable millisecond clock for ``buildTs``."""

    def __init__(self, now: int = 1717579824000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def make_table(
    schema: str,
    table: str,
    table_id: int,
    columns: list[ColumnInfo],
    indexes: list[IndexInfo],
    version: int = 0,
) -> TableInfo:
    cols = with_handle_keys(tuple(columns), tuple(indexes))
    return TableInfo(schema, table, table_id, cols, tuple(indexes), version)


def user_table(version: int = 447984074911121426, name: str = "user", with_create_time: bool = False) -> TableInfo:
    """``simple.user`` of the protocol doc: id int PK, name varchar(255), age int, score float."""
    columns = [
        ColumnInfo("id", "int", nullable=False),
        ColumnInfo("name", "varchar", length=255),
        ColumnInfo("age", "int"),
        ColumnInfo("score", "float"),
    ]
    if with_create_time:
        columns.append(ColumnInfo("createTime", "timestamp"))
    return make_table("simple", name, 148, columns, [IndexInfo("PRIMARY", ("id",), primary=True, unique=True)], version)


# Column definitions of vector simple-column-schema-per-type, in the vector's order.
PER_TYPE_COLUMNS: dict[str, ColumnInfo] = {
    "tinyint": ColumnInfo("c", "tinyint"),
    "tinyint unsigned": ColumnInfo("c", "tinyint", unsigned=True),
    "smallint": ColumnInfo("c", "smallint"),
    "smallint unsigned": ColumnInfo("c", "smallint", unsigned=True),
    "mediumint": ColumnInfo("c", "mediumint"),
    "mediumint unsigned": ColumnInfo("c", "mediumint", unsigned=True),
    "int default 100": ColumnInfo("c", "int", default="100"),
    "int unsigned": ColumnInfo("c", "int", unsigned=True),
    "bigint": ColumnInfo("c", "bigint"),
    "bigint unsigned": ColumnInfo("c", "bigint", unsigned=True),
    "float": ColumnInfo("c", "float"),
    "double": ColumnInfo("c", "double"),
    "decimal": ColumnInfo("c", "decimal"),
    "varchar(255)": ColumnInfo("c", "varchar", length=255),
    "char(255)": ColumnInfo("c", "char", length=255),
    "binary(255)": ColumnInfo("c", "binary", length=255),
    "varbinary(255)": ColumnInfo("c", "varbinary", length=255),
    "tinytext": ColumnInfo("c", "tinytext"),
    "text": ColumnInfo("c", "text"),
    "mediumtext": ColumnInfo("c", "mediumtext"),
    "longtext": ColumnInfo("c", "longtext"),
    "tinyblob": ColumnInfo("c", "tinyblob"),
    "blob": ColumnInfo("c", "blob"),
    "mediumblob": ColumnInfo("c", "mediumblob"),
    "longblob": ColumnInfo("c", "longblob"),
    "date": ColumnInfo("c", "date"),
    "datetime": ColumnInfo("c", "datetime"),
    "timestamp": ColumnInfo("c", "timestamp"),
    "time": ColumnInfo("c", "time"),
    "year": ColumnInfo("c", "year"),
    "enum('a','b','c') default 'b'": ColumnInfo("c", "enum", elements=("a", "b", "c"), default="b"),
    "set('a','b','c')": ColumnInfo("c", "set", elements=("a", "b", "c")),
    "bit(10)": ColumnInfo("c", "bit", length=10),
    "json": ColumnInfo("c", "json"),
}

_ALL_TYPES_DECL: dict[str, ColumnInfo] = {
    "id": ColumnInfo("id", "int", nullable=False),
    "c_tinyint_u": ColumnInfo("c_tinyint_u", "tinyint", unsigned=True),
    "c_bigint_u": ColumnInfo("c_bigint_u", "bigint", unsigned=True),
    "c_float": ColumnInfo("c_float", "float"),
    "c_double": ColumnInfo("c_double", "double"),
    "c_decimal": ColumnInfo("c_decimal", "decimal", length=10, decimal=2),
    "c_char": ColumnInfo("c_char", "char", length=10),
    "c_varchar": ColumnInfo("c_varchar", "varchar", length=20),
    "c_binary": ColumnInfo("c_binary", "varbinary", length=10),
    "c_text": ColumnInfo("c_text", "text"),
    "c_date": ColumnInfo("c_date", "date"),
    "c_datetime": ColumnInfo("c_datetime", "datetime", decimal=3),
    "c_timestamp": ColumnInfo("c_timestamp", "timestamp"),
    "c_time": ColumnInfo("c_time", "time"),
    "c_year": ColumnInfo("c_year", "year"),
    "c_enum": ColumnInfo("c_enum", "enum", elements=("a", "b", "c")),
    "c_set": ColumnInfo("c_set", "set", elements=("a", "b", "c")),
    "c_bit": ColumnInfo("c_bit", "bit", length=10),
    "c_json": ColumnInfo("c_json", "json"),
    "c_bool": ColumnInfo("c_bool", "tinyint", length=1),
}


def all_types_table(version: int) -> TableInfo:
    """``test.all_types`` of the canal/simple all-types vectors."""
    return make_table(
        "test",
        "all_types",
        120,
        list(_ALL_TYPES_DECL.values()),
        [IndexInfo("PRIMARY", ("id",), primary=True, unique=True)],
        version,
    )


def vector_value(column: dict[str, Any]) -> Any:
    """A canal vector column's ``new`` value as the model's Python value."""
    value = column["new"]
    if value is None:
        return None
    if isinstance(value, dict):
        raw = bytes.fromhex(value["hex"])
        return raw if column.get("binary") else raw.decode()
    if column["mysql_type"] == "decimal":
        return Decimal(value)
    if column["go_kind"] in ("f32", "f64"):
        return float(value)
    return value


def codec(fmt: str, clock: Clock | None = None, **options: Any) -> tuple[SimpleEncoder, SimpleDecoder]:
    cfg = SimpleConfig.from_options({"encoding-format": fmt, **options})
    return SimpleEncoder(cfg, clock=clock or Clock()), SimpleDecoder(cfg)
