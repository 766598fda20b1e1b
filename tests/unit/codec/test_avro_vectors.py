"""TiCDC's own avro test vectors (tiflow ``pkg/sink/codec/avro``: ``avro_test.go``, ``avro_test_data.go``), byte for
byte where the bytes are deterministic: the registered schema texts, each column's Avro type and datum, the
Confluent envelope, names, namespaces and TiCDC's testing-mode DDL and watermark messages."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from typing import Any

import fastavro
import pytest

from sparkcdc.codec.avro import message as wire
from sparkcdc.codec.avro.config import AvroConfig
from sparkcdc.codec.avro.encoder import AvroEncoder
from sparkcdc.codec.avro.schema import table_schemas
from sparkcdc.codec.avro.values import avro_type, datum_writer, decimal_bytes
from sparkcdc.model import DDLAction, DDLEvent, RowChange, RowOp

from .avro_support import TICDC_COLUMNS, MemoryRegistry, large_row, large_table, ticdc_column

# expectedSchemaWithoutExtension: the value schema of testdb.avroencode, one field per line (Go's json.Marshal)
TICDC_FIELDS = [
    '{"name":"id","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}}',
    '{"name":"tiny","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}}',
    '{"default":null,"name":"tinynullable","type":["null",{"type":"int","connect.parameters":{"tidb_type":"INT"}}]}',
    '{"name":"short","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}}',
    '{"default":null,"name":"shortnullable","type":["null",{"type":"int","connect.parameters":{"tidb_type":"INT"}}]}',
    '{"name":"int24","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}}',
    '{"default":null,"name":"int24nullable","type":["null",{"type":"int","connect.parameters":{"tidb_type":"INT"}}]}',
    '{"name":"long","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}}',
    '{"default":null,"name":"longnullable","type":["null",{"type":"int","connect.parameters":{"tidb_type":"INT"}}]}',
    '{"name":"longlong","type":{"type":"long","connect.parameters":{"tidb_type":"BIGINT"}}}',
    '{"default":null,"name":"longlongnullable","type":["null",{"type":"long","connect.parameters":{"tidb_type":"BIGINT"}}]}',
    '{"name":"tinyunsigned","type":{"type":"int","connect.parameters":{"tidb_type":"INT UNSIGNED"}}}',
    '{"default":null,"name":"tinyunsignednullable","type":["null",{"type":"int","connect.parameters":{"tidb_type":"INT UNSIGNED"}}]}',  # noqa: E501
    '{"name":"shortunsigned","type":{"type":"int","connect.parameters":{"tidb_type":"INT UNSIGNED"}}}',
    '{"default":null,"name":"shortunsignednullable","type":["null",{"type":"int","connect.parameters":{"tidb_type":"INT UNSIGNED"}}]}',  # noqa: E501
    '{"name":"int24unsigned","type":{"type":"int","connect.parameters":{"tidb_type":"INT UNSIGNED"}}}',
    '{"default":null,"name":"int24unsignednullable","type":["null",{"type":"int","connect.parameters":{"tidb_type":"INT UNSIGNED"}}]}',  # noqa: E501
    '{"name":"longunsigned","type":{"type":"long","connect.parameters":{"tidb_type":"INT UNSIGNED"}}}',
    '{"default":null,"name":"longunsignednullable","type":["null",{"type":"long","connect.parameters":{"tidb_type":"INT UNSIGNED"}}]}',  # noqa: E501
    '{"name":"longlongunsigned","type":{"type":"long","connect.parameters":{"tidb_type":"BIGINT UNSIGNED"}}}',
    '{"default":null,"name":"longlongunsignednullable","type":["null",{"type":"long","connect.parameters":{"tidb_type":"BIGINT UNSIGNED"}}]}',  # noqa: E501
    '{"name":"float","type":{"type":"float","connect.parameters":{"tidb_type":"FLOAT"}}}',
    '{"default":null,"name":"floatnullable","type":["null",{"type":"float","connect.parameters":{"tidb_type":"FLOAT"}}]}',
    '{"name":"double","type":{"type":"double","connect.parameters":{"tidb_type":"DOUBLE"}}}',
    '{"default":null,"name":"doublenullable","type":["null",{"type":"double","connect.parameters":{"tidb_type":"DOUBLE"}}]}',
    '{"name":"bit","type":{"type":"bytes","connect.parameters":{"length":"1","tidb_type":"BIT"}}}',
    '{"default":null,"name":"bitnullable","type":["null",{"type":"bytes","connect.parameters":{"length":"1","tidb_type":"BIT"}}]}',
    '{"name":"decimal","type":{"type":"bytes","connect.parameters":{"tidb_type":"DECIMAL"},"logicalType":"decimal","precision":10,"scale":0}}',
    '{"default":null,"name":"decimalnullable","type":["null",{"type":"bytes","connect.parameters":{"tidb_type":"DECIMAL"},"logicalType":"decimal","precision":10,"scale":0}]}',
    '{"name":"tinytext","type":{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}}',
    '{"default":null,"name":"tinytextnullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}]}',
    '{"name":"mediumtext","type":{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}}',
    '{"default":null,"name":"mediumtextnullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}]}',
    '{"name":"text","type":{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}}',
    '{"default":null,"name":"textnullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}]}',
    '{"name":"longtext","type":{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}}',
    '{"default":null,"name":"longtextnullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}]}',
    '{"name":"varchar","type":{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}}',
    '{"default":null,"name":"varcharnullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}]}',
    '{"name":"varstring","type":{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}}',
    '{"default":null,"name":"varstringnullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}]}',
    '{"name":"string","type":{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}}',
    '{"default":null,"name":"stringnullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}]}',
    '{"name":"tinyblob","type":{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}}',
    '{"default":null,"name":"tinyblobnullable","type":["null",{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}]}',
    '{"name":"mediumblob","type":{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}}',
    '{"default":null,"name":"mediumblobnullable","type":["null",{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}]}',
    '{"name":"blob","type":{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}}',
    '{"default":null,"name":"blobnullable","type":["null",{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}]}',
    '{"name":"longblob","type":{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}}',
    '{"default":null,"name":"longblobnullable","type":["null",{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}]}',
    '{"name":"varbinary","type":{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}}',
    '{"default":null,"name":"varbinarynullable","type":["null",{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}]}',
    '{"name":"varbinary1","type":{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}}',
    '{"default":null,"name":"varbinary1nullable","type":["null",{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}]}',
    '{"name":"binary","type":{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}}',
    '{"default":null,"name":"binarynullable","type":["null",{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}]}',
    '{"name":"enum","type":{"type":"string","connect.parameters":{"allowed":"a,b","tidb_type":"ENUM"}}}',
    '{"default":null,"name":"enumnullable","type":["null",{"type":"string","connect.parameters":{"allowed":"a,b","tidb_type":"ENUM"}}]}',
    '{"name":"set","type":{"type":"string","connect.parameters":{"allowed":"a,b","tidb_type":"SET"}}}',
    '{"default":null,"name":"setnullable","type":["null",{"type":"string","connect.parameters":{"allowed":"a,b","tidb_type":"SET"}}]}',
    '{"name":"json","type":{"type":"string","connect.parameters":{"tidb_type":"JSON"}}}',
    '{"default":null,"name":"jsonnullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"JSON"}}]}',
    '{"name":"date","type":{"type":"string","connect.parameters":{"tidb_type":"DATE"}}}',
    '{"default":null,"name":"datenullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"DATE"}}]}',
    '{"name":"datetime","type":{"type":"string","connect.parameters":{"tidb_type":"DATETIME"}}}',
    '{"default":null,"name":"datetimenullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"DATETIME"}}]}',
    '{"name":"timestamp","type":{"type":"string","connect.parameters":{"tidb_type":"TIMESTAMP"}}}',
    '{"default":null,"name":"timestampnullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"TIMESTAMP"}}]}',
    '{"name":"time","type":{"type":"string","connect.parameters":{"tidb_type":"TIME"}}}',
    '{"default":null,"name":"timenullable","type":["null",{"type":"string","connect.parameters":{"tidb_type":"TIME"}}]}',
    '{"name":"year","type":{"type":"int","connect.parameters":{"tidb_type":"YEAR"}}}',
    '{"default":null,"name":"yearnullable","type":["null",{"type":"int","connect.parameters":{"tidb_type":"YEAR"}}]}',
]
TICDC_EXTENSION_FIELDS = [
    '{"default":"","name":"_tidb_op","type":"string"}',
    '{"default":0,"name":"_tidb_commit_ts","type":"long"}',
    '{"default":0,"name":"_tidb_commit_physical_time","type":"long"}',
]


def _schema(fields: list[str]) -> str:
    return '{"type":"record","name":"avroencode","namespace":"default.testdb","fields":[' + ",".join(fields) + "]}"


def test_value_schema_is_ticdcs_text_without_and_with_the_extension() -> None:
    table = large_table()
    assert table_schemas(table, AvroConfig()).value == _schema(TICDC_FIELDS)
    assert table_schemas(table, AvroConfig(enable_tidb_extension=True)).value == _schema(
        TICDC_FIELDS + TICDC_EXTENSION_FIELDS
    )


def test_key_schema_holds_the_handle_key_only() -> None:
    schemas = table_schemas(large_table(), AvroConfig(enable_tidb_extension=True))
    assert schemas.key == _schema(TICDC_FIELDS[:1])
    assert schemas.key_positions == (0,)


@pytest.mark.parametrize(("name", "mysql_type", "unsigned", "elements", "value", "kind", "tidb", "datum"),
                         TICDC_COLUMNS)  # fmt: skip
def test_each_column_type_and_datum(
    name: str, mysql_type: str, unsigned: bool, elements: tuple[str, ...], value: Any, kind: str, tidb: str, datum: Any
) -> None:
    """TestColumnToAvroSchema / TestColumnToAvroData with precise decimals and long unsigned bigints."""
    col = ticdc_column(name, mysql_type, unsigned, elements, nullable=False)
    cfg = AvroConfig()
    t = avro_type(col, cfg)
    assert t["type"] == kind and t["connect.parameters"]["tidb_type"] == tidb
    assert datum_writer(col, cfg)(value) == datum


def test_the_handling_modes_change_decimal_and_unsigned_bigint_only() -> None:
    cfg = AvroConfig(decimal_handling_mode="string", bigint_unsigned_handling_mode="string")
    dec = ticdc_column("decimal", "decimal", False, (), nullable=False)
    assert avro_type(dec, cfg) == {"type": "string", "connect.parameters": {"tidb_type": "DECIMAL"}}
    assert datum_writer(dec, cfg)(Decimal("129012.1230000")) == "129012.1230000"
    big = ticdc_column("longlongunsigned", "bigint", True, (), nullable=False)
    assert avro_type(big, cfg) == {"type": "string", "connect.parameters": {"tidb_type": "BIGINT UNSIGNED"}}
    assert datum_writer(big, cfg)(1) == "1"
    assert datum_writer(big, cfg)(18446744073709551615) == "18446744073709551615"
    # long mode: TiCDC's int64(uint64) wraps above 2^63-1
    assert datum_writer(big, AvroConfig())(18446744073709551615) == -1
    precise = avro_type(dec, AvroConfig())
    assert json.dumps(precise, separators=(",", ":")) == (
        '{"type":"bytes","connect.parameters":{"tidb_type":"DECIMAL"},"logicalType":"decimal","precision":10,"scale":0}'
    )


@pytest.mark.parametrize(
    ("value", "scale", "expected"),
    [
        (Decimal("0"), 0, b"\x00"),
        (Decimal("127"), 0, b"\x7f"),
        (Decimal("128"), 0, b"\x00\x80"),
        (Decimal("-1"), 0, b"\xff"),
        (Decimal("-128"), 0, b"\x80"),
        (Decimal("-129"), 0, b"\xff\x7f"),
        (Decimal("-256"), 0, b"\xff\x00"),
        (Decimal("-1.28"), 2, b"\x80"),
        (Decimal("179394.2330"), 4, (1793942330).to_bytes(4, "big", signed=True)),
        (Decimal("129012.1230000"), 0, b"\x01\xf7\xf4"),  # more digits than the scale: floored, as big.Int.Div
    ],
)
def test_decimal_bytes_are_goavros_fewest_twos_complement_bytes(value: Decimal, scale: int, expected: bytes) -> None:
    assert decimal_bytes(value, scale) == expected


def test_envelope_of_schema_8() -> None:
    """TestAvroEnvelope: magic byte, the id big-endian, then the body (``{"id": 7}`` as an Avro int)."""
    schema = fastavro.parse_schema({"type": "record", "name": "avroenvelope", "namespace": "testdb",
                                    "fields": [{"name": "id", "type": "int", "default": 0}]})  # fmt: skip
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, {"id": 7})
    data = wire.envelope(8, buf.getvalue())
    assert data == b"\x00\x00\x00\x00\x08\x0e"
    assert wire.split_envelope(data, "x") == (8, b"\x0e")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("normalColumnName123", "normalColumnName123"),
        ("1ColumnNameStartWithNumber", "_1ColumnNameStartWithNumber"),
        ("A.B", "A_B"),
        ("columnNameWith中文", "columnNameWith__"),
    ],
)
def test_sanitize_name(name: str, expected: str) -> None:
    assert wire.sanitize_name(name) == expected


@pytest.mark.parametrize(
    ("namespace", "schema", "expected"),
    [
        ("normalNamespace", "normalSchema", "normalNamespace.normalSchema"),
        ("1Namespace", "1Schema", "_1Namespace._1Schema"),
        ("N-amespace", "S.chema", "N_amespace.S_chema"),
        ("normalNamespace", "", "normalNamespace"),
    ],
)
def test_avro_namespace(namespace: str, schema: str, expected: str) -> None:
    assert wire.avro_namespace(namespace, schema) == expected


def test_subjects_use_the_topic_with_dots_replaced() -> None:
    assert wire.subject("tidb.db.t", wire.KEY_SUFFIX) == "tidb_db_t-key"
    assert wire.subject("avro-test-topic", wire.VALUE_SUFFIX) == "avro-test-topic-value"


def test_watermark_and_ddl_only_in_ticdcs_testing_mode() -> None:
    """TestResolvedE2E / TestDDLEventE2E: keyless, byte 2 + ts, byte 1 + the DDL's JSON."""
    plain = AvroEncoder(AvroConfig(enable_tidb_extension=True))
    assert plain.encode_watermark(1591943372224) is None
    testing = AvroEncoder(AvroConfig(enable_tidb_extension=True, enable_watermark=True))
    mark = testing.encode_watermark(1591943372224)
    assert mark is not None and mark.key is None
    assert mark.value == b"\x02" + (1591943372224).to_bytes(8, "big")
    ddl = DDLEvent(420000000000000000, DDLAction.CREATE_TABLE, "create table t(a int primary key, b varchar(10))",
                   "test", "t")  # fmt: skip
    message = testing.encode_ddl(ddl)
    assert message is not None and message.key is None
    assert message.value == (
        b'\x01{"query":"create table t(a int primary key, b varchar(10))","type":3,"schema":"test","table":"t",'
        b'"commitTs":420000000000000000}'
    )
    assert AvroEncoder(AvroConfig(enable_watermark=True)).encode_ddl(ddl) is None  # needs the extension too


