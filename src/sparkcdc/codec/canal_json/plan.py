"""The per-table plan of the canal-json DML encoders, and Go's JSON escaping on finished bytes.

Speed comes from a plan built once per TableInfo: the constant prefix of each line
(``{"id":0,"database":…,"type":"INSERT","es":``), the ``sqlType``/``mysqlType`` fragments (one per
pattern of value-dependent unsigned promotions), and per-column converters. A row image becomes a dict
of column name -> text and is serialised with one ``orjson.dumps`` call. orjson and Go's easyjson escape
strings alike except for ``<``, ``>``, ``&``, U+2028/U+2029 (Go escapes them) and BS/FF (easyjson writes
``\\u0008``/``\\u000c``, orjson ``\\b``/``\\f``); ``go_fix`` patches those on the finished bytes, which
is safe because outside string literals the JSON text contains none of these characters or backslashes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final

import orjson

from sparkcdc.codec.canal_json.compiled import EmitFunction, EmitTxnFunction, compile_line
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.message import base_sql_type, full_mysql_type, short_mysql_type, unsigned_promotion
from sparkcdc.codec.canal_json.values import Converter, fast_converter, is_binary_column_type, strict_converter
from sparkcdc.errors import EncodeError
from sparkcdc.model import RowChange, RowOp, TableInfo
from sparkcdc.model.column_type import INTEGER_TYPES

FAST_PATH_ERRORS: Final = (TypeError, ValueError, AttributeError, OverflowError)
PLAN_CACHE_LIMIT: Final = 512
_NATIVE_PROMOTIONS: Final = 8  # at most 2**8 sqlType fragments precomputed for the native kernel
_INT_LIKE: Final = INTEGER_TYPES | {"year", "bit", "enum", "set"}


def _native_kind(type_name: str) -> int:
    """The native kernel's value kind of a column type (``native/src/canal.rs``)."""
    if type_name in _INT_LIKE:
        return 0
    if type_name == "float":
        return 1
    if type_name == "double":
        return 2
    if type_name == "decimal":
        return 3
    if is_binary_column_type(type_name):
        return 4
    return 5


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

    @property
    def promotions(self) -> tuple[tuple[int, int, int], ...]:
        return self._promotions

    def every_pattern(self) -> list[bytes]:
        """The fragment of each promotion pattern, indexed by its bits (bit j: promotion j's value is above)."""
        n = len(self._promotions)
        return [self.for_flags(tuple(bool(m >> j & 1) for j in range(n))) for m in range(1 << n)]

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


class TablePlan:
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
        "columns",
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
        self.columns = columns
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
            key_names,
            tuple(codes[k] for k in keys),
            _json({self._names[k]: mysql[k] for k in keys}) if keys else b"null",  # Go: empty map -> null
            key_promotions,
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

    def native_spec(self, config: CanalJsonConfig, limit: int | None) -> dict[str, Any] | None:
        """What the native kernel needs of this plan (``native/src/canal.rs``): the line heads, the escaped column
        keys, every sqlType/mysqlType fragment; ``limit`` the longest Kafka message (None: storage lines). None
        when the table has no written column or too many value-dependent types to tabulate."""
        promotions = self._all_types.promotions
        key_promotions = self._key_types.promotions
        if not self.columns or max(len(promotions), len(key_promotions)) > _NATIVE_PROMOTIONS:
            return None
        spec: dict[str, Any] = {
            "heads": [self._heads[RowOp.INSERT], self._heads[RowOp.UPDATE], self._heads[RowOp.DELETE]],
            "columns": [(pos, _native_kind(c.type)) for pos, c in self.columns],
            "names": [_json(name) + b":" for name in self._names],
            "types": self._all_types.every_pattern(),
            "promotions": [(k, threshold) for k, threshold, _ in promotions],
            "key_columns": list(self._key_positions),
            "key_types": self._key_types.every_pattern(),
            "key_promotions": [(k, threshold) for k, threshold, _ in key_promotions],
            "only_updated": self._only_updated,
            "delete_key_only": self._delete_key_only,
            "tidb_extension": config.enable_tidb_extension,
            "terminator": config.terminator.encode(),
        }
        if limit is not None:
            spec["limit"] = limit
        return spec

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
        except FAST_PATH_ERRORS:
            return self.checked_line(row, mid, tail)

    def checked_line(self, row: RowChange, mid: bytes, tail: bytes) -> bytes:
        """The line built with type-checking converters (BS/FF fixed, HTML escapes left to the caller);
        raises EncodeError naming table and column."""
        try:
            line = self._line(row, mid, tail, strict=True)
            return long_bf(line) if b"\\b" in line or b"\\f" in line else line
        except EncodeError:
            raise
        except FAST_PATH_ERRORS as e:
            raise EncodeError(f"{self._where}: cannot encode row: {e}") from e

    def key_only_line(self, row: RowChange, mid: bytes, tail: bytes) -> bytes:
        """TiCDC's handle-key-only line for an oversized row: only handle-key columns in ``sqlType``,
        ``mysqlType``, ``data`` and ``old`` (of those, only changed ones with only-output-updated-columns).

        ``tail`` carries the ``_tidb`` markers. BS/FF are fixed, HTML escapes left to the caller; raises
        EncodeError naming table and column.
        """
        keys = self._key_positions
        op = row.op
        try:
            image = self._image(row.before if op is RowOp.DELETE else row.after)
            types = self._key_types.for_image([image[k] for k in keys])
            data = self._dump_columns(image, keys, True)
            old_part = b"null"
            if op is RowOp.UPDATE:
                old = self._image(row.before)
                keep = [k for k in keys if old[k] != image[k]] if self._only_updated else keys
                old_part = b"[" + self._dump_columns(old, keep, True) + b"]"
        except EncodeError:
            raise
        except FAST_PATH_ERRORS as e:
            raise EncodeError(f"{self._where}: cannot encode row: {e}") from e
        line = b"".join((self._heads[op], mid, types, old_part, b',"data":[', data, tail))
        return long_bf(line) if b"\\b" in line or b"\\f" in line else line

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


class PlanCache:
    """TableInfo -> plan, looked up by identity first (rows of a transaction share one TableInfo)."""

    def __init__(self, config: CanalJsonConfig) -> None:
        self._config = config
        self._by_id: dict[int, TablePlan] = {}
        self._by_value: dict[TableInfo, TablePlan] = {}

    def get(self, table: TableInfo) -> TablePlan:
        plan = self._by_id.get(id(table))
        if plan is not None and plan.table is table:
            return plan
        if len(self._by_id) >= PLAN_CACHE_LIMIT:
            self._by_id.clear()
            self._by_value.clear()
        try:
            plan = self._by_value.get(table)
        except TypeError:  # unhashable contents (e.g. a list default); identity cache only
            plan = None
        if plan is None:
            plan = TablePlan(table, self._config)
            try:
                self._by_value[table] = plan
            except TypeError:
                pass
        self._by_id[id(table)] = plan
        plan.table = table
        return plan
