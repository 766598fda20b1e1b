"""Simple protocol encoder: one event in, one Kafka message out (``spec/simple.md``).

Every message is keyless (TiCDC's simple encoder sets no key). ``buildTs`` comes from an injectable clock
(milliseconds) so output is reproducible in tests. The encoder encodes rows as given: splitting key-changing
UPDATEs into DELETE+INSERT (unless ``output-raw-change-event``) is the sink's job
(``model.events.split_key_updates``), as is scheduling BOOTSTRAP messages (see ``bootstrap.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from sparkcdc.codec.base import Message
from sparkcdc.codec.large_message import (
    MAX_RECORD_OVERHEAD,
    MESSAGE_TOO_LARGE,
    ClaimCheckFile,
    EncodedRow,
    claim_check_envelope,
    claim_check_location,
    new_claim_check_uuid,
)
from sparkcdc.errors import EncodeError
from sparkcdc.model import DDLEvent, RowChange, TableInfo
from sparkcdc.model.ddl_action import protocol_ddl_type

from . import avro_schema, table_schema
from .config import SimpleConfig
from .message import BOOTSTRAP, PROTOCOL_VERSION, WATERMARK, Checksum, clean_text, go_json_dumps
from .values import EncodePlan, encode_plan

__all__ = ["ClaimCheckFile", "EncodedRow", "SimpleEncoder", "claim_check_envelope", "from_options"]

_CACHE_LIMIT: Final = 4096


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class SimpleEncoder:
    """Implements ``codec.base.MessageEncoder`` for ``protocol=simple`` (JSON or Avro).

    ``clock`` returns the wall-clock milliseconds written as ``buildTs``; ``new_uuid`` names claim-check
    files. Tables are recognised by identity: reuse one TableInfo object per table version (the model's
    events already do) and per-table work is done once.
    """

    def __init__(
        self,
        config: SimpleConfig | None = None,
        *,
        clock: Callable[[], int] = _wall_clock_ms,
        new_uuid: Callable[[], str] = new_claim_check_uuid,
    ) -> None:
        self.config = config or SimpleConfig()
        self._avro = self.config.encoding_format == "avro"
        self._clock = clock
        self._new_uuid = new_uuid
        self._plans: dict[int, EncodePlan] = {}
        self._schemas: dict[int, tuple[TableInfo, dict[str, Any]]] = {}

    # --- MessageEncoder -------------------------------------------------------------------------------

    def encode_row(self, row: RowChange) -> Message:
        """One DML message. Raises EncodeError when the message exceeds max-message-bytes and the
        large-message handling cannot make it fit, or when claim-check is configured and a claim-check file
        is needed (call ``encode_row_checked`` to get it)."""
        value = self.encode_dml(row)
        if len(value) + MAX_RECORD_OVERHEAD <= self.config.max_message_bytes:
            return Message(None, value)
        encoded = self.encode_row_checked(row, value)
        if encoded.claim_check is not None:
            raise EncodeError(
                f"simple: row of {row.table.qualified_name} at {row.commit_ts} needs a claim-check file; "
                "use SimpleEncoder.encode_row_checked to obtain and write it"
            )
        return encoded.message

    def encode_row_checked(self, row: RowChange, value: bytes | None = None) -> EncodedRow:
        """The DML message plus, for claim-check, the file holding the full original message.

        ``value`` is the already encoded full message, when the caller has it.
        """
        if value is None:
            value = self.encode_dml(row)
        limit = self.config.max_message_bytes
        if len(value) + MAX_RECORD_OVERHEAD <= limit:
            return EncodedRow(Message(None, value))
        where = f"{row.table.qualified_name} at commit-ts {row.commit_ts}"
        option = self.config.large_message_handle_option
        if option == "none":
            raise EncodeError(
                f"simple: message of {where} is {len(value) + MAX_RECORD_OVERHEAD} bytes, above max-message-bytes "
                f"{limit}; raise max-message-bytes or set large-message-handle-option",
                code=MESSAGE_TOO_LARGE,
            )
        claim: ClaimCheckFile | None = None
        location = ""
        if option == "claim-check":
            name = f"{self._new_uuid()}.json"
            location = claim_check_location(self.config.claim_check_storage_uri, name)
            data = value if self.config.claim_check_raw_value else claim_check_envelope(None, value)
            claim = ClaimCheckFile(name, data)
        small = self.encode_dml(row, handle_key_only=True, claim_check_location=location)
        if len(small) + MAX_RECORD_OVERHEAD > limit:
            raise EncodeError(
                f"simple: message of {where} is still {len(small) + MAX_RECORD_OVERHEAD} bytes with only handle-key "
                f"columns, above max-message-bytes {limit}",
                code=MESSAGE_TOO_LARGE,
            )
        return EncodedRow(Message(None, small), claim)

    def encode_ddl(self, ddl: DDLEvent) -> Message:
        ddl_type = protocol_ddl_type(ddl.action, canal=False)
        build_ts = self._clock()
        schema = ddl.table_info
        pre = ddl.pre_table_info
        if self._avro:
            value = avro_schema.write(
                avro_schema.ddl(
                    ddl_type,
                    clean_text(ddl.query),
                    ddl.commit_ts,
                    build_ts,
                    None if schema is None else table_schema.to_avro(schema),
                    None if pre is None else table_schema.to_avro(pre),
                )
            )
            return Message(None, value)
        msg: dict[str, Any] = {"version": PROTOCOL_VERSION, "type": ddl_type}
        if ddl.query:
            msg["sql"] = ddl.query
        msg["commitTs"] = ddl.commit_ts
        msg["buildTs"] = build_ts
        if schema is not None:
            msg["tableSchema"] = self._schema_json(schema)
        if pre is not None:
            msg["preTableSchema"] = self._schema_json(pre)
        return Message(None, go_json_dumps(msg))

    def encode_watermark(self, ts: int) -> Message:
        build_ts = self._clock()
        if self._avro:
            return Message(None, avro_schema.write(avro_schema.watermark(ts, build_ts)))
        msg = {"version": PROTOCOL_VERSION, "type": WATERMARK, "commitTs": ts, "buildTs": build_ts}
        return Message(None, go_json_dumps(msg))

    def encode_bootstrap(self, table: TableInfo) -> Message:
        build_ts = self._clock()
        if self._avro:
            return Message(None, avro_schema.write(avro_schema.bootstrap(table_schema.to_avro(table), build_ts)))
        msg = {
            "version": PROTOCOL_VERSION,
            "type": BOOTSTRAP,
            "commitTs": 0,
            "buildTs": build_ts,
            "tableSchema": self._schema_json(table),
        }
        return Message(None, go_json_dumps(msg))

    # --- lower level ----------------------------------------------------------------------------------

    def encode_dml(
        self,
        row: RowChange,
        *,
        handle_key_only: bool = False,
        claim_check_location: str = "",
        checksum: Checksum | None = None,
    ) -> bytes:
        """The value bytes of one DML message, optionally in the handle-key-only / claim-check form.

        ``checksum`` is written only when ``enable-row-checksum`` is on (TiCDC's rule).
        """
        plan = self._plan(row.table)
        table = row.table
        table_id = row.physical_table_id or table.table_id
        try:
            data = None if row.after is None else plan.image(row.after, handle_key_only)
            old = None if row.before is None else plan.image(row.before, handle_key_only)
        except ValueError as e:
            raise EncodeError(f"simple: {e}") from e
        except (TypeError, AttributeError) as e:
            raise EncodeError(f"simple: row of {table.qualified_name} has a value of the wrong type: {e}") from e
        if checksum is not None and not self.config.enable_row_checksum:
            checksum = None
        build_ts = self._clock()
        if self._avro:
            body: dict[str, Any] = {
                "version": PROTOCOL_VERSION,
                "database": table.schema,
                "table": table.table,
                "tableID": table_id,
                "type": row.op.value,
                "commitTs": table_schema.to_int64(row.commit_ts),
                "buildTs": build_ts,
                "schemaVersion": table_schema.to_int64(table.version),
                "claimCheckLocation": claim_check_location or None,
                "handleKeyOnly": True if handle_key_only else None,
                "checksum": None if checksum is None else avro_schema.checksum_record(checksum),
                # explicit union branches: fastavro otherwise validates the whole map to pick one
                "data": None if data is None else ("map", data),
                "old": None if old is None else ("map", old),
            }
            return avro_schema.write(avro_schema.dml(body))
        msg: dict[str, Any] = {"version": PROTOCOL_VERSION}
        if table.schema:
            msg["database"] = table.schema
        if table.table:
            msg["table"] = table.table
        if table_id:
            msg["tableID"] = table_id
        msg["type"] = row.op.value
        msg["commitTs"] = row.commit_ts
        msg["buildTs"] = build_ts
        if table.version:
            msg["schemaVersion"] = table.version
        if claim_check_location:
            msg["claimCheckLocation"] = claim_check_location
        if handle_key_only:
            msg["handleKeyOnly"] = True
        if checksum is not None:
            msg["checksum"] = {
                "version": checksum.version,
                "corrupted": checksum.corrupted,
                "current": checksum.current,
                "previous": checksum.previous,
            }
        if data:
            msg["data"] = data
        if old:
            msg["old"] = old
        return go_json_dumps(msg)

    def table_schema_json(self, table: TableInfo) -> bytes:
        """The JSON ``tableSchema`` object of ``table`` alone (what schema-layout vectors show)."""
        return go_json_dumps(self._schema_json(table))

    def _plan(self, table: TableInfo) -> EncodePlan:
        plan = self._plans.get(id(table))
        if plan is None or plan.table is not table:
            if len(self._plans) >= _CACHE_LIMIT:
                self._plans.clear()
            plan = encode_plan(table, avro=self._avro, location=self.config.time_zone)
            self._plans[id(table)] = plan
        return plan

    def _schema_json(self, table: TableInfo) -> dict[str, Any]:
        cached = self._schemas.get(id(table))
        if cached is None or cached[0] is not table:
            if len(self._schemas) >= _CACHE_LIMIT:
                self._schemas.clear()
            cached = (table, table_schema.to_json(table))
            self._schemas[id(table)] = cached
        return cached[1]


def from_options(options: Mapping[str, Any]) -> SimpleEncoder:
    """Registry factory: ``message_encoder("simple", {"encoding-format": "json"})``."""
    return SimpleEncoder(SimpleConfig.from_options(options))