def test_row_messages_of_the_large_event() -> None:
    """TestAvroEncode: the key holds ``id`` only, the value every column with ``_tidb_op`` "c"."""
    registry = MemoryRegistry()
    encoder = AvroEncoder(AvroConfig(enable_tidb_extension=True), registry)
    table = large_table()
    commit_ts = 417318403368288260
    message = encoder.encode_row(RowChange(commit_ts, table, RowOp.INSERT, None, large_row()), "default")
    assert message.key is not None
    key_id, key_body = wire.split_envelope(message.key, "key")
    assert registry.subjects == {"default-key": [key_id], "default-value": [2]}
    key = fastavro.schemaless_reader(io.BytesIO(key_body), json.loads(registry.schema(key_id)), None)
    assert key == {"id": 1}
    value_id, value_body = wire.split_envelope(message.value, "value")
    value = fastavro.schemaless_reader(io.BytesIO(value_body), json.loads(registry.schema(value_id)), None)
    assert isinstance(value, dict)
    assert value["_tidb_op"] == "c" and value["_tidb_commit_ts"] == commit_ts
    assert value["_tidb_commit_physical_time"] == commit_ts >> 18 == 1591943372224
    assert value["float"] == pytest.approx(3.14, rel=1e-7) and value["floatnullable"] is None
    assert value["decimal"] == Decimal("129012") and value["bit"] == b"\x02\xab" and value["enum"] == "a"
