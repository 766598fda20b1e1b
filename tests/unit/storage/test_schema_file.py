"""Schema-file bytes, checksums, TableCol from ColumnInfo, the metadata file and worker dispatch."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparkcdc.errors import ConfigError, CorruptDataError
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, TableInfo
from sparkcdc.sink.storage.layout_writer import dispatch_worker
from sparkcdc.storage.metadata import decode_checkpoint, encode_checkpoint
from sparkcdc.storage.schema_file import TableCol, TableDefinition, table_col
from tests import vectors


@pytest.mark.parametrize("v", vectors.params("schema_files"))
def test_schema_file_vectors_round_trip_byte_for_byte(v: dict[str, Any]) -> None:
    e = v["expected"]
    definition = TableDefinition.from_json(e["schema_file"].encode())
    assert definition.to_json() == e["schema_file"].encode()
    assert definition.checksum_input() == e["hash_input"].encode()
    assert definition.checksum() == e["checksum"]
    assert definition.path() == e["path"]
    assert definition.path().endswith(e["file_name"])


def _schema_vector(vid: str) -> dict[str, Any]:
    return next(v["expected"] for v in vectors.load("schema_files") if v["id"] == vid)


def test_realistic_employee_from_table_info() -> None:
    e = _schema_vector("schema-realistic_employee")
    table = TableInfo(
        "test",
        "table1",
        1,
        (
            ColumnInfo("Id", "int", nullable=False, primary_key=True),
            ColumnInfo("LastName", "char", length=20),
            ColumnInfo("FirstName", "varchar", length=30),
            ColumnInfo("HireDate", "datetime"),
            ColumnInfo("OfficeLocation", "blob", length=20),
        ),
    )
    ddl = DDLEvent(441349361156227074, DDLAction.ADD_COLUMN, "ALTER TABLE test.table1 ADD OfficeLocation blob(20)",
                   "test", "table1", table)  # fmt: skip
    [definition] = TableDefinition.from_ddl(ddl)
    assert definition.to_json() == e["schema_file"].encode()
    assert definition.path() == e["path"]


def test_escaping_and_output_column_id_from_table_info() -> None:
    e = _schema_vector("schema-escaping_and_unicode")
    table = TableInfo("数据库", "t<1>", 1, (
        ColumnInfo("a", "varchar", length=10, default="x&y"),
        ColumnInfo("b", "decimal", unsigned=True, length=10, decimal=2),
    ))  # fmt: skip
    definition = TableDefinition.from_table(
        table, 7, query="create table `数据库`.`t<1>` (a varchar(10) default 'x&y', b decimal(10,2) unsigned)",
        ddl_type=DDLAction.CREATE_TABLE,
    )  # fmt: skip
    assert definition.to_json() == e["schema_file"].encode()
    assert definition.checksum() == e["checksum"]

    e = _schema_vector("schema-output_column_id")
    table = TableInfo("s", "t", 1, (
        ColumnInfo("a", "bigint", nullable=False, primary_key=True, column_id=1),
        ColumnInfo("B", "timestamp", decimal=3, default="CURRENT_TIMESTAMP(3)", column_id=2),
    ))  # fmt: skip
    definition = TableDefinition.from_table(table, 9, output_column_id=True)
    assert definition.to_json() == e["schema_file"].encode()
    assert definition.checksum() == e["checksum"]


def test_database_level_and_exchange_partition_ddls() -> None:
    e = _schema_vector("schema-create_database_doc_like")
    ddl = DDLEvent(441349361156227000, DDLAction.CREATE_SCHEMA, "CREATE DATABASE `schema1`", "schema1")
    [definition] = TableDefinition.from_ddl(ddl)
    assert definition.to_json() == e["schema_file"].encode()
    assert definition.path() == e["path"]
    a = TableInfo("s", "p", 1, (ColumnInfo("id", "int"),))
    b = TableInfo("s", "n", 2, (ColumnInfo("id", "int"),))
    ddl = DDLEvent(10, DDLAction.EXCHANGE_TABLE_PARTITION, "ALTER TABLE ...", "s", "p", a, b)
    first, second = TableDefinition.from_ddl(ddl)
    assert (first.table, first.query, first.type) == ("p", "ALTER TABLE ...", 42)
    assert (second.table, second.query, second.type, second.table_version) == ("n", "", 0, 10)


def test_table_without_columns_is_rejected() -> None:
    with pytest.raises(ConfigError, match="has no columns"):
        TableDefinition.from_table(TableInfo("s", "t", 1, ()), 1)


_TYPES = {
    "TypeDuration": "time", "TypeLong": "int", "TypeFloat": "float", "TypeDouble": "double", "TypeTiny": "tinyint",
    "TypeShort": "smallint", "TypeInt24": "mediumint", "TypeLonglong": "bigint", "TypeBit": "bit",
    "TypeVarchar": "varchar", "TypeString": "char", "TypeBlob": "text", "TypeTinyBlob": "tinytext",
    "TypeMediumBlob": "mediumtext", "TypeLongBlob": "longtext", "TypeEnum": "enum", "TypeSet": "set",
    "TypeTimestamp": "timestamp", "TypeDatetime": "datetime", "TypeDate": "date", "TypeYear": "year",
}  # fmt: skip
_BINARY = {"varchar": "varbinary", "char": "binary", "text": "blob", "tinytext": "tinyblob",
           "mediumtext": "mediumblob", "longtext": "longblob"}  # fmt: skip


def _column(i: dict[str, Any]) -> ColumnInfo:
    type_name = _TYPES[i["mysql_type"]]
    if i["charset"] == "binary":  # an explicit binary charset turns string types into binary ones
        type_name = _BINARY.get(type_name, type_name)
    decimal = None if i["decimal"] in (None, -1) else i["decimal"]
    return ColumnInfo("", type_name, unsigned="UnsignedFlag" in i["flags"], primary_key="PriKeyFlag" in i["flags"],
                      length=i["flen"], decimal=decimal)  # fmt: skip


@pytest.mark.parametrize("v", vectors.params("table_col"))
def test_table_col_vectors(v: dict[str, Any]) -> None:
    i = v["input"]
    if i["mysql_type"] == "TypeVarString":  # no ColumnInfo type: MySQL never reports VAR_STRING columns
        col = table_col("", "var_string", flen=i["flen"])
    else:
        col = TableCol.from_column(_column(i))
    assert col.compact_json() == v["expected_compact"]
    assert json.loads(col.compact_json()) == v["expected"]


@pytest.mark.parametrize("v", vectors.params("misc", "metadata-file"))
def test_metadata_file_vector(v: dict[str, Any]) -> None:
    data = encode_checkpoint(v["input"]["checkpoint_ts"])
    assert data == v["expected"]["bytes"].encode()
    assert decode_checkpoint(data) == v["input"]["checkpoint_ts"]
    assert decode_checkpoint(b'{ "checkpoint-ts":433305438660591626 }') == 433305438660591626


@pytest.mark.parametrize("data", [b"", b"[]", b"{}", b'{"checkpoint-ts":"1"}', b'{"checkpoint-ts":-1}', b"{x"])
def test_bad_metadata_is_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptDataError, match="metadata"):
        decode_checkpoint(data)


@pytest.mark.parametrize("v", vectors.params("misc", "worker-dispatch-hash"))
def test_worker_dispatch_vector(v: dict[str, Any]) -> None:
    i = v["input"]
    assert dispatch_worker(i["schema"], i["table"], i["worker_count"]) == v["expected"]["worker"]


@pytest.mark.parametrize(
    "data",
    [b"not json", b"[]", b'{"Table": 1}', b'{"Table":"t","Schema":"s","Version":1,"TableVersion":"5"}',
     b'{"Table":"t","Schema":"s","Version":1,"TableVersion":5,"TableColumns":{}}',
     b'{"Table":"t","Schema":"s","Version":1,"TableVersion":5,"TableColumns":[{"ColumnName":1}]}'],
)  # fmt: skip
def test_corrupt_schema_files_name_the_source(data: bytes) -> None:
    with pytest.raises(CorruptDataError, match=r"db/t/meta/x\.json"):
        TableDefinition.from_json(data, source="db/t/meta/x.json")
