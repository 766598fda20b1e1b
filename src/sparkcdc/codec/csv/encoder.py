"""CSV storage-sink encoder: one single-table transaction in, file bytes out (``spec/csv.md``).

Speed: a transaction costs one call of a per-table loop compiled from Python source when the table is
first seen (like ``dataclasses`` and ``collections.namedtuple`` do). Each line is one f-string in which
each column is one inline expression (NULL test plus the type's conversion and the quoting/escaping of
``message.py``), so a row runs without a Python call for integers, strings, decimals, doubles in Go's
positional range, binary and ENUM values. Any failure re-encodes the transaction one row at a time
(``encode_rows``), which names the failing column. Formatters are cached by table identity, then by value
(a table unpickled again on an executor reuses its formatter).

The sink-level split of key-changing UPDATEs (``model.events.split_key_updates``) happens before this
encoder; what is done here is the encoder-level rule of ``output-old-value`` (every UPDATE -> D + I rows
flagged ``is-update=true``).
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

import orjson

from sparkcdc.codec.csv.config import CsvConfig
from sparkcdc.codec.csv.message import (
    delimiter_escape,
    escape_field,
    fast_escape_ok,
    header_line,
    string_formatter,
)
from sparkcdc.codec.gofmt import go_float_f, go_float_v
from sparkcdc.codec.native import Kernels
from sparkcdc.errors import EncodeError
from sparkcdc.model import ColumnInfo, Row, RowChange, RowOp, RowsEvent, TableInfo
from sparkcdc.model.column_type import BLOB_TYPES, INTEGER_TYPES

_CACHE_LIMIT: Final = 512

# Characters a value of these types can contain; when the quote/delimiter is none of them the string field
# needs no quoting-replace or escaping pass (still quoted in quote mode).
_DIGITS: Final = frozenset("0123456789")
_DECIMAL_CHARS: Final = _DIGITS | frozenset(".-")
_TEMPORAL_CHARS: Final = _DIGITS | frozenset("-: .")
_BASE64_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_HEX_CHARS: Final = _DIGITS | frozenset("abcdef")


def decimal_text(value: Decimal) -> str:
    """TiDB ``MyDecimal.String()``: positional, keeping the scale (``0E-8`` -> ``0.00000000``)."""
    text = str(value)
    return text if "E" not in text else format(value, "f")


def float64_text(value: float) -> str:
    """Go ``%v`` of a float64, with a fast path for the positional range (Python's repr digits match Go's)."""
    magnitude = value if value >= 0 else -value
    if 1e-4 <= magnitude < 1e6:
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return go_float_v(value, 64)


def float32_text(value: float) -> str:
    return go_float_v(value, 32)


def enum_name(elements: tuple[str, ...], index: int) -> str:
    """ENUM index (1-based) -> element name; 0 or out of range cannot be written (TiDB's ParseEnumValue)."""
    if 0 < index <= len(elements):
        return elements[index - 1]
    raise ValueError(f"enum index {index} out of range 1..{len(elements)}")


def set_names(elements: tuple[str, ...], mask: int) -> str:
    """SET bitmask -> member names joined by ``,``; bits beyond the elements cannot be written."""
    if mask < 0 or mask >> len(elements):
        raise ValueError(f"set value {mask} has bits beyond its {len(elements)} elements")
    return ",".join(e for i, e in enumerate(elements) if mask >> i & 1)


def base64_text(value: bytes) -> str:
    return binascii.b2a_base64(value, newline=False).decode("ascii")


def hex_text(value: bytes) -> str:
    return value.hex()


def handle_key_text(table: TableInfo, image: Row) -> str | None:
    """TiDB's ``kv.Handle.String()``: an integer handle in decimal, a common handle as ``{v1, v2}``.

    ``None`` (written as NULL) when the table has no handle key (TiDB would use ``_tidb_rowid``, which a
    MySQL binlog does not carry). Common-handle datums are written from the column values (TiDB prints the
    memcomparable key's datums; collation keys and packed temporal values are not reproduced).
    """
    positions = table.handle_key_positions
    if not positions:
        return None
    if len(positions) == 1 and table.columns[positions[0]].type in INTEGER_TYPES:
        return str(image[positions[0]])
    return "{" + ", ".join(_datum_text(table.columns[p], image[p]) for p in positions) + "}"


def _datum_text(col: ColumnInfo, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float):
        return go_float_f(value, col.float_bits or 64)
    if isinstance(value, Decimal):
        return decimal_text(value)
    if col.type == "enum" and isinstance(value, int):
        return enum_name(col.elements, value)
    if col.type == "set" and isinstance(value, int):
        return set_names(col.elements, value)
    return str(value)


class _Compiler:
    """Builds the Python source of one table's value formatter for one config."""

    def __init__(self, cfg: CsvConfig) -> None:
        self.cfg = cfg
        self.namespace: dict[str, Any] = {
            "N": cfg.null,
            "D": cfg.delimiter,
            "Q": cfg.quote,
            "QQ": cfg.quote * 2,
            "BS": "\\",
            "BS2": "\\\\",
            "CR": "\r",
            "ECR": "\\r",
            "LF": "\n",
            "ELF": "\\n",
            "ED": delimiter_escape(cfg.delimiter),
            "ESC": lambda value: escape_field(value, cfg.delimiter),
            "DEC": decimal_text,
            "F64": float64_text,
            "F32": float32_text,
            "ENUM": enum_name,
            "SET": set_names,
            "B64": binascii.b2a_base64,
            "J": orjson.dumps,
        }
        self.binary_chars = _BASE64_CHARS if cfg.binary_encoding_method == "base64" else _HEX_CHARS

    def string(self, expr: str, alphabet: frozenset[str] | None = None) -> str:
        """Expression writing the string ``expr`` as a field; ``alphabet`` bounds the characters it may hold."""
        cfg = self.cfg
        if cfg.quote:
            if alphabet is not None and cfg.quote not in alphabet:
                return f"(Q + {expr} + Q)"
            return f"(Q + {expr}.replace(Q, QQ) + Q)"
        if alphabet is not None and not (set(cfg.delimiter) & alphabet):
            return expr
        if fast_escape_ok(cfg.delimiter):
            return f"{expr}.replace(BS, BS2).replace(CR, ECR).replace(LF, ELF).replace(D, ED)"
        return f"ESC({expr})"

    def value(self, col: ColumnInfo, slot: int) -> str:
        """Expression for a non-NULL value ``v`` of ``col`` (``slot`` names per-column constants).

        The usual cases are inlined (a Python call costs as much as the conversion); anything unusual goes
        to the same helper the value would reach anyway, so the output never depends on the inlining.
        """
        t = col.type
        if t in INTEGER_TYPES or t in ("year", "bit"):
            return "v"
        if t == "float":
            return "F32(v)"
        if t == "double":
            # Go %v is positional for 1e-4 <= |v| < 1e6; there orjson writes the shortest round-trip digits
            # positionally like repr() (checked on 1M floats), 4x faster; "1.0" -> "1" as Go writes it.
            positional = "1e-4 <= v < 1e6 or -1e6 < v <= -1e-4"
            return f'((_s[:-2] if (_s := J(v).decode())[-2:] == ".0" else _s) if {positional} else F64(v))'
        if t == "decimal":
            return self.string('(_s if "E" not in (_s := str(v)) else DEC(v))', _DECIMAL_CHARS)
        if t in ("date", "datetime", "timestamp", "time"):
            return self.string("v", _TEMPORAL_CHARS)
        if t in BLOB_TYPES or t == "geometry":
            if self.cfg.binary_encoding_method == "base64":
                return self.string("B64(v)[:-1].decode()", self.binary_chars)  # drops b2a_base64's newline
            return self.string("v.hex()", self.binary_chars)
        if t in ("enum", "set"):
            name = f"E{slot}"
            self.namespace[name] = col.elements
            if t == "enum":  # the written field of every element is a constant
                self.namespace[f"QE{slot}"] = tuple(map(string_formatter(self.cfg), col.elements))
                return f"(QE{slot}[v - 1] if 0 < v <= {len(col.elements)} else ENUM({name}, v))"
            return self.string(f"SET({name}, v)")
        return self.string("v")

    def compile(self, name: str, columns: Sequence[tuple[int, ColumnInfo]]) -> Callable[[Row], str]:
        """``def name(r)`` returning ``D + field`` for every column in ``columns`` (empty string for none)."""
        pieces = [f"{{D}}{{N if (v := r[{i}]) is None else {self.value(col, i)}}}" for i, col in columns]
        body = "f'" + "".join(pieces) + "'" if pieces else "''"
        source = f"def {name}(r):\n    return {body}\n"
        code = compile(source, f"<csv formatter {name}>", "exec")
        local: dict[str, Any] = {}
        exec(code, self.namespace, local)
        fn: Callable[[Row], str] = local[name]
        return fn

    def compile_txn(
        self, columns: Sequence[tuple[int, ColumnInfo]], width: int, prefixes: Mapping[str, str], handle_key: Any
    ) -> Callable[[Sequence[RowChange], TableInfo], list[str] | None]:
        """``def format_txn(rows, table)``: every line of ``rows`` (terminators included) in one loop.

        Each image is unpacked into locals and each line is one f-string, so a row costs no Python call
        beyond its values' conversions. Returns ``None`` at a row of another table; any exception (wrong
        width, wrong value type) sends the caller to the row-at-a-time path, which writes the same bytes or
        raises EncodeError naming the column.
        """
        cfg = self.cfg
        ns = self.namespace
        ns.update(_INSERT=RowOp.INSERT, _DELETE=RowOp.DELETE, HK=handle_key, T=cfg.terminator)
        ns.update({f"P{code}": prefix for code, prefix in prefixes.items()})
        ns.update(UF=cfg.delimiter + "false", UT=cfg.delimiter + "true")

        def line(code: str, image: str, update: bool, key_image: str) -> str:
            meta = "{D}{row.commit_ts}" if cfg.include_commit_ts else ""
            if cfg.output_old_value:
                meta += "{UT}" if update else "{UF}"
            if cfg.output_handle_key:
                meta += f"{{D}}{{HK({key_image})}}"
            fields = "".join(f"{{D}}{{N if (v := {image}{i}) is None else {self.value(col, i)}}}" for i, col in columns)
            return f"f'{{P{code}}}{meta}{fields}{{T}}'"

        def unpack(image: str, attr: str) -> str:
            return ", ".join(f"{image}{i}" for i in range(width)) + f", = row.{attr}"

        src = [
            "def format_txn(rows, table):",
            "    out = []",
            "    ap = out.append",
            "    for row in rows:",
            "        if row.table is not table:",
            "            return None",
            "        op = row.op",
            "        if op is _INSERT:",
            f"            {unpack('a', 'after')}",
            f"            ap({line('I', 'a', False, 'row.after')})",
            "        elif op is _DELETE:",
            f"            {unpack('a', 'before')}",
            f"            ap({line('D', 'a', False, 'row.before')})",
            "        else:  # UPDATE",
            f"            {unpack('a', 'after')}",
        ]
        if cfg.output_old_value:  # D + I rows flagged is-update, the handle key taken from the new image
            src += [
                f"            {unpack('b', 'before')}",
                f"            ap({line('D', 'b', True, 'row.after')})",
                f"            ap({line('I', 'a', True, 'row.after')})",
            ]
        else:
            src.append(f"            ap({line('U', 'a', False, 'row.after')})")
        src.append("    return out")
        local: dict[str, Any] = {}
        exec(compile("\n".join(src) + "\n", "<csv transaction formatter>", "exec"), ns, local)
        fn: Callable[[Sequence[RowChange], TableInfo], list[str] | None] = local["format_txn"]
        return fn


class _TableFormatter:
    """Everything per table: op prefixes, the compiled value formatter, the header."""

    __slots__ = ("columns", "compiler", "format_txn", "handle_key", "header", "prefixes", "table", "values")

    def __init__(self, table: TableInfo, cfg: CsvConfig) -> None:
        self.table = table
        fmt = string_formatter(cfg)
        tail = cfg.delimiter + fmt(table.table) + cfg.delimiter + fmt(table.schema)
        self.prefixes = {op: fmt(op) + tail for op in ("I", "U", "D")}
        self.columns = [(i, c) for i, c in table.iter_columns(include_virtual=False)]
        self.compiler = _Compiler(cfg)
        self.values = self.compiler.compile("format_row", self.columns)
        names = [c.name for _, c in self.columns]
        self.header = header_line(cfg, names).encode("utf-8") if cfg.output_field_header else b""
        self.handle_key = self._handle_key_field(table, cfg)
        self.format_txn = _Compiler(cfg).compile_txn(self.columns, len(table.columns), self.prefixes, self.handle_key)

    def native_spec(self, cfg: CsvConfig) -> dict[str, Any] | None:
        """What the native kernel needs (``native/src/csv.rs``); None when the handle key is a common handle
        (its text is the Python formatter's)."""
        positions = self.table.handle_key_positions
        key = -1
        if cfg.output_handle_key and positions:
            if len(positions) != 1 or self.table.columns[positions[0]].type not in INTEGER_TYPES:
                return None
            key = positions[0]
        fmt = string_formatter(cfg)
        kinds = []
        elements: list[list[bytes]] = []
        for _, col in self.columns:
            t = col.type
            kind = (0 if t in INTEGER_TYPES or t in ("year", "bit") else 1 if t == "float" else 2 if t == "double"
                    else 3 if t == "decimal" else 4 if t in BLOB_TYPES or t == "geometry" else 6 if t == "enum"
                    else 7 if t == "set" else 5)  # fmt: skip
            kinds.append(kind)
            if t == "enum":
                elements.append([fmt(e).encode() for e in col.elements])
            elif t == "set":
                elements.append([e.encode() for e in col.elements])
            else:
                elements.append([])
        return {
            "prefixes": [self.prefixes[code].encode() for code in ("I", "U", "D")],
            "delimiter": cfg.delimiter.encode(),
            "delimiter_escape": delimiter_escape(cfg.delimiter).encode(),
            "null": cfg.null.encode(),
            "quote": cfg.quote.encode(),
            "terminator": cfg.terminator.encode(),
            "include_commit_ts": cfg.include_commit_ts,
            "old_value": cfg.output_old_value,
            "handle_key": cfg.output_handle_key,
            "handle_key_pos": key,
            "columns": [(pos, kind) for (pos, _), kind in zip(self.columns, kinds, strict=True)],
            "elements": elements,
            "hex": cfg.binary_encoding_method == "hex",
        }

    @staticmethod
    def _handle_key_field(table: TableInfo, cfg: CsvConfig) -> Callable[[Row], str]:
        """The HANDLE_KEY field writer (a string field, NULL when the table has no handle)."""
        fmt = string_formatter(cfg)
        positions = table.handle_key_positions
        if not positions:
            return lambda image: cfg.null
        if len(positions) == 1 and table.columns[positions[0]].type in INTEGER_TYPES:
            at = positions[0]
            return lambda image: fmt(str(image[at]))

        def common_handle(image: Row) -> str:
            try:
                return fmt(handle_key_text(table, image) or "")
            except (TypeError, ValueError, AttributeError, IndexError) as e:
                raise EncodeError(f"{table.qualified_name}: cannot write the handle key: {e}") from e

        return common_handle

    def format_values(self, image: Row) -> str:
        """``D + field`` for every non-virtual column; EncodeError names the column that cannot be written."""
        try:
            return self.values(image)
        except (TypeError, ValueError, AttributeError, IndexError, OverflowError) as e:
            if len(image) != len(self.table.columns):
                raise EncodeError(
                    f"{self.table.qualified_name}: row has {len(image)} values for {len(self.table.columns)} columns"
                ) from e
            for i, col in self.columns:  # find the culprit with one compiled formatter per column
                try:
                    self.compiler.compile("format_column", [(i, col)])(image)
                except (TypeError, ValueError, AttributeError, IndexError, OverflowError) as col_err:
                    raise EncodeError(
                        f"{self.table.qualified_name}: column {col.name!r} ({col.type}): cannot write "
                        f"{type(image[i]).__name__} value: {col_err}"
                    ) from col_err
            raise EncodeError(f"{self.table.qualified_name}: cannot write row: {e}") from e


class CsvEncoder:
    """``TxnEncoder`` for ``protocol=csv``. Stateless apart from the formatter cache; not thread-safe."""

    file_extension = ".csv"

    def __init__(self, config: CsvConfig | None = None) -> None:
        self.config = config or CsvConfig()
        cfg = self.config
        self._by_id: dict[int, tuple[TableInfo, _TableFormatter]] = {}
        self._by_value: dict[TableInfo, _TableFormatter] = {}
        self._is_update = {True: cfg.delimiter + "true", False: cfg.delimiter + "false"}
        self._kernels: dict[bool, Kernels] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        # Compiled formatters do not pickle; an encoder shipped to a Spark executor rebuilds them there.
        return (CsvEncoder, (self.config,))

    def _formatter(self, table: TableInfo) -> _TableFormatter:
        entry = self._by_id.get(id(table))
        if entry is not None and entry[0] is table:
            return entry[1]
        fmt = self._by_value.get(table)
        if fmt is None:
            if len(self._by_value) >= _CACHE_LIMIT:
                self._by_value.clear()
            fmt = _TableFormatter(table, self.config)
            self._by_value[table] = fmt
        if len(self._by_id) >= _CACHE_LIMIT:
            self._by_id.clear()
        self._by_id[id(table)] = (table, fmt)  # keeps the table alive, so its id cannot be reused
        return fmt

    def file_header(self, table: TableInfo) -> bytes:
        """The header line (with terminator) when output-field-header is on, else ``b""``."""
        return self._formatter(table).header

    def encode_txn(self, rows: Sequence[RowChange]) -> bytes:
        """Rows of one transaction -> CSV bytes, each row ended by the terminator.

        Raises:
            EncodeError: a value its column type cannot write (ENUM index 0, SET bits out of range, a value
                of the wrong Python type, text that is not encodable as UTF-8).
        """
        if rows:
            try:
                lines = self._formatter(rows[0].table).format_txn(rows, rows[0].table)
            except (TypeError, ValueError, AttributeError, IndexError, OverflowError):
                lines = None  # the row-at-a-time path below names the culprit
            if lines is not None:
                return self._encode("".join(lines))
        return self.encode_rows(rows)

    def encode_events(self, events: Sequence[RowsEvent], split_updates: bool) -> tuple[bytes, int] | None:
        """``encode_txn`` of the events' rows through the native kernel: (lines, rows), or None when the Python
        path must encode them (it names a failing column; ``split_updates``: a key-changing UPDATE to split)."""
        kernels = self._kernels.get(split_updates)
        if kernels is None:
            kernels = self._kernels[split_updates] = Kernels(
                "csv", lambda e: self._formatter(e.table).native_spec(self.config), split_updates
            )
        result: tuple[bytes, int] | None = kernels.encode(events, 0)
        return result

    def encode_rows(self, rows: Sequence[RowChange]) -> bytes:
        """``encode_txn`` one row at a time (the path that names a failing column; a reference for tests)."""
        cfg = self.config
        delimiter, terminator = cfg.delimiter, cfg.terminator
        with_ts, old_value, with_handle = cfg.include_commit_ts, cfg.output_old_value, cfg.output_handle_key
        is_update = self._is_update
        out: list[str] = []
        append = out.append
        table: TableInfo | None = None
        fmt: _TableFormatter | None = None
        for row in rows:
            if row.table is not table:
                table = row.table
                fmt = self._formatter(table)
            assert fmt is not None and table is not None
            op = row.op
            if op is RowOp.UPDATE and old_value:
                assert row.before is not None and row.after is not None
                images: tuple[tuple[str, Row], ...] = (("D", row.before), ("I", row.after))
                update = True
            elif op is RowOp.DELETE:
                assert row.before is not None
                images = (("D", row.before),)
                update = False
            else:
                assert row.after is not None
                images = (("U" if op is RowOp.UPDATE else "I", row.after),)
                update = False
            for code, image in images:
                append(fmt.prefixes[code])
                if with_ts:
                    append(delimiter)
                    append(str(row.commit_ts))
                if old_value:
                    append(is_update[update])
                if with_handle:
                    append(delimiter)
                    append(fmt.handle_key(row.after if row.after is not None else image))
                append(fmt.format_values(image))
                append(terminator)
        return self._encode("".join(out))

    @staticmethod
    def _encode(text: str) -> bytes:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise EncodeError(f"csv: text is not encodable as UTF-8 ({e.reason}); check the column charset") from e


def from_options(options: Mapping[str, Any]) -> CsvEncoder:
    """Registry factory: ``txn_encoder("csv", {"delimiter": ",", "include-commit-ts": True, …})``.

    Raises:
        ConfigError: unknown option or invalid value.
    """
    return CsvEncoder(CsvConfig.from_options(options))
