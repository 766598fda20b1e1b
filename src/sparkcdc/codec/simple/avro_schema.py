"""The simple protocol's Avro schema (``spec/simple.md`` §7) and the Avro form of each message.

Messages are plain Avro binary of the ``com.pingcap.simple.avro.Message`` record: no container header, no
fingerprint, no magic byte (what TiCDC's Kafka messages carry). Union branches are chosen explicitly with
fastavro's ``(name, value)`` tuples so FLOAT/DOUBLE and the two value records never guess.
"""

from __future__ import annotations

import io
from typing import Any, Final

import fastavro

from sparkcdc.errors import DecodeError, EncodeError

from . import table_schema
from .message import (
    BOOTSTRAP,
    DDL_TYPES,
    DML_TYPES,
    PROTOCOL_VERSION,
    WATERMARK,
    Checksum,
    SimpleMessage,
    as_bool,
    as_int,
    as_object,
    as_str,
    clean_text,
)

NS: Final = "com.pingcap.simple.avro"
WATERMARK_RECORD: Final = f"{NS}.Watermark"
BOOTSTRAP_RECORD: Final = f"{NS}.Bootstrap"
DDL_RECORD: Final = f"{NS}.DDL"
DML_RECORD: Final = f"{NS}.DML"
TABLE_SCHEMA_RECORD: Final = f"{NS}.TableSchema"
CHECKSUM_RECORD: Final = f"{NS}.Checksum"


def _record(name: str, fields: list[tuple[str, Any]], default_null: tuple[str, ...] = ()) -> dict[str, Any]:
    out = []
    for field_name, field_type in fields:
        entry: dict[str, Any] = {"name": field_name, "type": field_type}
        if field_name in default_null:
            entry["default"] = None
        out.append(entry)
    return {"type": "record", "name": name, "namespace": NS, "fields": out}


def _nullable(t: Any) -> list[Any]:
    return ["null", t]


_STRINGS: Final = {"type": "array", "items": "string"}
_VALUE: Final = ["null", "long", "float", "double", "string", "bytes", f"{NS}.Timestamp", f"{NS}.UnsignedBigint"]

SCHEMA: Final[list[dict[str, Any]]] = [
    _record(
        "DataType",
        [
            ("mysqlType", "string"),
            ("charset", "string"),
            ("collate", "string"),
            ("length", "long"),
            ("decimal", _nullable("int")),
            ("elements", _nullable(_STRINGS)),
            ("unsigned", _nullable("boolean")),
            ("zerofill", _nullable("boolean")),
        ],
        default_null=("decimal", "elements", "unsigned", "zerofill"),
    ),
    _record(
        "ColumnSchema",
        [("name", "string"), ("dataType", f"{NS}.DataType"), ("nullable", "boolean"), ("default", _nullable("string"))],
    ),
    _record(
        "IndexSchema",
        [
            ("name", "string"),
            ("unique", "boolean"),
            ("primary", "boolean"),
            ("nullable", "boolean"),
            ("columns", _STRINGS),
        ],
    ),
    _record(
        "TableSchema",
        [
            ("database", "string"),
            ("table", "string"),
            ("tableID", "long"),
            ("version", "long"),
            ("columns", {"type": "array", "items": f"{NS}.ColumnSchema"}),
            ("indexes", {"type": "array", "items": f"{NS}.IndexSchema"}),
        ],
    ),
    _record("Checksum", [("version", "int"), ("corrupted", "boolean"), ("current", "long"), ("previous", "long")]),
    _record("Watermark", [("version", "int"), ("commitTs", "long"), ("buildTs", "long")]),
    _record("Bootstrap", [("version", "int"), ("buildTs", "long"), ("tableSchema", TABLE_SCHEMA_RECORD)]),
    _record(
        "DDL",
        [
            ("version", "int"),
            ("type", {"type": "enum", "name": "DDLType", "symbols": list(DDL_TYPES)}),
            ("sql", "string"),
            ("commitTs", "long"),
            ("buildTs", "long"),
            ("tableSchema", _nullable(TABLE_SCHEMA_RECORD)),
            ("preTableSchema", _nullable(TABLE_SCHEMA_RECORD)),
        ],
        default_null=("tableSchema", "preTableSchema"),
    ),
    _record("Timestamp", [("location", "string"), ("value", "string")]),
    _record("UnsignedBigint", [("value", "long")]),
    _record(
        "DML",
        [
            ("version", "int"),
            ("database", "string"),
            ("table", "string"),
            ("tableID", "long"),
            ("type", {"type": "enum", "name": "DMLType", "symbols": list(DML_TYPES)}),
            ("commitTs", "long"),
            ("buildTs", "long"),
            ("schemaVersion", "long"),
            ("claimCheckLocation", _nullable("string")),
            ("handleKeyOnly", _nullable("boolean")),
            ("checksum", _nullable(CHECKSUM_RECORD)),
            ("data", _nullable({"type": "map", "values": _VALUE})),
            ("old", _nullable({"type": "map", "values": _VALUE})),
        ],
        default_null=("claimCheckLocation", "handleKeyOnly", "checksum", "data", "old"),
    ),
    _record(
        "Message",
        [
            ("type", {"type": "enum", "name": "MessageType", "symbols": [WATERMARK, BOOTSTRAP, "DDL", "DML"]}),
            ("payload", [WATERMARK_RECORD, BOOTSTRAP_RECORD, DDL_RECORD, DML_RECORD]),
        ],
    ),
]

