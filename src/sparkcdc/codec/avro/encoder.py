"""Avro protocol encoder: one row in, one Kafka message (key and value, each in Confluent's envelope) out.

As TiCDC's ``BatchEncoder``: the key holds the handle-key columns, the value every column (plus the TiDB extension
fields); a DELETE is its key with no value, an INSERT or UPDATE the key and the new image (TiCDC writes no old
values). Splitting a key-changing UPDATE into DELETE and INSERT is the sink's job (``model.events.split_key_updates``).
Schemas are registered under the topic's subjects the first time a table version is written to it and whenever a
DDL changed what they hold (TiCDC registers again for every new table version; the registry answers an unchanged
schema with its existing id, so the ids are the same).

With ``enable-tidb-extension`` and ``avro-enable-watermark`` (TiCDC's testing mode) DDLs and watermarks become
keyless messages, and a DELETE's value is pingcap/ticdc's marker (byte 3, then the commit ts), so TiCDC's consumer
knows its commit ts; otherwise ``encode_ddl``/``encode_watermark`` return None: nothing is sent.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro

from sparkcdc.codec.avro import message as wire
from sparkcdc.codec.avro.config import AvroConfig
from sparkcdc.codec.avro.registry import SchemaRegistry
from sparkcdc.codec.avro.schema import TableSchemas, table_schemas
from sparkcdc.codec.avro.values import datum_writer
from sparkcdc.codec.base import Message
from sparkcdc.codec.large_message import MAX_RECORD_OVERHEAD, MESSAGE_TOO_LARGE
from sparkcdc.codec.simple.message import go_json_dumps
from sparkcdc.errors import ConfigError, EncodeError
from sparkcdc.model import DDLEvent, RowChange, RowOp, TableInfo

__all__ = ["AvroEncoder", "from_options"]

Writers = tuple[tuple[str, int, Callable[[Any], Any]], ...]


@dataclass(frozen=True, slots=True)
class _Plan:
    """A table version's encoding, built once: its schemas (parsed for fastavro) and one writer per column."""

    schemas: TableSchemas
    key_schema: Any
    value_schema: Any
    key_writers: Writers
    value_writers: Writers


