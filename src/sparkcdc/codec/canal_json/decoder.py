"""canal-json decoders: storage data files (``FileDecoder``) and Kafka/Pulsar messages (``MessageDecoder``).

Members are accepted in any order (older TiCDC wrote keys sorted, ``data`` before ``old``). Every malformed
input raises DecodeError naming the source, the line and the member or column; nothing else escapes.

Where decoding is lossy (by the protocol, not by us):
* without ``_tidb`` the commit ts is unknown and decodes as 0 (what TiCDC's consumer does; the Kafka readers
  check that messages carry ``_tidb`` exactly when they expect it: ``check_extension``);
* columns absent from a line (virtual generated columns, non-key columns of a DELETE written with
  ``delete-only-output-handle-key-columns``) decode as ``None``;
* the message decoder only knows what ``mysqlType``/``pkNames`` say: no nullability, charset, unique keys;
  ENUM/SET stay numeric; a DDL ``type`` maps to one representative action (QUERY -> ``DDLAction.NONE``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import orjson

from sparkcdc.codec.base import Message
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.message import (
    DDL_ACTION_OF_TYPE,
    DML_TYPES,
    TIDB_MEMBER,
    TIDB_MEMBERS,
    WATERMARK_TYPE,
    parse_mysql_type,
)
from sparkcdc.codec.canal_json.values import Parser, parser_for
from sparkcdc.codec.large_message import claim_check_name, claim_check_value
from sparkcdc.errors import ConfigError, DecodeError
from sparkcdc.model import ColumnInfo, DDLEvent, Event, ResolvedEvent, RowChange, RowOp, TableInfo

_REQUIRED: Final = ("database", "table", "isDdl", "type")
_OPS: Final = {"INSERT": RowOp.INSERT, "UPDATE": RowOp.UPDATE, "DELETE": RowOp.DELETE}
_TYPE_NAMES: Final = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
_BUG_ERRORS: Final = (KeyError, IndexError, TypeError, ValueError, AttributeError)
_PLAN_CACHE_LIMIT: Final = 512

ClaimCheckReader = Callable[[str], bytes]


def _json_type(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _expect(obj: Mapping[str, Any], member: str, *kinds: type) -> Any:
    """obj[member] when it has one of ``kinds`` (bool is not a number); DecodeError otherwise."""
    value = obj[member]
    if type(value) not in kinds:
        wanted = " or ".join(dict.fromkeys(_TYPE_NAMES.get(k, k.__name__) for k in kinds))
        raise DecodeError(f"member {member!r} must be {wanted}, got {_json_type(value)}")
    return value


_NONE = type(None)
# member -> accepted Python types after orjson.loads (bool is not int here: types are compared exactly)
_MEMBER_KINDS: Final[dict[str, tuple[type, ...]]] = {
    "id": (int,),
    "database": (str,),
    "table": (str,),
    "pkNames": (list, _NONE),
    "isDdl": (bool,),
    "type": (str,),
    "es": (int,),
    "ts": (int,),
    "sql": (str,),
    "sqlType": (dict, _NONE),
    "mysqlType": (dict, _NONE),
    "old": (list, _NONE),
    "data": (list, _NONE),
    TIDB_MEMBER: (dict, _NONE),
}


def _load_object(line: bytes) -> dict[str, Any]:
    """Parse and shape-check one canal-json object; raises location-free DecodeErrors."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise DecodeError(f"invalid JSON ({e})") from None
    if type(obj) is not dict:
        raise DecodeError(f"expected a JSON object, got {_json_type(obj)}")
    kinds_of = _MEMBER_KINDS
    for member, value in obj.items():
        kinds = kinds_of.get(member)
        if kinds is None:
            unknown = sorted(set(obj) - set(kinds_of))
            raise DecodeError(f"unknown member(s) {', '.join(map(repr, unknown))}")
        if type(value) not in kinds:
            _expect(obj, member, *kinds)  # raises with the member named
    for member in _REQUIRED:
        if member not in obj:
            raise DecodeError(f"missing member {member!r}")
    return obj


