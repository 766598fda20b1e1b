"""Avro protocol decoder: a Kafka message (key and value) in, the events TiCDC's avro decoder reads out of it.

A message with a key is a row: with a value, an INSERT or UPDATE (``_tidb_op`` tells them apart; without the TiDB
extension every row reads as an INSERT with commit ts 0, to be applied as an upsert); without one (a tombstone, or
pingcap/ticdc's delete marker that carries the commit ts) a DELETE of the key's columns. A keyless message is a
row of a table without a handle key (magic byte 0), or, in TiCDC's testing mode, a DDL (byte 1) or a watermark
(byte 2). In a topic with watermarks a tombstone (tiflow's TiCDC writes every DELETE so; pingcap/ticdc writes a marker
with the commit ts) gets the smallest commit ts it can have, read in its partition's order: that of the row before
it, or just above the watermark or DDL before it, whichever is larger (a decoder reads one partition). Schemas come from
the registry by the id in each envelope; the table a row belongs to is rebuilt from the
value schema as TiCDC's decoder rebuilds it: the record's name and namespace, each field's ``tidb_type`` and
``connect.parameters``, the key schema's fields as the handle key.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import fastavro

from sparkcdc.codec.avro import message as wire
from sparkcdc.codec.avro.config import AvroConfig
from sparkcdc.codec.avro.registry import SchemaRegistry
from sparkcdc.codec.avro.values import datum_reader
from sparkcdc.codec.base import Message
from sparkcdc.errors import ConfigError, DecodeError
from sparkcdc.model import DDLEvent, Event, ResolvedEvent, RowChange, RowOp, TableInfo
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo

__all__ = ["AvroDecoder", "from_options"]

_TYPES = {
    "INT": "int", "INT UNSIGNED": "int", "BIGINT": "bigint", "BIGINT UNSIGNED": "bigint", "FLOAT": "float",
    "DOUBLE": "double", "BIT": "bit", "DECIMAL": "decimal", "TEXT": "longtext", "BLOB": "longblob", "ENUM": "enum",
    "SET": "set", "JSON": "json", "DATE": "date", "DATETIME": "datetime", "TIMESTAMP": "timestamp", "TIME": "time",
    "YEAR": "year", "TiDBVECTORFloat32": "vector",
}  # fmt: skip


class _Schema:
    """A registered schema, parsed once: fastavro's form and the columns its fields describe."""

    def __init__(self, text: str, schema_id: int) -> None:
        try:
            doc = json.loads(text)
            self.parsed = fastavro.parse_schema(doc, named_schemas={})
        except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException) as e:
            raise DecodeError(f"avro: schema {schema_id} from the registry is not a valid Avro schema: {e}") from e
        if not isinstance(doc, dict) or doc.get("type") != "record":
            raise DecodeError(f"avro: schema {schema_id} from the registry is not a record")
        self.name = str(doc.get("name", ""))
        namespace = str(doc.get("namespace", ""))
        self.schema = namespace.split(".", 1)[1] if "." in namespace else namespace
        self.columns = tuple(_column(f, schema_id) for f in doc.get("fields", ()) if not _extension(f))


def _extension(f: Any) -> bool:
    name = f.get("name", "") if isinstance(f, dict) else ""
    return name in wire.EXTENSION_FIELDS or name in wire.CHECKSUM_FIELDS or name == "_ticdc_before"


def _column(f: Any, schema_id: int) -> ColumnInfo:
    where = f"schema {schema_id}"
    if not isinstance(f, dict) or not isinstance(f.get("name"), str):
        raise DecodeError(f"avro: {where} has a field that is not a named field")
    t = f["type"]
    nullable = isinstance(t, list) and "null" in t
    if isinstance(t, list):
        t = next((b for b in t if b != "null"), None)
    if not isinstance(t, dict) or not isinstance(t.get("connect.parameters"), dict):
        raise DecodeError(f"avro: {where} field {f['name']!r} has no connect.parameters; not TiCDC's avro protocol")
    params = t["connect.parameters"]
    tidb_type = params.get("tidb_type")
    kind = _TYPES.get(tidb_type) if isinstance(tidb_type, str) else None
    if kind is None:
        raise DecodeError(f"avro: {where} field {f['name']!r} has tidb_type {tidb_type!r}, unknown to TiCDC")
    length = decimal = None
    elements: tuple[str, ...] = ()
    if kind == "bit":
        length = int(params.get("length", "1"))
    elif kind == "decimal" and t.get("logicalType") == "decimal":
        length, decimal = int(t.get("precision", 10)), int(t.get("scale", 0))
    elif kind in ("enum", "set"):
        elements = _elements(str(params.get("allowed", "")))
    return ColumnInfo(f["name"], kind, unsigned="UNSIGNED" in tidb_type, nullable=nullable, length=length,
                      decimal=decimal, elements=elements)  # fmt: skip


def _elements(allowed: str) -> tuple[str, ...]:
    """``allowed`` split at the commas TiCDC did not escape (an element's own commas are ``\\,``)."""
    out, cur, i = [], [], 0
    while i < len(allowed):
        if allowed.startswith("\\,", i):
            cur.append(",")
            i += 2
        elif allowed[i] == ",":
            out.append("".join(cur))
            cur = []
            i += 1
        else:
            cur.append(allowed[i])
            i += 1
    if allowed:
        out.append("".join(cur))
    return tuple(out)