_PARSED: Final = fastavro.parse_schema(SCHEMA)
# parse_schema of a list yields a union of all named types; the message is its last member.
_MESSAGE: Final = _PARSED[-1] if isinstance(_PARSED, list) else _PARSED


def write(message: dict[str, Any]) -> bytes:
    """Schemaless Avro bytes of a ``Message`` record; raises EncodeError when a value does not fit."""
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, _MESSAGE, message)
    except UnicodeEncodeError:
        # Lone surrogates are not UTF-8: write U+FFFD instead, as Go does for invalid UTF-8 (rare path).
        buf = io.BytesIO()
        try:
            fastavro.schemaless_writer(buf, _MESSAGE, _clean(message))
        except (ValueError, TypeError, OverflowError, KeyError, AttributeError) as e:
            raise EncodeError(f"simple: cannot encode message as Avro: {e}") from e
    except (ValueError, TypeError, OverflowError, KeyError, AttributeError) as e:
        raise EncodeError(f"simple: cannot encode message as Avro: {e}") from e
    return buf.getvalue()


def _clean(value: Any) -> Any:
    """``value`` with every string cleaned of lone surrogates; union tuples stay tuples."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_clean(v) for v in value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def watermark(ts: int, build_ts: int) -> dict[str, Any]:
    body = {"version": PROTOCOL_VERSION, "commitTs": table_schema.to_int64(ts), "buildTs": build_ts}
    return {"type": WATERMARK, "payload": (WATERMARK_RECORD, body)}


def bootstrap(schema: dict[str, Any], build_ts: int) -> dict[str, Any]:
    body = {"version": PROTOCOL_VERSION, "buildTs": build_ts, "tableSchema": schema}
    return {"type": BOOTSTRAP, "payload": (BOOTSTRAP_RECORD, body)}


def ddl(
    ddl_type: str, sql: str, commit_ts: int, build_ts: int, schema: dict[str, Any] | None, pre: dict[str, Any] | None
) -> dict[str, Any]:
    body = {
        "version": PROTOCOL_VERSION,
        "type": ddl_type,
        "sql": sql,
        "commitTs": table_schema.to_int64(commit_ts),
        "buildTs": build_ts,
        "tableSchema": None if schema is None else (TABLE_SCHEMA_RECORD, schema),
        "preTableSchema": None if pre is None else (TABLE_SCHEMA_RECORD, pre),
    }
    return {"type": "DDL", "payload": (DDL_RECORD, body)}


def dml(body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "DML", "payload": (DML_RECORD, body)}


def checksum_record(c: Checksum) -> tuple[str, dict[str, Any]]:
    return CHECKSUM_RECORD, {
        "version": c.version,
        "corrupted": c.corrupted,
        "current": c.current,
        "previous": c.previous,
    }


# --- decoding ----------------------------------------------------------------------------------------


def read(data: bytes) -> SimpleMessage:
    """Parse Avro bytes into a SimpleMessage; raises DecodeError for bad bytes or trailing garbage."""
    buf = io.BytesIO(data)
    try:
        native = fastavro.schemaless_reader(buf, _MESSAGE, None, return_record_name=True)
    except Exception as e:  # fastavro raises many types (EOFError, IndexError, ...) on bad bytes
        raise DecodeError(f"simple: bad Avro message bytes ({type(e).__name__}: {e})") from e
    if buf.tell() != len(data):
        raise DecodeError(f"simple: bad Avro message bytes: {len(data) - buf.tell()} trailing byte(s)")
    try:
        return _message(native)
    except DecodeError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:  # defensive: shape surprises
        raise DecodeError(f"simple: unexpected Avro message shape ({e})") from e


def _unwrap(value: Any, name: str) -> Any:
    """A union member: fastavro gives ``(record name, record)`` tuples with ``return_record_name``."""
    if isinstance(value, tuple):
        if len(value) != 2 or value[0] != name:
            raise DecodeError(f"simple: expected an Avro {name} record, got {value[0]!r}")
        return value[1]
    return value


def _message(native: Any) -> SimpleMessage:
    obj = as_object(native, "message")
    payload = obj.get("payload")
    kind = obj.get("type")
    if not isinstance(payload, tuple) or len(payload) != 2:
        raise DecodeError("simple: Avro payload is not a record")
    record, body = payload[0], as_object(payload[1], "payload")
    expected = {WATERMARK: WATERMARK_RECORD, BOOTSTRAP: BOOTSTRAP_RECORD, "DDL": DDL_RECORD, "DML": DML_RECORD}
    if not isinstance(kind, str) or expected.get(kind) != record:
        raise DecodeError(f"simple: Avro message type {kind!r} does not match its payload {record!r}")
    version = as_int(body.get("version"), "version")
    if version != PROTOCOL_VERSION:
        raise DecodeError(f"simple: unsupported protocol version {version}; expected {PROTOCOL_VERSION}")
    build_ts = as_int(body.get("buildTs"), "buildTs")
    if kind == WATERMARK:
        return SimpleMessage(WATERMARK, table_schema.from_int64(as_int(body.get("commitTs"), "commitTs")), build_ts)
    if kind == BOOTSTRAP:
        schema = table_schema.from_avro(body.get("tableSchema"), "tableSchema")
        return SimpleMessage(BOOTSTRAP, 0, build_ts, table_schema=schema)
    commit_ts = table_schema.from_int64(as_int(body.get("commitTs"), "commitTs"))
    msg_type = as_str(body.get("type"), "type")
    if kind == "DDL":
        raw_schema = body.get("tableSchema")
        raw_pre = body.get("preTableSchema")
        return SimpleMessage(
            msg_type,
            commit_ts,
            build_ts,
            sql=as_str(body.get("sql"), "sql"),
            table_schema=None
            if raw_schema is None
            else table_schema.from_avro(_unwrap(raw_schema, TABLE_SCHEMA_RECORD), "tableSchema"),
            pre_table_schema=None
            if raw_pre is None
            else table_schema.from_avro(_unwrap(raw_pre, TABLE_SCHEMA_RECORD), "preTableSchema"),
        )
    raw_checksum = body.get("checksum")
    checksum = None
    if raw_checksum is not None:
        c = as_object(_unwrap(raw_checksum, CHECKSUM_RECORD), "checksum")
        checksum = Checksum(
            version=as_int(c.get("version"), "checksum.version"),
            corrupted=as_bool(c.get("corrupted"), "checksum.corrupted"),
            current=as_int(c.get("current"), "checksum.current") & 0xFFFFFFFF,
            previous=as_int(c.get("previous"), "checksum.previous") & 0xFFFFFFFF,
        )
    # fastavro only yields values of the schema's types, so the DML members need no further checks.
    location = body["claimCheckLocation"]
    schema_version = body["schemaVersion"]
    return SimpleMessage(
        msg_type,
        commit_ts,
        build_ts,
        database=body["database"],
        table=body["table"],
        table_id=body["tableID"],
        schema_version=schema_version + (1 << 64) if schema_version < 0 else schema_version,
        claim_check_location="" if location is None else location,
        handle_key_only=body["handleKeyOnly"] is True,
        checksum=checksum,
        data=body["data"],
        old=body["old"],
    )
