"""canal-json encoders: storage-sink lines (``TxnEncoder``) and Kafka/Pulsar messages (``MessageEncoder``).

Both build lines from a per-table plan (``plan.py``). The message encoder also applies TiCDC's
large-message handling (``codec/large_message.py``): a row above ``max-message-bytes`` is refused, sent
with only its handle-key columns, or written to a claim-check file named by a handle-key-only message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sparkcdc.codec.base import Message
from sparkcdc.codec.canal_json.compiled import EmitFunction
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.message import WATERMARK_TYPE
from sparkcdc.codec.canal_json.plan import FAST_PATH_ERRORS, PlanCache, TablePlan, go_fix, html_fix
from sparkcdc.codec.canal_json.values import go_utf8_text
from sparkcdc.codec.gofmt import go_json_string
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

__all__ = [
    "CanalJsonMessageEncoder",
    "CanalJsonTxnEncoder",
    "go_fix",
    "html_fix",
    "message_encoder_from_options",
    "txn_encoder_from_options",
    "wall_clock_ms",
]

NowMs = Callable[[], int]


def wall_clock_ms() -> int:
    """The default clock for ``ts``: Unix time in milliseconds."""
    return time.time_ns() // 1_000_000


def _tail(config: CanalJsonConfig, commit_ts: int, terminator: bytes) -> bytes:
    if config.enable_tidb_extension:
        return b'],"_tidb":{"commitTs":' + str(commit_ts).encode() + b"}}" + terminator
    return b"]}" + terminator


class CanalJsonTxnEncoder:
    """Storage-sink encoder: one canal-json line per row, each followed by the terminator.

    ``now_ms`` supplies the ``ts`` member (wall-clock ms when encoding); inject a constant for reproducible
    output. It is read once per transaction.
    """

    file_extension = ".json"

    def __init__(self, config: CanalJsonConfig | None = None, *, now_ms: NowMs = wall_clock_ms) -> None:
        self.config = config or CanalJsonConfig()
        self._now_ms = now_ms
        self._plans = PlanCache(self.config)
        self._terminator = self.config.terminator.encode()
        term = self.config.terminator
        # A terminator holding characters go_fix rewrites must not pass through a whole-buffer fix.
        self._fix_per_line = not term.isascii() or any(ch in term for ch in "<>&\\")
        self._kernels: dict[bool, Kernels] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        # Spark ships encoders to executors: pickle the settings, not the generated per-table code.
        return (type(self), (self.config,), {"_now_ms": self._now_ms})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._now_ms = state["_now_ms"]

    def file_header(self, table: TableInfo) -> bytes:
        """canal-json files have no header."""
        return b""

    def encode_txn(self, rows: Sequence[RowChange]) -> bytes:
        """Lines of one single-table transaction, terminators included. Raises EncodeError for a value the
        column type cannot hold or a row whose width differs from its table."""
        if not rows:
            return b""
        ts = str(self._now_ms()).encode()
        config, terminator = self.config, self._terminator
        table = rows[0].table
        emit_txn = self._plans.get(table).fast_emit_txn
        if emit_txn is not None and not self._fix_per_line:

            def mid_tail(cts: int) -> tuple[bytes, bytes]:
                return str(cts >> 18).encode() + b',"ts":' + ts, _tail(config, cts, terminator)

            out: list[bytes] = []
            if emit_txn(rows, table, mid_tail, out.extend):  # the whole transaction in one generated loop
                return html_fix(b"".join(out))
        return self._encode_rows(rows, ts)  # a second table, or lines needing their own fix-ups

    def encode_events(self, events: Sequence[RowsEvent], split_updates: bool) -> tuple[bytes, int] | None:
        """``encode_txn`` of the events' rows through the native kernel: (lines, rows), or None when the Python
        path must encode them (``split_updates``: a key-changing UPDATE goes to Python, which splits it)."""
        kernels = self._kernels.get(split_updates)
        if kernels is None:
            kernels = self._kernels[split_updates] = Kernels(
                "canal-json", lambda e: self._plans.get(e.table).native_spec(self.config, None), split_updates
            )
        result: tuple[bytes, int] | None = kernels.encode(events, self._now_ms())
        return result

    def encode_rows(self, rows: Sequence[RowChange]) -> bytes:
        """``encode_txn`` one row at a time (used for multi-table input; a reference for tests)."""
        return self._encode_rows(rows, str(self._now_ms()).encode())

    def _encode_rows(self, rows: Sequence[RowChange], ts: bytes) -> bytes:
        config = self.config
        terminator = self._terminator
        per_line = self._fix_per_line
        plans = self._plans
        out: list[bytes] = []
        extend = out.extend
        last_table: TableInfo | None = None
        last_cts = -1
        plan: TablePlan | None = None
        emit: EmitFunction | None = None
        mid = tail = b""
        for row in rows:
            table = row.table
            if table is not last_table or plan is None:
                plan = plans.get(table)
                emit = None if per_line else plan.fast_emit
                last_table = table
            cts = row.commit_ts
            if cts != last_cts:
                mid = str(cts >> 18).encode() + b',"ts":' + ts
                tail = _tail(config, cts, b"" if per_line else terminator)
                last_cts = cts
            if emit is not None:
                try:
                    emit(row, mid, tail, extend)  # parts of the line, no per-line join
                    continue
                except FAST_PATH_ERRORS:
                    line = plan.checked_line(row, mid, tail)
            else:
                line = plan.line(row, mid, tail)
            if per_line:
                line = html_fix(line) + terminator
            out.append(line)
        data = b"".join(out)
        return data if per_line else html_fix(data)


class CanalJsonMessageEncoder:
    """Kafka/Pulsar encoder: one keyless message per row, DDL or watermark (no terminator).

    canal-json has no bootstrap message, and TiCDC sends watermarks only with ``enable-tidb-extension``;
    both other cases raise EncodeError (check ``emits_watermarks`` first). ``now_ms`` supplies ``ts``;
    ``new_uuid`` names claim-check files (``<uuid>.json``); inject both for reproducible output.
    """

    def __init__(
        self,
        config: CanalJsonConfig | None = None,
        *,
        now_ms: NowMs = wall_clock_ms,
        new_uuid: Callable[[], str] = new_claim_check_uuid,
    ) -> None:
        self.config = config or CanalJsonConfig()
        self._now_ms = now_ms
        self._new_uuid = new_uuid
        self._plans = PlanCache(self.config)
        self._kernels: dict[bool, Kernels] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.config,), {"_now_ms": self._now_ms, "_new_uuid": self._new_uuid})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._now_ms = state["_now_ms"]
        self._new_uuid = state.get("_new_uuid", new_claim_check_uuid)

    @property
    def emits_watermarks(self) -> bool:
        return self.config.enable_tidb_extension

    def encode_row(self, row: RowChange) -> Message:
        """One DML message. Raises EncodeError when the message exceeds max-message-bytes and the
        large-message handling cannot make it fit (code CDC:ErrMessageTooLarge), or when claim-check is
        configured and a claim-check file is needed (call ``encode_row_checked`` to get it)."""
        encoded = self.encode_row_checked(row)
        if encoded.claim_check is not None:
            raise EncodeError(
                f"canal-json: row of {row.table.qualified_name} at commit-ts {row.commit_ts} needs a claim-check "
                "file; use CanalJsonMessageEncoder.encode_row_checked to obtain and write it"
            )
        return encoded.message

    def encode_rows(self, rows: Sequence[RowChange]) -> list[Message] | None:
        """The DML messages of one table's transaction at once, through the storage encoder's compiled
        whole-transaction path (the MQ message is the storage line without its terminator; byte-identical to
        ``encode_row`` of each row with the same ``ts``). None when that path does not apply or a message is above
        max-message-bytes: encode row by row then, which handles or refuses it."""
        if not rows:
            return []
        table = rows[0].table
        emit_txn = self._plans.get(table).fast_emit_txn
        if emit_txn is None:
            return None
        ts = str(self._now_ms()).encode()
        config = self.config

        def mid_tail(cts: int) -> tuple[bytes, bytes]:
            return str(cts >> 18).encode() + b',"ts":' + ts, _tail(config, cts, b"\n")

        out: list[bytes] = []
        if not emit_txn(rows, table, mid_tail, out.extend):
            return None
        lines = html_fix(b"".join(out)).split(b"\n")  # a raw newline never occurs inside a JSON line
        lines.pop()  # the empty rest after the last terminator
        limit = config.max_message_bytes - MAX_RECORD_OVERHEAD
        if len(lines) != len(rows) or any(len(v) > limit for v in lines):
            return None
        return [Message(None, v) for v in lines]

    def encode_events(self, events: Sequence[RowsEvent], split_updates: bool) -> list[bytes] | None:
        """The message values of ``encode_rows`` of the events' rows through the native kernel, or None when the
        Python path must encode them (a message above max-message-bytes, a key-changing UPDATE to split, a value
        it does not render)."""
        kernels = self._kernels.get(split_updates)
        if kernels is None:
            limit = self.config.max_message_bytes - MAX_RECORD_OVERHEAD
            kernels = self._kernels[split_updates] = Kernels(
                "canal-json-mq", lambda e: self._plans.get(e.table).native_spec(self.config, limit), split_updates
            )
        values: list[bytes] | None = kernels.encode(events, self._now_ms())
        return values

    def encode_row_checked(self, row: RowChange) -> EncodedRow:
        """The DML message plus, for claim-check, the file holding the full original message.

        As TiCDC's ``AppendRowChangedEvent``: a message above max-message-bytes (with Kafka's record
        overhead) is refused with ``none``; ``handle-key-only`` sends only the handle-key columns marked
        ``"_tidb":{"commitTs":N,"onlyHandleKey":true}``; ``claim-check`` puts the full message in a file
        (TiCDC's ``{"key":…,"value":…}`` envelope unless claim-check-raw-value) and sends the handle-key
        columns marked ``"_tidb":{"commitTs":N,"claimCheckLocation":"<uri>/<uuid>.json"}``. Raises
        EncodeError (CDC:ErrMessageTooLarge) when the message does not fit and cannot be shrunk enough.
        """
        plan = self._plans.get(row.table)
        config = self.config
        mid = str(row.commit_ts >> 18).encode() + b',"ts":' + str(self._now_ms()).encode()
        value = html_fix(plan.line(row, mid, _tail(config, row.commit_ts, b"")))  # BS/FF already fixed
        limit = config.max_message_bytes
        if len(value) + MAX_RECORD_OVERHEAD <= limit:
            return EncodedRow(Message(None, value))
        where = f"{row.table.qualified_name} at commit-ts {row.commit_ts}"
        option = config.large_message_handle_option
        if option not in ("handle-key-only", "claim-check"):
            raise EncodeError(
                f"canal-json: message of {where} is {len(value) + MAX_RECORD_OVERHEAD} bytes, above "
                f"max-message-bytes {limit}; raise max-message-bytes or set large-message-handle-option to "
                "handle-key-only or claim-check (with enable-tidb-extension=true)",
                code=MESSAGE_TOO_LARGE,
            )
        claim: ClaimCheckFile | None = None
        commit_ts = b'],"_tidb":{"commitTs":' + str(row.commit_ts).encode()
        if option == "claim-check":
            name = f"{self._new_uuid()}.json"
            location = claim_check_location(config.claim_check_storage_uri, name)
            claim = ClaimCheckFile(name, value if config.claim_check_raw_value else claim_check_envelope(None, value))
            tail = commit_ts + b',"claimCheckLocation":' + _go_str(location) + b"}}"
        else:
            tail = commit_ts + b',"onlyHandleKey":true}}'
        small = html_fix(plan.key_only_line(row, mid, tail))
        if len(small) + MAX_RECORD_OVERHEAD > limit:
            raise EncodeError(
                f"canal-json: message of {where} is still {len(small) + MAX_RECORD_OVERHEAD} bytes with only "
                f"handle-key columns, above max-message-bytes {limit}; raise max-message-bytes",
                code=MESSAGE_TOO_LARGE,
            )
        return EncodedRow(Message(None, small), claim)

    def _struct_message(
        self, *, schema: str, table: str, is_ddl: bool, kind: str, es: int, sql: str, tidb: bytes
    ) -> bytes:
        # goccy/go-json struct encoding: data before old, nil slices/maps as null, omitempty in _tidb.
        return (
            b'{"id":0,"database":'
            + _go_str(schema)
            + b',"table":'
            + _go_str(table)
            + b',"pkNames":null,"isDdl":'
            + (b"true" if is_ddl else b"false")
            + b',"type":'
            + _go_str(kind)
            + b',"es":'
            + str(es).encode()
            + b',"ts":'
            + str(self._now_ms()).encode()
            + b',"sql":'
            + _go_str(sql)
            + b',"sqlType":null,"mysqlType":null,"data":null,"old":null'
            + tidb
            + b"}"
        )

    def encode_ddl(self, ddl: DDLEvent) -> Message:
        tidb = b""
        if self.config.enable_tidb_extension:
            tidb = b',"_tidb":{' + (b'"commitTs":' + str(ddl.commit_ts).encode() if ddl.commit_ts else b"") + b"}"
        value = self._struct_message(
            schema=ddl.schema,
            table=ddl.table,
            is_ddl=True,
            kind=protocol_ddl_type(ddl.action, canal=True),
            es=ddl.commit_ts >> 18,
            sql=ddl.query,
            tidb=tidb,
        )
        return Message(key=None, value=value)

    def encode_watermark(self, ts: int) -> Message:
        """A TIDB_WATERMARK message; raises EncodeError without ``enable-tidb-extension`` (TiCDC sends none)."""
        if not self.config.enable_tidb_extension:
            raise EncodeError(
                "canal-json sends watermark messages only with enable-tidb-extension=true; check emits_watermarks"
            )
        tidb = b',"_tidb":{' + (b'"watermarkTs":' + str(ts).encode() if ts else b"") + b"}"
        value = self._struct_message(
            schema="", table="", is_ddl=False, kind=WATERMARK_TYPE, es=ts >> 18, sql="", tidb=tidb
        )
        return Message(key=None, value=value)

    def encode_bootstrap(self, table: TableInfo) -> Message:
        """Always raises EncodeError: canal-json has no bootstrap message (only the simple protocol does)."""
        raise EncodeError(
            f"canal-json has no bootstrap message (table {table.schema}.{table.table}); "
            "use protocol 'simple' for bootstrap"
        )


def _go_str(text: str) -> bytes:
    return go_json_string(go_utf8_text(text), short_bf=False).encode()


def txn_encoder_from_options(options: Mapping[str, Any]) -> CanalJsonTxnEncoder:
    """Registry factory (``txn_encoder("canal-json", options)``); raises ConfigError for bad options."""
    return CanalJsonTxnEncoder(CanalJsonConfig.from_options(options))


def message_encoder_from_options(options: Mapping[str, Any]) -> CanalJsonMessageEncoder:
    """Registry factory (``message_encoder("canal-json", options)``); raises ConfigError for bad options."""
    return CanalJsonMessageEncoder(CanalJsonConfig.from_options(options))