def _tidb_number(obj: Mapping[str, Any], member: str) -> int:
    """``_tidb.<member>`` (0 when ``_tidb`` or the member is absent: Go omits zero values)."""
    tidb = obj.get(TIDB_MEMBER)
    if not tidb:
        return 0
    unknown = sorted(set(tidb) - TIDB_MEMBERS)
    if unknown:
        raise DecodeError(f"unknown member(s) {', '.join(map(repr, unknown))} in '_tidb'")
    value = tidb.get(member, 0)
    if type(value) is not int or value < 0:
        raise DecodeError(f"member '_tidb.{member}' must be a non-negative integer, got {value!r:.40}")
    return value


def _large_message_markers(obj: Mapping[str, Any]) -> tuple[bool, str]:
    """``_tidb.onlyHandleKey`` and ``_tidb.claimCheckLocation`` (False and "" when absent)."""
    tidb = obj.get(TIDB_MEMBER) or {}
    only_handle_key = tidb.get("onlyHandleKey", False)
    if type(only_handle_key) is not bool:
        raise DecodeError(f"member '_tidb.onlyHandleKey' must be a boolean, got {_json_type(only_handle_key)}")
    location = tidb.get("claimCheckLocation", "")
    if type(location) is not str:
        raise DecodeError(f"member '_tidb.claimCheckLocation' must be a string, got {_json_type(location)}")
    return only_handle_key, location


def _images(obj: Mapping[str, Any], op: RowOp) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """``data`` and (for UPDATE) ``old`` as lists of column -> text|None objects."""
    if "data" not in obj:
        raise DecodeError("missing member 'data'")
    data = _image_list(obj["data"], "data")
    if not data:
        raise DecodeError("member 'data' must hold at least one row image")
    if op is not RowOp.UPDATE:
        return data, None
    if obj.get("old") is None:
        raise DecodeError("UPDATE needs member 'old' with the previous row image")
    old = _image_list(obj["old"], "old")
    if len(old) != len(data):
        raise DecodeError(f"member 'old' has {len(old)} row images but 'data' has {len(data)}")
    return data, old


def _image_list(value: Any, member: str) -> list[dict[str, Any]]:
    """The images of ``data``/``old``; their values are type-checked while decoding (``_RowPlan.values``)."""
    if type(value) is not list:
        raise DecodeError(f"member {member!r} must be an array of objects, got {_json_type(value)}")
    for image in value:
        if type(image) is not dict:
            raise DecodeError(f"member {member!r} must be an array of objects, holds {_json_type(image)}")
    return value


class _RowPlan:
    """Column name -> (position, parser) for one TableInfo."""

    __slots__ = ("_lookup", "_where", "_width", "table")

    def __init__(self, table: TableInfo) -> None:
        self.table = table
        self._width = len(table.columns)
        self._where = f"{table.schema}.{table.table}"
        self._lookup: dict[str, tuple[int, Parser | None]] = {
            c.name: (i, parser_for(c.type, f"column {c.name!r}")) for i, c in enumerate(table.columns)
        }

    def _resolve(self, name: str) -> tuple[int, Parser | None]:
        entry = self._lookup.get(name)
        if entry is not None:
            return entry
        try:
            position = self.table.column_position(name)  # MySQL column names are case-insensitive
        except KeyError:
            raise DecodeError(f"column {name!r} is not in table {self._where}") from None
        entry = self._lookup[self.table.columns[position].name]
        self._lookup[name] = entry
        return entry

    def values(self, image: Mapping[str, Any], member: str, base: tuple[Any, ...] | None = None) -> tuple[Any, ...]:
        out: list[Any] = [None] * self._width if base is None else list(base)
        lookup = self._lookup
        for name, text in image.items():
            entry = lookup.get(name)
            position, parser = entry if entry is not None else self._resolve(name)
            if text.__class__ is str:
                out[position] = text if parser is None else parser(text)
            elif text is None:
                out[position] = None
            else:
                raise DecodeError(f"column {name!r} in {member!r} must be a string or null, got {_json_type(text)}")
        return tuple(out)

    def rows(self, obj: Mapping[str, Any], commit_ts: int) -> Iterator[RowChange]:
        op = _OPS.get(obj["type"])
        if op is None:
            raise DecodeError(f"member 'type' is {obj['type']!r:.40}; expected INSERT, UPDATE or DELETE")
        data, old = _images(obj, op)
        table = self.table
        for k, image in enumerate(data):
            values = self.values(image, "data")
            if op is RowOp.INSERT:
                yield RowChange(commit_ts, table, op, None, values)
            elif op is RowOp.DELETE:
                yield RowChange(commit_ts, table, op, values, None)
            elif old is not None:  # UPDATE (_images always returns 'old' for it)
                # with only-output-updated-columns 'old' lists changed columns only; the rest equal the new image
                yield RowChange(commit_ts, table, op, self.values(old[k], "old", values), values)


