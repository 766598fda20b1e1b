"""Simple protocol decoder with TiCDC's table-schema memo and held DML (``spec/simple.md`` §6).

A consumer that joins a topic in the middle sees rows before any schema. Rows whose
``(database, table, schemaVersion)`` is unknown are held, in arrival order, and released when a DDL
(``tableSchema`` or ``preTableSchema``) or BOOTSTRAP message brings that schema. A held row is reported as
never resolvable (DecodeError naming table and version) when:

* more than ``max-pending-dml`` rows are held;
* a DDL or BOOTSTRAP stores a *newer* version of the same table while rows of an older version are still
  held: later DDLs only carry the current version as ``preTableSchema`` and bootstraps only the current
  version, so the old one can never arrive;
* bootstraps are enabled (and sent to all partitions) and a WATERMARK was built more than one bootstrap
  period (interval + TiCDC's 5 s tick + ``BOOTSTRAP_GRACE_MS``) after the held row: TiCDC re-sends a
  BOOTSTRAP for every active table at least that often, and it reaches every partition before later
  watermarks. ``buildTs`` is TiCDC's wall clock; the grace absorbs clock skew between captures.

Release order: rows resolved by a DDL that committed before it come first, then the DDL, then the rest;
rows resolved by a BOOTSTRAP follow the bootstrap event. While any row is held, WATERMARK events are held
back too (only the latest is kept) and follow the released rows, so a resolved ts never overtakes a row it
covers. DDLs of other tables are not held back.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from sparkcdc.codec.base import Message
from sparkcdc.codec.large_message import claim_check_name, claim_check_value
from sparkcdc.errors import DecodeError
from sparkcdc.model import BootstrapEvent, DDLAction, DDLEvent, Event, ResolvedEvent, RowChange, RowOp, TableInfo

from . import avro_schema, table_schema
from .config import SimpleConfig
from .message import (
    BOOTSTRAP,
    CHECKSUM_MEMBERS,
    DDL_TYPES,
    DML_TYPES,
    MESSAGE_MEMBERS,
    PROTOCOL_VERSION,
    UINT32_MAX,
    UINT64_MAX,
    WATERMARK,
    Checksum,
    SimpleMessage,
    as_bool,
    as_int,
    as_object,
    as_str,
    check_members,
    member,
)
from .values import DecodePlan, decode_plan

BOOTSTRAP_TICK_MS: Final = 5_000
BOOTSTRAP_GRACE_MS: Final = 30_000

# The simple protocol names the DDL kind, not TiDB's action; decoding picks one representative action per
# kind (re-encoding gives the same ``type``). QUERY keeps NONE unless the SQL names a database DDL.
_DDL_ACTION: Final = {
    "CREATE": DDLAction.CREATE_TABLE,
    "RENAME": DDLAction.RENAME_TABLE,
    "CINDEX": DDLAction.ADD_INDEX,
    "DINDEX": DDLAction.DROP_INDEX,
    "ERASE": DDLAction.DROP_TABLE,
    "TRUNCATE": DDLAction.TRUNCATE_TABLE,
    "ALTER": DDLAction.MODIFY_COLUMN,
    "QUERY": DDLAction.NONE,
}

ClaimCheckReader = Callable[[str], bytes]

Key = tuple[str, str, int]


@dataclass(slots=True)
class _Held:
    msg: SimpleMessage
    key: Key


class SimpleDecoder:
    """Implements ``codec.base.MessageDecoder`` for ``protocol=simple``.

    ``claim_check_reader`` maps a claim-check file name (the base name of ``claimCheckLocation``) to its
    bytes; without it a claim-check message is an error. Handle-key-only messages without a claim check
    need an upstream lookup TiCDC does against TiDB; they decode to rows whose non-key columns are None
    only when ``allow_handle_key_only`` is set, otherwise they raise DecodeError.

    ``drop_undecodable`` is for a consumer joining mid-stream (the seed's second scenario): a held row whose
    schema version was replaced before it was announced, or that waited longer than a bootstrap period, can never
    be decoded; it is dropped and counted in ``dropped`` instead of raising DecodeError.
    """

    def __init__(
        self,
        config: SimpleConfig | None = None,
        *,
        claim_check_reader: ClaimCheckReader | None = None,
        allow_handle_key_only: bool = False,
        drop_undecodable: bool = False,
    ) -> None:
        self.config = config or SimpleConfig()
        self._drop_undecodable = drop_undecodable
        self.dropped = 0
        self._avro = self.config.encoding_format == "avro"
        self._claim_check_reader = claim_check_reader
        self._allow_handle_key_only = allow_handle_key_only
        self._memo: dict[Key, DecodePlan] = {}
        self._latest: dict[tuple[str, str], int] = {}
        self._held: deque[_Held] = deque()
        self._deferred: ResolvedEvent | None = None

    @property
    def pending(self) -> int:
        """Number of DML messages held while waiting for their schema."""
        return len(self._held)

    @property
    def waiting_for(self) -> list[str]:
        """``schema.table version N`` of every schema the held rows wait for, in the order first held."""
        return list(dict.fromkeys(f"{_name(h.key)} version {h.key[2]}" for h in self._held))

    def table_info(self, schema: str, table: str, version: int) -> TableInfo | None:
        plan = self._memo.get((schema, table, version))
        return None if plan is None else plan.table

    def decode(self, message: Message) -> Iterator[Event]:
        """Events of one message (a DDL or BOOTSTRAP may also release held rows).

        Raises DecodeError for malformed input or a held row that can never be decoded.
        """
        msg = self.parse(message.value)
        return iter(self._dispatch(msg))

    def parse(self, value: bytes) -> SimpleMessage:
        """The message without typing its rows; raises DecodeError naming the bad member."""
        if not isinstance(value, bytes | bytearray | memoryview):
            raise DecodeError(f"simple: message value must be bytes, got {type(value).__name__}")
        if self._avro:
            return avro_schema.read(bytes(value))
        return parse_json(bytes(value))

    # --- dispatch ---------------------------------------------------------------------------------------

    def _dispatch(self, msg: SimpleMessage) -> list[Event]:
        if msg.is_dml:
            if msg.type not in DML_TYPES:
                raise DecodeError(f"simple: {msg.type} message must not carry data or old")
            if msg.claim_check_location:
                msg = self._claim_checked(msg)
            row = self._row(msg)
            return [] if row is None else [row]
        if msg.type == WATERMARK:
            self._check_watermark(msg)
            if self._held:
                # A watermark promises every row up to it was delivered: it must not overtake held rows.
                self._deferred = ResolvedEvent(msg.commit_ts)
                return []
            return [ResolvedEvent(msg.commit_ts)]
        if msg.type == BOOTSTRAP:
            if msg.table_schema is None:
                raise DecodeError("simple: BOOTSTRAP message without tableSchema")
            self._store(msg.table_schema)
            released = self._release()
            self._check_superseded()
            return [BootstrapEvent(msg.table_schema, 0), *released, *self._deferred_watermark()]
        if msg.type in DML_TYPES:
            raise DecodeError(f"simple: {msg.type} message for {msg.database}.{msg.table} has neither data nor old")
        ddl = _ddl_event(msg)
        self._store(msg.pre_table_schema)
        self._store(msg.table_schema)
        released = self._release()
        self._check_superseded()
        before = [r for r in released if r.commit_ts < ddl.commit_ts]
        after = [r for r in released if r.commit_ts >= ddl.commit_ts]
        return [*before, ddl, *after, *self._deferred_watermark()]

    def _deferred_watermark(self) -> list[Event]:
        """The latest watermark held back while rows waited, once no row waits any more."""
        if self._held or self._deferred is None:
            return []
        event, self._deferred = self._deferred, None
        return [event]

    def _store(self, table: TableInfo | None) -> None:
        """First writer wins; entries without schema or table name are ignored (TiCDC's memo)."""
        if table is None or not table.schema or not table.table:
            return
        key = (table.schema, table.table, table.version)
        if key not in self._memo:
            self._memo[key] = decode_plan(table, avro=self._avro)
        name = (table.schema, table.table)
        if table.version > self._latest.get(name, -1):
            self._latest[name] = table.version

    def _row(self, msg: SimpleMessage) -> RowChange | None:
        key = (msg.database, msg.table, msg.schema_version)
        plan = self._memo.get(key)
        if plan is None:
            self._hold(msg, key)
            return None
        return self._build_row(msg, plan)

    def _hold(self, msg: SimpleMessage, key: Key) -> None:
        latest = self._latest.get((key[0], key[1]))
        if latest is not None and latest > key[2]:
            if self._drop_undecodable:
                self.dropped += 1
                return
            raise DecodeError(
                f"simple: DML of {key[0]}.{key[1]} at commit-ts {msg.commit_ts} uses schema version {key[2]}, "
                f"older than the known version {latest}, which was never announced; the message cannot be decoded"
            )
        if len(self._held) >= self.config.max_pending_dml:
            first = self._held[0]
            raise DecodeError(
                f"simple: more than max-pending-dml={self.config.max_pending_dml} DML messages wait for their "
                f"table schema (first: {_name(first.key)} version {first.key[2]} at commit-ts "
                f"{first.msg.commit_ts}); no DDL or BOOTSTRAP message carried it - enable bootstrap messages "
                "or consume from the beginning"
            )
        self._held.append(_Held(msg, key))

    def _release(self) -> list[RowChange]:
        if not self._held:
            return []
        out: list[RowChange] = []
        still: deque[_Held] = deque()
        for held in self._held:
            plan = self._memo.get(held.key)
            if plan is None:
                still.append(held)
            else:
                out.append(self._build_row(held.msg, plan))
        self._held = still
        return out

    def _check_superseded(self) -> None:
        if self._drop_undecodable:
            kept = deque(h for h in self._held if self._latest.get((h.key[0], h.key[1]), -1) <= h.key[2])
            self.dropped += len(self._held) - len(kept)
            self._held = kept
            return
        for held in self._held:
            latest = self._latest.get((held.key[0], held.key[1]))
            if latest is not None and latest > held.key[2]:
                raise DecodeError(
                    f"simple: schema of {_name(held.key)} version {held.key[2]} never arrived and version "
                    f"{latest} replaced it; {len(self._held)} held DML message(s) cannot be decoded "
                    f"(first at commit-ts {held.msg.commit_ts})"
                )

    def _check_watermark(self, msg: SimpleMessage) -> None:
        if not self._held or not self.config.bootstrap_enabled or not self.config.send_bootstrap_to_all_partition:
            return
        period_ms = self.config.send_bootstrap_interval_in_sec * 1000 + BOOTSTRAP_TICK_MS + BOOTSTRAP_GRACE_MS
        if self._drop_undecodable:
            kept = deque(h for h in self._held if msg.build_ts - h.msg.build_ts <= period_ms)
            self.dropped += len(self._held) - len(kept)
            self._held = kept
            return
        first = self._held[0]
        if msg.build_ts - first.msg.build_ts > period_ms:
            raise DecodeError(
                f"simple: schema of {_name(first.key)} version {first.key[2]} never arrived: watermark "
                f"{msg.commit_ts} was built {msg.build_ts - first.msg.build_ts} ms after the held DML at commit-ts "
                f"{first.msg.commit_ts}, longer than the bootstrap period ({period_ms} ms); "
                f"{len(self._held)} DML message(s) cannot be decoded"
            )

    def _build_row(self, msg: SimpleMessage, plan: DecodePlan) -> RowChange:
        if msg.handle_key_only and not self._allow_handle_key_only:
            raise DecodeError(
                f"simple: handle-key-only DML of {msg.database}.{msg.table} at commit-ts {msg.commit_ts} carries "
                "only key columns; the full row needs an upstream lookup at that commit-ts"
            )
        if msg.checksum is not None and self.config.enable_row_checksum and msg.checksum.corrupted:
            raise DecodeError(
                f"simple: DML of {msg.database}.{msg.table} at commit-ts {msg.commit_ts} is marked corrupted"
            )
        after = None if msg.data is None else plan.image(msg.data, "data")
        before = None if msg.old is None else plan.image(msg.old, "old")
        op = RowOp(msg.type)
        try:
            return RowChange(msg.commit_ts, plan.table, op, before, after, msg.table_id)
        except ValueError as e:
            raise DecodeError(f"simple: {msg.type} message for {msg.database}.{msg.table}: {e}") from e

    def _claim_checked(self, msg: SimpleMessage) -> SimpleMessage:
        if self._claim_check_reader is None:
            raise DecodeError(
                f"simple: DML of {msg.database}.{msg.table} at commit-ts {msg.commit_ts} is in claim-check "
                f"storage ({msg.claim_check_location}); configure a claim-check reader"
            )
        name = claim_check_name(msg.claim_check_location)
        try:
            data = self._claim_check_reader(name)
        except (KeyError, OSError) as e:
            raise DecodeError(
                f"simple: cannot read claim-check file {name} for {msg.database}.{msg.table} at commit-ts "
                f"{msg.commit_ts}: {type(e).__name__}: {e}"
            ) from e
        if not self.config.claim_check_raw_value:
            try:
                data = claim_check_value(data, name)
            except DecodeError as e:
                raise DecodeError(f"simple: {e.message}") from e
        full = self.parse(data)
        if not full.is_dml or full.claim_check_location:
            raise DecodeError(f"simple: claim-check file {name} does not hold a full DML message")
        return full


def _name(key: Key) -> str:
    return f"{key[0]}.{key[1]}"


def _ddl_event(msg: SimpleMessage) -> DDLEvent:
    if msg.type not in _DDL_ACTION:
        raise DecodeError(f"simple: unknown message type {msg.type!r}")
    action = _DDL_ACTION[msg.type]
    if msg.type == "QUERY":
        words = msg.sql.split(None, 2)[:2]
        head = " ".join(w.upper() for w in words)
        if head in ("CREATE DATABASE", "CREATE SCHEMA"):
            action = DDLAction.CREATE_SCHEMA
        elif head in ("DROP DATABASE", "DROP SCHEMA"):
            action = DDLAction.DROP_SCHEMA
    info = msg.table_schema or msg.pre_table_schema
    return DDLEvent(
        commit_ts=msg.commit_ts,
        action=action,
        query=msg.sql,
        schema=info.schema if info is not None else "",
        table=info.table if info is not None else "",
        table_info=msg.table_schema,
        pre_table_info=msg.pre_table_schema,
    )


# --- JSON ---------------------------------------------------------------------------------------------


_MEMBER_SET: Final = frozenset(MESSAGE_MEMBERS)
_MESSAGE_TYPES: Final = frozenset((*DML_TYPES, *DDL_TYPES, WATERMARK, BOOTSTRAP))
_INT63_MAX: Final = (1 << 63) - 1


def parse_json(value: bytes) -> SimpleMessage:
    """Parse one JSON simple message; raises DecodeError naming the bad member.

    The common case is checked inline (``type(v) is int``); the helpers of ``message`` produce the errors.
    """
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError as e:
        raise DecodeError(f"simple: message is not valid JSON: {e}") from e
    if type(obj) is not dict:
        as_object(obj, "message")
    if not obj.keys() <= _MEMBER_SET:
        check_members(obj, MESSAGE_MEMBERS, "")
    get = obj.get
    version = get("version")
    if type(version) is not int or version != PROTOCOL_VERSION:
        version = as_int(member(obj, "version", ""), "version")
        raise DecodeError(f"simple: unsupported protocol version {version}; expected {PROTOCOL_VERSION}")
    msg_type = get("type")
    if type(msg_type) is not str or msg_type not in _MESSAGE_TYPES:
        msg_type = as_str(member(obj, "type", ""), "type")
        raise DecodeError(f"simple: unknown message type {msg_type!r}")
    checksum = None
    if get("checksum") is not None:
        c = as_object(obj["checksum"], "checksum")
        check_members(c, CHECKSUM_MEMBERS, "checksum")
        checksum = Checksum(
            version=as_int(member(c, "version", "checksum"), "checksum.version"),
            corrupted=as_bool(member(c, "corrupted", "checksum"), "checksum.corrupted"),
            current=as_int(member(c, "current", "checksum"), "checksum.current", lo=0, hi=UINT32_MAX),
            previous=as_int(member(c, "previous", "checksum"), "checksum.previous", lo=0, hi=UINT32_MAX),
        )
    raw_schema = get("tableSchema")
    raw_pre = get("preTableSchema")
    data = get("data")
    old = get("old")
    handle_key_only = get("handleKeyOnly", False)
    return SimpleMessage(
        type=msg_type,
        commit_ts=_int(obj, "commitTs", UINT64_MAX, None),
        build_ts=_int(obj, "buildTs", _INT63_MAX, None),
        database=_str(obj, "database"),
        table=_str(obj, "table"),
        table_id=_int(obj, "tableID", _INT63_MAX, 0),
        sql=_str(obj, "sql"),
        schema_version=_int(obj, "schemaVersion", UINT64_MAX, 0),
        claim_check_location=_str(obj, "claimCheckLocation"),
        handle_key_only=handle_key_only if type(handle_key_only) is bool else as_bool(handle_key_only, "handleKeyOnly"),
        checksum=checksum,
        data=data if data is None or type(data) is dict else as_object(data, "data"),
        old=old if old is None or type(old) is dict else as_object(old, "old"),
        table_schema=None if raw_schema is None else table_schema.from_json(raw_schema, "tableSchema"),
        pre_table_schema=None if raw_pre is None else table_schema.from_json(raw_pre, "preTableSchema"),
    )


def _int(obj: dict[str, Any], key: str, hi: int, default: int | None) -> int:
    """A non-negative integer member (``default`` None: required)."""
    value = obj.get(key, default)
    if type(value) is int and 0 <= value <= hi:
        return value
    if value is None and default is not None:  # Go leaves a field at zero for JSON null
        return default
    return as_int(member(obj, key, ""), key, lo=0, hi=hi)


def _str(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if type(value) is str:
        return value
    return "" if value is None else as_str(value, key)


def from_options(options: Mapping[str, Any]) -> SimpleDecoder:
    """Registry factory: ``message_decoder("simple", {"encoding-format": "avro"})``."""
    return SimpleDecoder(SimpleConfig.from_options(options))
