"""Simple protocol encoder: one event in, one Kafka message out (``spec/simple.md``).

Every message is keyless (TiCDC's simple encoder sets no key). ``buildTs`` comes from an injectable clock
(milliseconds) so output is reproducible in tests. The encoder encodes rows as given: splitting key-changing
UPDATEs into DELETE+INSERT (unless ``output-raw-change-event``) is the sink's job
(``model.events.split_key_updates``), as is scheduling BOOTSTRAP messages (see ``bootstrap.py``). The Kafka sink
encodes a transaction's rows of one table at once with ``encode_rows`` (generated per-table code, ``compiled.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import orjson

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
from sparkcdc.codec.native import Kernels
from sparkcdc.errors import EncodeError
from sparkcdc.model import DDLEvent, RowChange, RowsEvent, TableInfo
from sparkcdc.model.ddl_action import protocol_ddl_type

from . import avro_schema, compiled, table_schema
from .config import SimpleConfig
from .message import (
    BOOTSTRAP,
    PROTOCOL_VERSION,
    WATERMARK,
    Checksum,
    clean_text,
    go_html_escape,
    go_json_dumps,
)
from .values import EncodePlan, column_kind, encode_plan

__all__ = ["ClaimCheckFile", "EncodedRow", "SimpleEncoder", "claim_check_envelope", "from_options"]

_CACHE_LIMIT: Final = 4096
_NATIVE_KINDS: Final = {"int": 0, "uint": 0, "u64": 0, "f32": 1, "f64": 2, "dec": 3, "ts": 4, "bin": 5, "str": 6}


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
        self._images: dict[int, tuple[TableInfo, Callable[[Any], Any] | None]] = {}
        self._kernels: dict[bool, Kernels] = {}

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

    def encode_rows(self, rows: Sequence[RowChange]) -> list[Message] | None:
        """The DML messages of one table's rows of one transaction at once, byte-identical to ``encode_row`` of
        each row with the same ``buildTs`` (the clock is read once per call).

        Per-table work (the generated image function) and per-(tableID, type, commitTs) work (the message head up
        to ``schemaVersion``) are done once; JSON images are serialized with one orjson call and split at their
        boundaries, Avro messages are written as bytes directly. None when this path does not apply: a row of
        another table, a value the generated code does not take (a wrong class, text that is not UTF-8, an int
        beyond 64 bits) or a message above max-message-bytes; encode row by row then, which handles or refuses
        it (any large-message handling included: rows that fit are sent as they are either way).
        """
        if not rows:
            return []
        table = rows[0].table
        image = self._compiled(table)
        if image is None:
            return None
        build_ts = self._clock()
        try:
            values = (self._avro_values if self._avro else self._json_values)(rows, table, image, build_ts)
        except (*compiled.ERRORS, EncodeError, orjson.JSONEncodeError):
            return None
        if values is None:
            return None
        limit = self.config.max_message_bytes - MAX_RECORD_OVERHEAD
        if max(map(len, values)) > limit:
            return None
        return [Message(None, v) for v in values]

    def encode_events(self, events: Sequence[RowsEvent], split_updates: bool) -> list[bytes] | None:
        """The message values of ``encode_rows`` of the events' rows through the native kernel (JSON only: Avro
        stays on the Python path), or None when the Python path must encode them."""
        if self._avro:
            return None
        kernels = self._kernels.get(split_updates)
        if kernels is None:
            kernels = self._kernels[split_updates] = Kernels("simple", self._native_spec, split_updates)
        values: list[bytes] | None = kernels.encode(events, self._clock())
        return values

    def _native_spec(self, event: RowsEvent) -> dict[str, Any] | None:
        """What the native kernel needs (``native/src/simple.rs``): the message head around op, commitTs and
        buildTs as the generic path writes it, and the image's columns in wire order. None for a table the
        generated code does not take either (no columns, names that are not UTF-8)."""
        table = event.table
        plan = self._plan(table)
        if not plan.full or self._compiled(table) is None:
            return None
        table_id = event.physical_table_id or table.table_id
        probe = self._dml_value(table, table_id, "X", 1, 2, None, None)
        marker = b'"type":"X","commitTs":1,"buildTs":2'
        at = probe.index(marker)
        columns = [(pos, _NATIVE_KINDS[column_kind(table.columns[pos])]) for _, pos, _ in plan.full]
        return {
            "head": probe[: at + len(b'"type":"')],
            "head_tail": probe[at + len(marker) : -1],
            "columns": columns,
            "names": [go_json_dumps(name) + b":" for name, _, _ in plan.full],
            "location": go_json_dumps(self.config.time_zone),
            "limit": self.config.max_message_bytes - MAX_RECORD_OVERHEAD,
        }

    def _heads(self, table: TableInfo, build_ts: int, cut: int) -> Callable[[RowChange], bytes]:
        """The message bytes of a row up to its images (``cut`` bytes of an image-less message dropped), made
        by the generic path once per (tableID, type, commitTs)."""
        heads: dict[tuple[int, str, int], bytes] = {}

        def head(row: RowChange) -> bytes:
            table_id = row.physical_table_id or table.table_id
            op = row.op.value
            key = (table_id, op, row.commit_ts)
            value = heads.get(key)
            if value is None:
                value = heads[key] = self._dml_value(table, table_id, op, row.commit_ts, build_ts, None, None)[:-cut]
            return value

        return head

    def _json_values(
        self, rows: Sequence[RowChange], table: TableInfo, image: Callable[[Any], Any], build_ts: int
    ) -> list[bytes] | None:
        head = self._heads(table, build_ts, 1)  # "}"
        images: list[dict[str, Any]] = []
        add = images.append
        shapes: list[tuple[bytes, bytes | None]] = []  # (head through the first image's '{"', between the two)
        shape: tuple[bytes, bytes | None] = (b"", None)
        last: RowChange | None = None
        for row in rows:
            if row.table is not table:
                return None
            if last is None or row.commit_ts != last.commit_ts or row.op is not last.op or (
                row.physical_table_id != last.physical_table_id
            ):  # fmt: skip
                h = head(row)  # the type fixes which images there are (RowChange checks)
                if row.after is None:
                    shape = (h + b',"old":{"', None)
                elif row.before is None:
                    shape = (h + b',"data":{"', None)
                else:
                    shape = (h + b',"data":{"', b'},"old":{"')
                last = row
            if row.after is not None:
                add(image(row.after))
            if row.before is not None:
                add(image(row.before))
            shapes.append(shape)
        # [{"k":v,...},{"k":v,...}] -> the images' bodies between '{"' and '}'. '},{"' occurs only between two
        # images: inside a string '"' is escaped, and an image holds no array (a TIMESTAMP object is followed by
        # ',"' or its image's '}').
        parts = go_html_escape(orjson.dumps(images))[3:-2].split(b'},{"')
        if len(parts) != len(images):
            return None
        it = iter(parts)
        return [
            pre + next(it) + b"}}" if mid is None else b"".join((pre, next(it), mid, next(it), b"}}"))
            for pre, mid in shapes
        ]

    def _avro_values(
        self, rows: Sequence[RowChange], table: TableInfo, image: Callable[[Any], Any], build_ts: int
    ) -> list[bytes] | None:
        head = self._heads(table, build_ts, 2)  # data and old: the null branch
        out: list[bytes] = []
        add = out.append
        h = b""
        last: RowChange | None = None
        for row in rows:
            if row.table is not table:
                return None
            if last is None or row.commit_ts != last.commit_ts or row.op is not last.op or (
                row.physical_table_id != last.physical_table_id
            ):  # fmt: skip
                h = head(row)
                last = row
            after, before = row.after, row.before
            add(h + (b"\x00" if after is None else image(after)) + (b"\x00" if before is None else image(before)))
        return out

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
        return self._dml_value(
            table, table_id, row.op.value, row.commit_ts, self._clock(), data, old, handle_key_only,
            claim_check_location, checksum,
        )  # fmt: skip

    def _dml_value(
        self,
        table: TableInfo,
        table_id: int,
        op: str,
        commit_ts: int,
        build_ts: int,
        data: dict[str, Any] | None,
        old: dict[str, Any] | None,
        handle_key_only: bool = False,
        claim_check_location: str = "",
        checksum: Checksum | None = None,
    ) -> bytes:
        if self._avro:
            body: dict[str, Any] = {
                "version": PROTOCOL_VERSION,
                "database": table.schema,
                "table": table.table,
                "tableID": table_id,
                "type": op,
                "commitTs": table_schema.to_int64(commit_ts),
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
        msg["type"] = op
        msg["commitTs"] = commit_ts
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

    def _compiled(self, table: TableInfo) -> Callable[[Any], Any] | None:
        """The table's generated image function (``compiled.py``); None when it has none (no columns, or names
        that are not UTF-8)."""
        cached = self._images.get(id(table))
        if cached is None or cached[0] is not table:
            if len(self._images) >= _CACHE_LIMIT:
                self._images.clear()
            make = compiled.compile_avro_image if self._avro else compiled.compile_json_image
            try:
                image = make(table, self._plan(table), self.config.time_zone)
            except UnicodeEncodeError:
                image = None
            cached = (table, image)
            self._images[id(table)] = cached
        return cached[1]

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
