"""canal-json encoders: storage-sink lines (``TxnEncoder``) and Kafka/Pulsar messages (``MessageEncoder``).

Speed comes from a per-table plan built once per TableInfo: the constant prefix of each line
(``{"id":0,"database":…,"type":"INSERT","es":``), the ``sqlType``/``mysqlType`` fragments (one per
pattern of value-dependent unsigned promotions), and per-column converters. A row image becomes a dict
of column name -> text and is serialised with one ``orjson.dumps`` call. orjson and Go's easyjson escape
strings alike except for ``<``, ``>``, ``&``, U+2028/U+2029 (Go escapes them) and BS/FF (easyjson writes
``\\u0008``/``\\u000c``, orjson ``\\b``/``\\f``); ``go_fix`` patches those on the finished bytes, which
is safe because outside string literals the JSON text contains none of these characters or backslashes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import orjson

from sparkcdc.codec.base import Message
from sparkcdc.codec.canal_json.compiled import EmitFunction, EmitTxnFunction, compile_line
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.message import (
    WATERMARK_TYPE,
    base_sql_type,
    full_mysql_type,
    short_mysql_type,
    unsigned_promotion,
)
from sparkcdc.codec.canal_json.values import Converter, fast_converter, go_utf8_text, strict_converter
from sparkcdc.codec.gofmt import go_json_string
from sparkcdc.errors import EncodeError
from sparkcdc.model import DDLEvent, RowChange, RowOp, TableInfo
from sparkcdc.model.ddl_action import protocol_ddl_type

NowMs = Callable[[], int]

_FAST_PATH_ERRORS: Final = (TypeError, ValueError, AttributeError, OverflowError)
_PLAN_CACHE_LIMIT: Final = 512


def wall_clock_ms() -> int:
    """The default clock for ``ts``: Unix time in milliseconds."""
    return time.time_ns() // 1_000_000


def go_fix(out: bytes) -> bytes:
    """Turn orjson output into easyjson output (HTML-safe escapes, ``\\u0008``/``\\u000c``)."""
    out = html_fix(out)
    if b"\\b" in out or b"\\f" in out:
        out = long_bf(out)
    return out


def html_fix(out: bytes) -> bytes:
    """Escape ``<``, ``>``, ``&``, U+2028, U+2029 as Go does; presence tests are single-byte (memchr) scans."""
    if b"<" in out:
        out = out.replace(b"<", b"\\u003c")
    if b">" in out:
        out = out.replace(b">", b"\\u003e")
    if b"&" in out:
        out = out.replace(b"&", b"\\u0026")
    if b"\xe2" in out:
        out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return out


# Matches \\\\ too, so that scanning left to right consumes escaped backslashes as pairs and a ``b``/``f``
# after one is never taken for an escape.
_BF_RE: Final = re.compile(rb"\\[bf\\]")
_BF_ESCAPES: Final = {b"\\b": b"\\u0008", b"\\f": b"\\u000c", b"\\\\": b"\\\\"}


def _bf_escape(match: re.Match[bytes]) -> bytes:
    return _BF_ESCAPES[match.group()]


def long_bf(out: bytes) -> bytes:
    """``\\b``/``\\f`` escapes -> ``\\u0008``/``\\u000c`` (easyjson's spelling)."""
    return _BF_RE.sub(_bf_escape, out)


def _needs_fix(text: str) -> bool:
    return any(ch in text for ch in "<>&\b\f\u2028\u2029")


def _json(value: Any) -> bytes:
    return go_fix(orjson.dumps(value))


def _selector(positions: tuple[int, ...]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    def select(values: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(values[i] for i in positions)

    return select


class _TypesFragment:
    """``,"sql":"","sqlType":{…},"mysqlType":{…},"old":`` for a set of columns.

    Constant unless an UNSIGNED integer column's java type depends on its value; then one fragment per
    promotion pattern is built on first use and cached.
    """

    __slots__ = ("_codes", "_mysql", "_names", "_promotions", "cache", "constant")

    def __init__(
        self, names: tuple[str, ...], codes: tuple[int, ...], mysql: bytes, promotions: tuple[tuple[int, int, int], ...]
    ) -> None:
        self._names = names
        self._codes = codes
        self._mysql = mysql
        self._promotions = promotions  # (index into the image, threshold, promoted code)
        self.cache: dict[tuple[bool, ...], bytes] = {}
        self.constant: bytes | None = None if promotions else self._build(codes)

    def _build(self, codes: Sequence[int]) -> bytes:
        sql_types = _json(dict(zip(self._names, codes))) if self._names else b"null"
        return b',"sql":"","sqlType":' + sql_types + b',"mysqlType":' + self._mysql + b',"old":'

    def for_image(self, image: Sequence[Any]) -> bytes:
        if self.constant is not None:
            return self.constant
        return self.for_flags(
            tuple(isinstance(v := image[k], int) and v > threshold for k, threshold, _ in self._promotions)
        )

    def for_flags(self, flags: tuple[bool, ...]) -> bytes:
        """The fragment for one pattern of "value above its threshold" flags (one per promotion)."""
        fragment = self.cache.get(flags)
        if fragment is None:
            codes = list(self._codes)
            for promoted, (k, _, code) in zip(flags, self._promotions):
                if promoted:
                    codes[k] = code
            fragment = self.cache[flags] = self._build(codes)
        return fragment


class _TablePlan:
    """Everything about one TableInfo that does not change from row to row."""

    __slots__ = (
        "_all_types",
        "_convs",
        "_delete_key_only",
        "_fast",
        "_heads",
        "_key_positions",
        "_key_types",
        "_names",
        "_only_updated",
        "_select",
        "_strict",
        "_where",
        "_width",
        "fast_emit",
        "fast_emit_txn",
        "fast_line",
        "table",
    )

    def __init__(self, table: TableInfo, config: CanalJsonConfig) -> None:
        self.table = table
        self._where = f"{table.schema}.{table.table}"
        self._width = len(table.columns)
        columns = [(i, c) for i, c in table.iter_columns(include_virtual=False)]
        positions = tuple(i for i, _ in columns)
        self._select = None if positions == tuple(range(self._width)) else _selector(positions)
        self._names = tuple(c.name for _, c in columns)
        self._convs: tuple[Converter | None, ...] = tuple(fast_converter(c) for _, c in columns)
        self._fast = tuple((k, self._names[k], conv) for k, conv in enumerate(self._convs) if conv is not None)
        self._strict = tuple(strict_converter(c, f"{self._where}.{c.name}") for _, c in columns)
        self._only_updated = config.only_output_updated_columns
        self._delete_key_only = config.delete_only_output_handle_key_columns
        self._key_positions = tuple(k for k, (_, c) in enumerate(columns) if c.handle_key)

        head = (
            b'{"id":0,"database":'
            + _json(table.schema)
            + b',"table":'
            + _json(table.table)
            + b',"pkNames":'
            + _json(list(table.primary_key_names))
            + b',"isDdl":false,"type":"'
        )
        self._heads = {op: head + op.value.encode() + b'","es":' for op in RowOp}
        render = full_mysql_type if config.content_compatible else short_mysql_type
        mysql = tuple(render(c) for _, c in columns)
        codes = tuple(base_sql_type(c) for _, c in columns)
        promotions = tuple(
            (k, p[0], p[1]) for k, (_, c) in enumerate(columns) if (p := unsigned_promotion(c)) is not None
        )
        self._all_types = _TypesFragment(self._names, codes, _json(dict(zip(self._names, mysql))), promotions)
        keys = self._key_positions
        key_names = tuple(self._names[k] for k in keys)
        key_promotions = tuple((keys.index(k), threshold, code) for k, threshold, code in promotions if k in keys)
        self._key_types = _TypesFragment(
            key_names, tuple(codes[k] for k in keys), _json({self._names[k]: mysql[k] for k in keys}), key_promotions
        )
        self.fast_line, emit, emit_txn = compile_line(
            width=self._width,
            columns=columns,
            heads=self._heads,
            constant_types=self._all_types.constant,
            types_lookup=self._all_types.for_flags,
            types_cache=self._all_types.cache,
            promotions=[(positions[k], threshold) for k, threshold, _ in promotions],
            delete_full=not self._delete_key_only,
            update_full=not self._only_updated,
            fallback=self._generic_bf_line,
            checked=self.checked_line,
            long_bf=long_bf,
        )
        self.fast_emit: EmitFunction | None = emit
        self.fast_emit_txn: EmitTxnFunction | None = emit_txn
        if any(_needs_fix(name) for name in self._names):
            fast = self.fast_line

            def fast_fixed(row: RowChange, mid: bytes, tail: bytes) -> bytes:
                return go_fix(fast(row, mid, tail))

            self.fast_line = fast_fixed
            self.fast_emit = self.fast_emit_txn = None  # lines need their own fix-ups

    # -- images ------------------------------------------------------------------------------------------

    def _image(self, values: Sequence[Any] | None) -> Sequence[Any]:
        if values is None or len(values) != self._width:
            raise EncodeError(
                f"{self._where}: row has {0 if values is None else len(values)} values but the table has "
                f"{self._width} columns"
            )
        return values if self._select is None else self._select(values)

    def _dump(self, image: Sequence[Any]) -> bytes:
        data = dict(zip(self._names, image))
        for k, name, conv in self._fast:
            value = image[k]
            if value is not None:
                data[name] = conv(value)
        return orjson.dumps(data)

    def _dump_columns(self, image: Sequence[Any], keep: Sequence[int], strict: bool) -> bytes:
        convs = self._strict if strict else self._convs
        data: dict[str, Any] = {}
        for k in keep:
            value = image[k]
            conv = convs[k]
            data[self._names[k]] = value if value is None or conv is None else conv(value)
        return orjson.dumps(data)

    def line(self, row: RowChange, mid: bytes, tail: bytes) -> bytes:
        """One line (without HTML fix-ups); ``mid`` is ``es,"ts":ts`` and ``tail`` closes ``data`` and the
        object. Falls back to the type-checking path on any conversion failure."""
        try:
            return self.fast_line(row, mid, tail)
        except EncodeError:
            raise
        except _FAST_PATH_ERRORS:
            return self.checked_line(row, mid, tail)

    def checked_line(self, row: RowChange, mid: bytes, tail: bytes) -> bytes:
        """The line built with type-checking converters (BS/FF fixed, HTML escapes left to the caller);
        raises EncodeError naming table and column."""
        try:
            line = self._line(row, mid, tail, strict=True)
            return long_bf(line) if b"\\b" in line or b"\\f" in line else line
        except EncodeError:
            raise
        except _FAST_PATH_ERRORS as e:
            raise EncodeError(f"{self._where}: cannot encode row: {e}") from e

    def _generic_bf_line(self, row: RowChange, mid: bytes, tail: bytes) -> bytes:
        line = self._line(row, mid, tail, strict=False)
        return long_bf(line) if b"\\b" in line or b"\\f" in line else line

    def _line(self, row: RowChange, mid: bytes, tail: bytes, *, strict: bool) -> bytes:
        op = row.op
        if op is RowOp.INSERT:
            image = self._image(row.after)
            data = self._dump_columns(image, range(len(image)), True) if strict else self._dump(image)
            return b"".join((self._heads[op], mid, self._all_types.for_image(image), b'null,"data":[', data, tail))
        if op is RowOp.DELETE:
            image = self._image(row.before)
            if self._delete_key_only:
                data = self._dump_columns(image, self._key_positions, strict)
                types = self._key_types.for_image([image[k] for k in self._key_positions])
            else:
                data = self._dump_columns(image, range(len(image)), True) if strict else self._dump(image)
                types = self._all_types.for_image(image)
            return b"".join((self._heads[op], mid, types, b'null,"data":[', data, tail))
        new = self._image(row.after)
        old = self._image(row.before)
        if self._only_updated:
            old_data = self._dump_columns(old, [k for k in range(len(old)) if old[k] != new[k]], strict)
        else:
            old_data = self._dump_columns(old, range(len(old)), True) if strict else self._dump(old)
        new_data = self._dump_columns(new, range(len(new)), True) if strict else self._dump(new)
        return b"".join(
            (self._heads[op], mid, self._all_types.for_image(new), b"[", old_data, b'],"data":[', new_data, tail)
        )


class _PlanCache:
    """TableInfo -> plan, looked up by identity first (rows of a transaction share one TableInfo)."""

    def __init__(self, config: CanalJsonConfig) -> None:
        self._config = config
        self._by_id: dict[int, _TablePlan] = {}
        self._by_value: dict[TableInfo, _TablePlan] = {}

    def get(self, table: TableInfo) -> _TablePlan:
        plan = self._by_id.get(id(table))
        if plan is not None and plan.table is table:
            return plan
        if len(self._by_id) >= _PLAN_CACHE_LIMIT:
            self._by_id.clear()
            self._by_value.clear()
        try:
            plan = self._by_value.get(table)
        except TypeError:  # unhashable contents (e.g. a list default); identity cache only
            plan = None
        if plan is None:
            plan = _TablePlan(table, self._config)
            try:
                self._by_value[table] = plan
            except TypeError:
                pass
        self._by_id[id(table)] = plan
        plan.table = table
        return plan


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
        self._plans = _PlanCache(self.config)
        self._terminator = self.config.terminator.encode()
        term = self.config.terminator
        # A terminator holding characters go_fix rewrites must not pass through a whole-buffer fix.
        self._fix_per_line = not term.isascii() or any(ch in term for ch in "<>&\\")

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
        plan: _TablePlan | None = None
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
                except _FAST_PATH_ERRORS:
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
    both other cases raise EncodeError (check ``emits_watermarks`` first).
    """

    def __init__(self, config: CanalJsonConfig | None = None, *, now_ms: NowMs = wall_clock_ms) -> None:
        self.config = config or CanalJsonConfig()
        self._now_ms = now_ms
        self._plans = _PlanCache(self.config)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.config,), {"_now_ms": self._now_ms})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._now_ms = state["_now_ms"]

    @property
    def emits_watermarks(self) -> bool:
        return self.config.enable_tidb_extension

    def encode_row(self, row: RowChange) -> Message:
        plan = self._plans.get(row.table)
        mid = str(row.commit_ts >> 18).encode() + b',"ts":' + str(self._now_ms()).encode()
        line = plan.line(row, mid, _tail(self.config, row.commit_ts, b""))  # BS/FF already fixed
        return Message(key=None, value=html_fix(line))

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