def _located(source: str, line: int | None, e: Exception) -> DecodeError:
    where = source or "<canal-json>"
    if line is not None:
        where += f": line {line}"
    message = e.message if isinstance(e, DecodeError) else f"malformed input ({type(e).__name__}: {e})"
    return DecodeError(f"{where}: {message}")


class CanalJsonFileDecoder:
    """Decodes a storage-sink data file: one DML line per terminator, typed with the schema-file table."""

    def __init__(self, config: CanalJsonConfig | None = None) -> None:
        self.config = config or CanalJsonConfig()
        self._terminator = self.config.terminator.encode()
        self._plans: dict[int, _RowPlan] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.config,))  # caches hold closures: rebuild them after unpickling

    def _plan(self, table: TableInfo) -> _RowPlan:
        plan = self._plans.get(id(table))
        if plan is None or plan.table is not table:
            if len(self._plans) >= _PLAN_CACHE_LIMIT:
                self._plans.clear()
            plan = self._plans[id(table)] = _RowPlan(table)
        return plan

    def decode_file(self, data: bytes, table: TableInfo, *, source: str = "") -> Iterator[RowChange]:
        """Rows of one data file in order. Raises DecodeError ``"<source>: line N: …"`` on malformed input,
        including a DDL or watermark object (storage files hold DML only)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise DecodeError(f"{source or '<canal-json>'}: expected bytes, got {type(data).__name__}")
        plan = self._plan(table)
        lines = bytes(data).split(self._terminator)
        if lines[-1] == b"":
            lines.pop()  # the file ends with a terminator
        for number, line in enumerate(lines, 1):
            try:
                obj = _load_object(line)
                if obj["isDdl"]:
                    raise DecodeError("a DDL object in a data file; storage data files hold DML rows only")
                rows = list(plan.rows(obj, _tidb_number(obj, "commitTs")))
            except DecodeError as e:
                raise _located(source, number, e) from e
            except _BUG_ERRORS as e:
                raise _located(source, number, e) from e
            yield from rows


class CanalJsonMessageDecoder:
    """Decodes one Kafka/Pulsar canal-json message into a RowChange, DDLEvent or ResolvedEvent.

    A DML message carries its own schema: the TableInfo is built from ``mysqlType`` (column types),
    ``sqlType`` (column order, as TiCDC writes it in table order) and ``pkNames``, and cached.

    Oversized rows (``_tidb.claimCheckLocation`` / ``_tidb.onlyHandleKey``) are handled as the simple
    decoder does: ``claim_check_reader`` maps a claim-check file name (the base name of the location) to
    its bytes, and the row decodes from the full message in that file; without a reader such a message is
    a DecodeError. A handle-key-only message needs an upstream lookup (TiCDC queries TiDB at the commit ts):
    with ``allow_handle_key_only`` it decodes to rows of a table holding only those key columns (the
    message's ``mysqlType``), otherwise it raises DecodeError.

    ``check_extension`` is the rule of the Kafka readers, which order rows by what ``_tidb`` says: every message
    must carry the TiDB extension exactly when ``config.enable_tidb_extension`` is set. Under the extension a DML
    or DDL message without ``_tidb.commitTs`` cannot be put in commit order; without it, a message with ``_tidb``
    (a watermark, a commit-ts) shows that the changefeed sets the extension and the reader should too. Either is
    a DecodeError saying which setting to change. Unchecked (storage files, tests), a missing commit-ts is 0.
    """

    def __init__(
        self,
        config: CanalJsonConfig | None = None,
        *,
        claim_check_reader: ClaimCheckReader | None = None,
        allow_handle_key_only: bool = False,
        check_extension: bool = False,
    ) -> None:
        self.config = config or CanalJsonConfig()
        self._claim_check_reader = claim_check_reader
        self._allow_handle_key_only = allow_handle_key_only
        self._check_extension = check_extension
        self._plans: dict[tuple[Any, ...], _RowPlan] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        state = {"_claim_check_reader": self._claim_check_reader, "_allow_handle_key_only": self._allow_handle_key_only,
                 "_check_extension": self._check_extension}  # fmt: skip
        return (type(self), (self.config,), state)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._claim_check_reader = state["_claim_check_reader"]
        self._allow_handle_key_only = state["_allow_handle_key_only"]
        self._check_extension = state["_check_extension"]

    def decode(self, message: Message) -> Iterator[Event]:
        value = message.value if isinstance(message, Message) else message
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise DecodeError(f"<canal-json message>: expected bytes, got {type(value).__name__}")
        try:
            events = self._decode(bytes(value))
        except DecodeError as e:
            raise _located("<canal-json message>", None, e) from e
        except _BUG_ERRORS as e:
            raise _located("<canal-json message>", None, e) from e
        yield from events

    def _decode(self, value: bytes) -> list[Event]:
        obj = _load_object(value)
        if self._check_extension:
            self._check_tidb(obj)
        kind = obj["type"]
        if kind == WATERMARK_TYPE:
            if TIDB_MEMBER not in obj:
                raise DecodeError("TIDB_WATERMARK message without member '_tidb'")
            return [ResolvedEvent(_tidb_number(obj, "watermarkTs"))]
        commit_ts = _tidb_number(obj, "commitTs")
        if obj["isDdl"]:
            action = DDL_ACTION_OF_TYPE.get(kind)
            if action is None:
                raise DecodeError(f"member 'type' is {kind!r:.40}; not a canal-json DDL type")
            return [DDLEvent(commit_ts, action, obj.get("sql", ""), obj["database"], obj["table"])]
        if kind not in DML_TYPES:
            raise DecodeError(f"member 'type' is {kind!r:.40}; expected INSERT, UPDATE, DELETE or TIDB_WATERMARK")
        only_handle_key, location = _large_message_markers(obj)
        if location:
            obj = self._claim_checked(obj, location, commit_ts)
            commit_ts = _tidb_number(obj, "commitTs")
        elif only_handle_key and not self._allow_handle_key_only:
            raise DecodeError(
                f"handle-key-only DML of {obj['database']}.{obj['table']} at commit-ts {commit_ts} carries only "
                "key columns; the full row needs an upstream lookup at that commit-ts"
            )
        return list(self._plan(obj).rows(obj, commit_ts))

    def _check_tidb(self, obj: Mapping[str, Any]) -> None:
        """``check_extension``'s rule (see the class docstring); raises DecodeError."""
        what = "a DDL" if obj["isDdl"] else "a watermark" if obj["type"] == WATERMARK_TYPE else "a DML message"
        name = ".".join(part for part in (obj["database"], obj["table"]) if part)
        where = f"{what} of {name}" if name else what
        if not self.config.enable_tidb_extension:
            if obj.get(TIDB_MEMBER):
                raise DecodeError(
                    f"{where} carries the TiDB extension ('_tidb'): the changefeed sets enable-tidb-extension=true; "
                    "set enable-tidb-extension=true here too, so that rows are applied in commit-ts order"
                )
            return
        if obj["type"] != WATERMARK_TYPE and not _tidb_number(obj, "commitTs"):
            raise DecodeError(
                f"{where} carries no commit-ts ('_tidb.commitTs') although enable-tidb-extension=true is set: the "
                "changefeed that wrote it does not set enable-tidb-extension; remove it here too (rows are then "
                "applied in the order they are read)"
            )

    def _claim_checked(self, obj: Mapping[str, Any], location: str, commit_ts: int) -> dict[str, Any]:
        """The full DML message stored in the claim-check file ``location`` names."""
        where = f"{obj['database']}.{obj['table']} at commit-ts {commit_ts}"
        if self._claim_check_reader is None:
            raise DecodeError(f"DML of {where} is in claim-check storage ({location}); configure a claim-check reader")
        name = claim_check_name(location)
        try:
            data = self._claim_check_reader(name)
        except (KeyError, OSError) as e:
            raise DecodeError(f"cannot read claim-check file {name} for {where}: {type(e).__name__}: {e}") from e
        if not self.config.claim_check_raw_value:
            data = claim_check_value(data, name)
        try:
            full = _load_object(data)
        except DecodeError as e:
            raise DecodeError(f"claim-check file {name}: {e.message}") from e
        if full["isDdl"] or full["type"] not in DML_TYPES or _large_message_markers(full) != (False, ""):
            raise DecodeError(f"claim-check file {name} does not hold a full DML message")
        return full

    def _plan(self, obj: Mapping[str, Any]) -> _RowPlan:
        mysql_types = obj.get("mysqlType")
        if type(mysql_types) is not dict:
            raise DecodeError("DML message needs member 'mysqlType' (an object of column types)")
        sql_types = obj.get("sqlType")
        pk_names = obj.get("pkNames") or []
        key = (
            obj["database"],
            obj["table"],
            tuple(pk_names),
            tuple(mysql_types.items()),
            tuple(sql_types) if type(sql_types) is dict else None,
        )
        try:
            plan = self._plans.get(key)
        except TypeError:
            raise DecodeError("members 'pkNames' and 'mysqlType' must hold strings") from None
        if plan is None:
            if len(self._plans) >= _PLAN_CACHE_LIMIT:
                self._plans.clear()
            plan = self._plans[key] = _RowPlan(
                _table_of(obj["database"], obj["table"], pk_names, mysql_types, sql_types)
            )
        return plan


def _table_of(schema: str, table: str, pk_names: list[Any], mysql_types: dict[str, Any], sql_types: Any) -> TableInfo:
    for name in pk_names:
        if type(name) is not str:
            raise DecodeError(f"member 'pkNames' must hold strings, got {_json_type(name)}")
    names = list(mysql_types)
    if type(sql_types) is dict and set(sql_types) == set(names):
        names = list(sql_types)  # sqlType is in table column order; mysqlType order is random in Go
    primary = set(pk_names)
    columns: list[ColumnInfo] = []
    for name in names:
        text = mysql_types[name]
        if type(text) is not str:
            raise DecodeError(f"mysqlType of column {name!r} must be a string, got {_json_type(text)}")
        column = parse_mysql_type(name, text, where="member 'mysqlType'")
        if name in primary:
            column = ColumnInfo(
                name=column.name,
                type=column.type,
                unsigned=column.unsigned,
                zerofill=column.zerofill,
                nullable=False,
                primary_key=True,
                handle_key=True,
                length=column.length,
                decimal=column.decimal,
                elements=column.elements,
            )
        columns.append(column)
    try:
        return TableInfo(schema=schema, table=table, table_id=0, columns=tuple(columns))
    except ConfigError as e:
        raise DecodeError(f"member 'mysqlType': {e.message}") from None


def file_decoder_from_options(options: Mapping[str, Any]) -> CanalJsonFileDecoder:
    """Registry factory (``file_decoder("canal-json", options)``); only ``terminator`` matters."""
    return CanalJsonFileDecoder(CanalJsonConfig.from_options(options))


def message_decoder_from_options(options: Mapping[str, Any]) -> CanalJsonMessageDecoder:
    """Registry factory (``message_decoder("canal-json", options)``)."""
    return CanalJsonMessageDecoder(CanalJsonConfig.from_options(options))