class AvroEncoder:
    """Encodes rows for one changefeed. ``registry`` is needed for rows only (DDLs and watermarks carry no schema).

    Tables are recognised by identity (the model shares one TableInfo per table version), as the simple encoder
    does; the registry is asked once per (topic, subject suffix, schema text), and the envelope's header kept.
    """

    def __init__(self, config: AvroConfig | None = None, registry: SchemaRegistry | None = None) -> None:
        self.config = config or AvroConfig()
        self.registry = registry
        self._plans: dict[int, tuple[TableInfo, _Plan]] = {}
        self._headers: dict[tuple[str, str, str], bytes] = {}

    def encode_row(self, row: RowChange, topic: str) -> Message:
        """The message of ``row`` written to ``topic`` (the subject depends on it). Raises EncodeError (a value the
        protocol cannot carry, or a message above max-message-bytes) and the registry's errors."""
        plan = self._plan(row.table)
        schemas = plan.schemas
        image = row.values
        key = None
        if schemas.key is not None:
            head = self._header(topic, wire.KEY_SUFFIX, schemas.key)
            key = head + _write(plan.key_schema, _record(plan.key_writers, image))
        if row.op is RowOp.DELETE:
            value = wire.delete_marker(row.commit_ts) if self.config.watermarks else b""
        else:
            head = self._header(topic, wire.VALUE_SUFFIX, schemas.value)
            record = _record(plan.value_writers, image)
            if self.config.enable_tidb_extension:
                record[wire.TIDB_OP] = wire.INSERT_OP if row.op is RowOp.INSERT else wire.UPDATE_OP
                record[wire.TIDB_COMMIT_TS] = row.commit_ts
                record[wire.TIDB_PHYSICAL_TIME] = row.commit_ts >> 18
            value = head + _write(plan.value_schema, record)
        size = len(key or b"") + len(value) + MAX_RECORD_OVERHEAD
        if size > self.config.max_message_bytes:
            raise EncodeError(
                f"avro: the message of a row of {row.table.qualified_name} at {row.commit_ts} is {size} bytes, above "
                f"max-message-bytes {self.config.max_message_bytes}; raise max-message-bytes (and the topic's "
                "max.message.bytes)",
                code=MESSAGE_TOO_LARGE,
            )
        return Message(key, value)

    def encode_ddl(self, ddl: DDLEvent) -> Message | None:
        """TiCDC's DDL message (byte 1 and the DDL's JSON) in its testing mode; None otherwise."""
        if not self.config.watermarks:
            return None
        body = {"query": ddl.query, "type": int(ddl.action), "schema": ddl.schema, "table": ddl.table,
                "commitTs": ddl.commit_ts}  # fmt: skip
        return Message(None, bytes([wire.DDL_BYTE]) + go_json_dumps(body))

    def encode_watermark(self, ts: int) -> Message | None:
        """TiCDC's watermark (byte 2 and the ts) in its testing mode; None otherwise."""
        return Message(None, wire.watermark(ts)) if self.config.watermarks else None

    def encode_bootstrap(self, table: TableInfo) -> Message | None:
        """The avro protocol has no BOOTSTRAP message: schemas live in the registry."""
        return None

    def schemas(self, table: TableInfo) -> TableSchemas:
        """The key and value schemas ``table`` is written with (what ``encode_row`` registers)."""
        return self._plan(table).schemas

    def _plan(self, table: TableInfo) -> _Plan:
        cached = self._plans.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1]
        schemas = table_schemas(table, self.config)
        cols = table.columns

        def writers(positions: tuple[int, ...]) -> Writers:
            return tuple((wire.sanitize_name(cols[i].name), i, datum_writer(cols[i], self.config)) for i in positions)

        plan = _Plan(
            schemas,
            _parse(schemas.key) if schemas.key is not None else None,
            _parse(schemas.value),
            writers(schemas.key_positions),
            writers(schemas.value_positions),
        )
        if len(self._plans) > 4096:
            self._plans.clear()
        self._plans[id(table)] = (table, plan)
        return plan

    def _header(self, topic: str, suffix: str, schema: str) -> bytes:
        """Confluent's envelope header (magic byte, schema id) of ``schema`` in ``topic``'s key or value subject,
        registering it the first time: per row this is one dict lookup."""
        found = self._headers.get((topic, suffix, schema))
        if found is not None:
            return found
        if self.registry is None:
            raise ConfigError("avro: no schema registry to register schemas with; set --schema-registry",
                              code="CDC:ErrCodecInvalidConfig")  # fmt: skip
        header = wire.envelope(self.registry.register(wire.subject(topic, suffix), schema), b"")
        self._headers[(topic, suffix, schema)] = header
        return header


def _parse(schema: str) -> Any:
    # named_schemas private to each parse: two versions of one table have the same record name
    return fastavro.parse_schema(json.loads(schema), named_schemas={})


def _record(writers: Writers, image: tuple[Any, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, i, write in writers:
        v = image[i]
        out[name] = None if v is None else write(v)
    return out


def _write(schema: Any, record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, schema, record)
    except (ValueError, TypeError, OverflowError) as e:
        raise EncodeError(f"avro: cannot write a record of {schema.get('name')}: {e}",
                          code="CDC:ErrAvroEncodeToBinary") from e  # fmt: skip
    return buf.getvalue()


def from_options(options: Mapping[str, Any]) -> AvroEncoder:
    """The registry's factory: TiCDC's option names, plus ``registry`` (a ``SchemaRegistry``) for rows."""
    return AvroEncoder(AvroConfig.from_options(options), options.get("registry"))