class AvroDecoder:
    """Implements ``codec.base.MessageDecoder`` for ``protocol=avro``; schemas are fetched once per id."""

    def __init__(self, config: AvroConfig | None = None, registry: SchemaRegistry | None = None) -> None:
        self.config = config or AvroConfig()
        self.registry = registry
        self._schemas: dict[int, _Schema] = {}
        self._tables: dict[tuple[int, int], tuple[TableInfo, tuple[Any, ...]]] = {}
        self._floor = 0  # the smallest commit ts the next row of this partition can have (with watermarks)

    def decode(self, message: Message) -> Iterator[Event]:
        """The events of one message. Raises DecodeError naming what is wrong, and the registry's errors."""
        key, value = message.key, message.value
        if key is None:
            if not value:
                raise DecodeError("avro: a message without key and value")
            if value[0] == wire.DDL_BYTE:
                ddl = _ddl(value)
                self._floor = max(self._floor, ddl.commit_ts + 1)
                yield ddl
            elif value[0] == wire.CHECKPOINT_BYTE:
                ts = wire.read_ts(value, "the watermark")
                self._floor = max(self._floor, ts + 1)
                yield ResolvedEvent(ts)
            else:
                yield self._row(None, value)
            return
        yield self._row(key, value)

    def _row(self, key: bytes | None, value: bytes | None) -> RowChange:
        key_id, key_schema, key_datum = self._read(key, "the key") if key is not None else (0, None, None)
        if not value or value[0] == wire.DELETE_BYTE:
            if key_schema is None or key_datum is None:
                raise DecodeError("avro: a delete (a message without value) has no key")
            commit_ts = wire.read_ts(value, "the delete marker") if value else 0
            if not commit_ts and self.config.watermarks:
                commit_ts = self._floor
            self._floor = max(self._floor, commit_ts)
            table, readers = self._table(key_id, key_schema, key_id, key_schema)
            return RowChange(commit_ts, table, RowOp.DELETE, _image(table, readers, key_datum), None)
        value_id, value_schema, datum = self._read(value, "the value")
        table, readers = self._table(value_id, value_schema, key_id, key_schema)
        commit_ts = datum.get(wire.TIDB_COMMIT_TS, 0)
        self._floor = max(self._floor, int(commit_ts))
        op = RowOp.INSERT
        if datum.get(wire.TIDB_OP) == wire.UPDATE_OP:
            op = RowOp.UPDATE
        image = _image(table, readers, datum)
        # TiCDC writes no old value: an UPDATE's before image is its key, which is all an apply engine needs
        before = tuple(v if c.handle_key else None for c, v in zip(table.columns, image, strict=True))
        if op is RowOp.UPDATE:
            return RowChange(int(commit_ts), table, op, before, image)
        return RowChange(int(commit_ts), table, op, None, image)

    def _read(self, data: bytes, where: str) -> tuple[int, _Schema, dict[str, Any]]:
        schema_id, body = wire.split_envelope(data, where)
        schema = self._schema(schema_id)
        try:
            datum = fastavro.schemaless_reader(io.BytesIO(body), schema.parsed, None)
        except (EOFError, ValueError, TypeError, IndexError, UnicodeDecodeError) as e:
            raise DecodeError(f"avro: {where} does not match its schema {schema_id}: {e}") from e
        if not isinstance(datum, dict):
            raise DecodeError(f"avro: {where} is not a record")
        return schema_id, schema, datum

    def _schema(self, schema_id: int) -> _Schema:
        found = self._schemas.get(schema_id)
        if found is None:
            if self.registry is None:
                raise ConfigError("avro: a schema registry is needed to read avro messages; set --schema-registry",
                                  code="CDC:ErrAvroSchemaAPIError")  # fmt: skip
            found = self._schemas[schema_id] = _Schema(self.registry.schema(schema_id), schema_id)
        return found

    def _table(
        self, value_id: int, value: _Schema, key_id: int, key: _Schema | None
    ) -> tuple[TableInfo, tuple[Any, ...]]:
        found = self._tables.get((value_id, key_id))
        if found is None:
            keys = {c.name for c in key.columns} if key is not None else set()
            columns = tuple(
                replace(
                    c, nullable=c.nullable and c.name not in keys, primary_key=c.name in keys, handle_key=c.name in keys
                )
                for c in value.columns
            )
            table = TableInfo(value.schema, value.name, 0, columns)
            found = self._tables[(value_id, key_id)] = (table, tuple(datum_reader(c, self.config) for c in columns))
        return found


def _image(table: TableInfo, readers: tuple[Any, ...], datum: Mapping[str, Any]) -> tuple[Any, ...]:
    out = []
    for col, read in zip(table.columns, readers, strict=True):
        if col.name not in datum:
            raise DecodeError(f"avro: a record of {table.qualified_name} has no field {col.name!r}")
        v = datum[col.name]
        out.append(None if v is None else read(v))
    return tuple(out)


def _ddl(value: bytes) -> DDLEvent:
    try:
        doc = json.loads(value[1:])
        return DDLEvent(int(doc["commitTs"]), DDLAction(int(doc["type"])), str(doc["query"]), str(doc["schema"]),
                        str(doc["table"]))  # fmt: skip
    except (ValueError, KeyError, TypeError) as e:
        raise DecodeError(f"avro: a DDL message is not TiCDC's DDL JSON: {e}") from e


def from_options(options: Mapping[str, Any]) -> AvroDecoder:
    """The registry's factory: TiCDC's option names, plus ``registry`` (a ``SchemaRegistry``)."""
    return AvroDecoder(AvroConfig.from_options(options), options.get("registry"))
