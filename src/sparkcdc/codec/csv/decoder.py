r"""CSV storage-sink decoder: one data file plus its table definition in, ``RowChange`` events out.

Parsing: quote mode and escape mode as written by TiCDC (``spec/csv.md`` §3), multi-byte delimiters, the
configured terminator (an empty terminator accepts CRLF, LF and CR), the header line when
``output-field-header`` is on (checked case-insensitively against the table's columns), the commit-ts,
is-update and handle-key columns (the handle key is skipped; TiCDC's own decoder cannot do that). Each row is
matched by one regular expression compiled per table (one or two groups per field); a row that does not match is
re-scanned field by field to report where it breaks.

Values are typed back from the ``TableInfo`` into the model's Python types (``model/column_type.py``).

What a CSV file cannot carry, and how it decodes (everything else round-trips exactly):

* ``U`` rows (UPDATE without output-old-value) hold only the new image. They decode as ``RowOp.INSERT`` of
  that image, i.e. an *upsert* -- the same thing TiCDC's consumer does ("insert-like events"). Appliers must
  write CSV inserts as upserts (``REPLACE``/``INSERT … ON DUPLICATE KEY UPDATE``).
* With output-old-value, a ``D`` row and the following ``I`` row both flagged ``is-update=true`` are one
  UPDATE and decode as ``RowOp.UPDATE`` with both images; rows flagged ``false`` decode as DELETE/INSERT.
* Virtual generated columns are not written; they decode as ``None``.
* Without include-commit-ts the commit ts decodes as 0; ``physical_table_id``/``start_ts`` decode as 0.
* Ambiguous configs (the encoder writes them, nothing can read them back exactly): in escape mode a string
  equal to the null string when the null string has no backslash (``null=NULL``), or the empty string when
  ``null`` is empty; in escape mode a delimiter made only of ``r``/``n`` characters (its escaped form equals
  an escaped CR/LF); in escape mode a delimiter that overlaps itself (``;;``, ``***``) after a value ending in
  its prefix (``;`` + ``;;`` reads as ``;;`` + ``;``); a terminator other than CR/LF combinations appearing
  inside escape-mode text.
* Text is UTF-8 (TiCDC writes the column's raw bytes, so a latin1/gbk column would not decode here).
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from sparkcdc.codec.csv.config import CsvConfig
from sparkcdc.codec.csv.message import META_HEADER, delimiter_escape, header_names
from sparkcdc.codec.gofmt import float32
from sparkcdc.errors import DecodeError
from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.column_type import BLOB_TYPES, INTEGER_TYPES

_FLOAT_RE: Final = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?Inf|NaN")
_DECIMAL_RE: Final = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_HEX_RE: Final = re.compile(r"(?:[0-9a-fA-F]{2})*")
_MAX_U64: Final = (1 << 64) - 1
_OPS: Final = ("I", "U", "D")


class _FieldError(ValueError):
    """A value that does not parse for its column; converted to DecodeError with the position."""


_INT_BITS: Final = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}


def _int_parser(signed: bool, bits: int = 64) -> Callable[[str], int]:
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)

    def parse(text: str) -> int:
        # str methods instead of a regex: int() alone would accept "1_0", " 1", "+1" and non-ASCII digits
        digits = text[1:] if signed and text[:1] == "-" else text
        if not (digits.isascii() and digits.isdigit()):
            raise _FieldError(f"{text[:40]!r} is not an {'' if signed else 'unsigned '}integer")
        value = int(text)
        if not low <= value <= high:
            raise _FieldError(f"{text} is out of range [{low}, {high}]")
        return value

    return parse


def _float_parser(bits: int) -> Callable[[str], float]:
    def parse(text: str) -> float:
        if not _FLOAT_RE.fullmatch(text):
            raise _FieldError(f"{text[:40]!r} is not a float")
        value = float(text)
        return float32(value) if bits == 32 else value

    return parse


def _parse_decimal(text: str) -> Decimal:
    if not _DECIMAL_RE.fullmatch(text):
        raise _FieldError(f"{text[:40]!r} is not a decimal")
    try:
        return Decimal(text)
    except InvalidOperation as e:  # pragma: no cover - the pattern admits only valid literals
        raise _FieldError(f"{text[:40]!r} is not a decimal") from e


def _parse_base64(text: str) -> bytes:
    try:
        return binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError) as e:
        raise _FieldError(f"invalid base64 ({e})") from e


def _parse_hex(text: str) -> bytes:
    if not _HEX_RE.fullmatch(text):
        raise _FieldError("invalid hex (odd length or a non-hex digit)")
    return bytes.fromhex(text)


def _enum_parser(col: ColumnInfo) -> Callable[[str], int]:
    index: dict[str, int] = {}
    for i, name in enumerate(col.elements, 1):
        index.setdefault(name, i)

    def parse(text: str) -> int:
        try:
            return index[text]
        except KeyError:
            raise _FieldError(f"{text[:40]!r} is not an element of enum{col.elements!r}") from None

    return parse


def _set_parser(col: ColumnInfo) -> Callable[[str], int]:
    bits: dict[str, int] = {}
    for i, name in enumerate(col.elements):
        bits.setdefault(name, 1 << i)

    def parse(text: str) -> int:
        if not text:
            return 0
        mask = 0
        for name in text.split(","):
            bit = bits.get(name)
            if bit is None:
                raise _FieldError(f"{name[:40]!r} is not an element of set{col.elements!r}")
            mask |= bit
        return mask

    return parse


def column_parser(col: ColumnInfo, cfg: CsvConfig) -> Callable[[str], Any]:
    """The function that turns a non-NULL field of ``col`` into its model value (raises ``ValueError``)."""
    t = col.type
    if t in INTEGER_TYPES:
        return _int_parser(signed=not col.unsigned, bits=_INT_BITS[t])
    if t in ("bit", "year"):
        return _int_parser(signed=False)
    if t == "float":
        return _float_parser(32)
    if t == "double":
        return _float_parser(64)
    if t == "decimal":
        return _parse_decimal
    if t in BLOB_TYPES or t == "geometry":
        return _parse_base64 if cfg.binary_encoding_method == "base64" else _parse_hex
    if t == "enum":
        return _enum_parser(col)
    if t == "set":
        return _set_parser(col)
    return str  # text, temporal, JSON, vector: the field itself (str() returns the same object)


class _Grammar:
    """Regular expressions for one config: a field, a row of n fields, and escape-mode unescaping."""

    def __init__(self, cfg: CsvConfig) -> None:
        self.cfg = cfg
        d = re.escape(cfg.delimiter)
        self.term = re.escape(cfg.terminator) if cfg.terminator else r"(?:\r\n|\n|\r)"
        simple = len(cfg.delimiter) == 1 and cfg.terminator in ("", "\r\n", "\n", "\r")
        if cfg.quote:
            q = re.escape(cfg.quote)
            quoted = f"{q}([^{q}]*(?:{q}{q}[^{q}]*)*){q}"
            bare = f"([^{q}{d}\\r\\n]*)" if simple else f"((?:(?!{d}|{self.term})[^{q}])*)"
            self.field = f"(?:{quoted}|{bare})"
        else:
            if simple:
                self.field = f"([^\\\\{d}\\r\\n]*(?:\\\\.[^\\\\{d}\\r\\n]*)*)"
            else:
                self.field = f"((?:\\\\.|(?!{d}|{self.term})[^\\\\])*)"
            # An escaped delimiter is taken whole first, so delimiters holding ``r``/``n`` decode right.
            escaped = re.escape(delimiter_escape(cfg.delimiter))
            self.unescape_re = re.compile(f"{escaped}|\\\\(.)", re.DOTALL)
        self.field_re = re.compile(self.field, re.DOTALL)
        self.term_re = re.compile(self.term)
        self.sep_re = re.compile(f"({d})|{self.term}|\\Z")
        self.delim_re = re.compile(d)

    def row(self, n_fields: int) -> re.Pattern[str]:
        sep = re.escape(self.cfg.delimiter)
        body = sep.join([self.field] * n_fields)
        end = self.term if self.cfg.terminator else f"(?:{self.term}|\\Z)"
        return re.compile(body + end, re.DOTALL)

    def unescape(self, raw: str) -> str:
        r"""Escape mode: ``\r`` -> CR, ``\n`` -> LF, ``\X`` -> X, escaped delimiter -> delimiter.

        For a non-ASCII delimiter TiCDC wrote each escaped delimiter byte as U+0080..U+00FF (see
        ``message.delimiter_escape``); matching the whole escaped delimiter first undoes that.
        """
        delimiter = self.cfg.delimiter

        def one(m: re.Match[str]) -> str:
            ch = m.group(1)
            if ch is None:
                return delimiter
            if ch == "r":
                return "\r"
            if ch == "n":
                return "\n"
            return ch

        return self.unescape_re.sub(one, raw)


class _TableParser:
    """Per-table compiled state: the row regex, column parsers and positions."""

    def __init__(self, table: TableInfo, cfg: CsvConfig, grammar: _Grammar) -> None:
        self.table = table
        self.visible = [(i, c) for i, c in table.iter_columns(include_virtual=False)]
        self.n_meta = 3 + cfg.include_commit_ts + cfg.output_old_value + cfg.output_handle_key
        self.n_fields = self.n_meta + len(self.visible)
        self.row_re = grammar.row(self.n_fields)
        self.parsers = [column_parser(c, cfg) for _, c in self.visible]
        self.has_virtual = len(self.visible) != len(table.columns)
        self.header = cfg.delimiter.join(header_names(cfg, [c.name for _, c in self.visible])).lower()
        self.convert = self._compile(table, cfg, grammar)

    def _compile(self, table: TableInfo, cfg: CsvConfig, grammar: _Grammar) -> Callable[[tuple[Any, ...]], Any]:
        """``convert(groups) -> ((op, commit_ts_text, is_update_text), values)`` for one matched row.

        Compiled from Python source (as the encoder's formatter) so a row is one call without a loop over
        fields. Parsers raise ``ValueError``; the caller then re-runs the generic path to name the column.
        """
        namespace: dict[str, Any] = {"N": cfg.null, "Q": cfg.quote, "QQ": cfg.quote * 2, "BS": "\\"}
        namespace["UNESC"] = grammar.unescape if not cfg.quote else None

        def field(k: int) -> str:
            if cfg.quote:  # groups alternate (quoted content, bare text); one of each pair is None
                bare = f"(None if (b := g[{2 * k + 1}]) == N else b)"
                return f"(q.replace(QQ, Q) if (q := g[{2 * k}]) is not None else {bare})"
            return f"(None if (x := g[{k}]) == N else (UNESC(x) if BS in x else x))"

        ts = field(3) if cfg.include_commit_ts else "None"
        flag = field(3 + cfg.include_commit_ts) if cfg.output_old_value else "None"
        position = {i: j for j, (i, _) in enumerate(self.visible)}
        values = []
        for i, _ in enumerate(table.columns):
            j = position.get(i)
            if j is None:
                values.append("None")
            elif self.parsers[j] is str:
                values.append(field(self.n_meta + j))
            else:
                namespace[f"P{j}"] = self.parsers[j]
                values.append(f"(None if (t := {field(self.n_meta + j)}) is None else P{j}(t))")
        source = f"def convert(g):\n    return ({field(0)}, {ts}, {flag}), ({', '.join(values)},)\n"
        local: dict[str, Any] = {}
        exec(compile(source, f"<csv row converter {table.qualified_name}>", "exec"), namespace, local)
        fn: Callable[[tuple[Any, ...]], Any] = local["convert"]
        return fn


class CsvDecoder:
    """``FileDecoder`` for ``protocol=csv``. Not thread-safe (caches per table)."""

    def __init__(self, config: CsvConfig | None = None) -> None:
        self.config = config or CsvConfig()
        self._grammar = _Grammar(self.config)
        self._tables: dict[int, tuple[TableInfo, _TableParser]] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        # Per-table parsers hold closures that do not pickle; a decoder shipped to an executor rebuilds them.
        return (CsvDecoder, (self.config,))

    def _parser(self, table: TableInfo) -> _TableParser:
        entry = self._tables.get(id(table))
        if entry is not None and entry[0] is table:
            return entry[1]
        if len(self._tables) >= 256:
            self._tables.clear()
        parser = _TableParser(table, self.config, self._grammar)
        self._tables[id(table)] = (table, parser)
        return parser

    def decode_file(self, data: bytes, table: TableInfo, *, source: str = "") -> Iterator[RowChange]:
        """Decode one data file written for ``table``.

        Raises:
            DecodeError: invalid UTF-8, a missing or different header, a truncated row, an unterminated
                quote, a wrong field count, an unknown operation, a bad commit-ts or is-update flag, or a
                value that does not parse for its column type. The message names ``source``, the line and
                the column.
        """
        where = source or "<csv>"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            text = data.decode("utf-8", "surrogateescape")
            column = self._column_at(text, len(data[: e.start].decode("utf-8", "surrogateescape")), table)
            raise DecodeError(f"{where}: line {line}, column {column!r}: invalid UTF-8 at byte {e.start}") from None
        return self._rows(text, table, where)

    def _field_names(self, tp: _TableParser) -> list[str]:
        names = list(META_HEADER)
        if self.config.include_commit_ts:
            names.append("commit-ts")
        if self.config.output_old_value:
            names.append("is-update")
        if self.config.output_handle_key:
            names.append("handle-key")
        names.extend(c.name for _, c in tp.visible)
        return names

    def _column_at(self, text: str, offset: int, table: TableInfo) -> str:
        """Name of the field holding character ``offset`` (for errors found before parsing)."""
        names = self._field_names(self._parser(table))
        grammar = self._grammar
        pos, count = 0, 0
        if self.config.output_field_header:
            m = grammar.term_re.search(text)
            if m is None or offset < m.end():
                return "header"
            pos = m.end()
        while pos < len(text):
            fm = grammar.field_re.match(text, pos)
            assert fm is not None  # every pattern admits the empty field
            sm = grammar.sep_re.match(text, fm.end())
            if offset < fm.end() or sm is None or offset < sm.end():
                break
            count = count + 1 if sm.group(1) is not None else 0
            pos = sm.end()
        return names[count] if count < len(names) else f"#{count + 1}"

    def _rows(self, text: str, table: TableInfo, where: str) -> Iterator[RowChange]:
        cfg = self.config
        tp = self._parser(table)
        pos = 0
        if cfg.output_field_header and text:
            m = self._grammar.term_re.search(text)
            if m is None:
                raise DecodeError(f"{where}: line 1: header line has no terminator")
            if text[: m.start()].lower() != tp.header:
                raise DecodeError(
                    f"{where}: line 1: header {text[: m.start()][:200]!r} does not match the table's columns "
                    f"{tp.header[:200]!r}"
                )
            pos = m.end()
        with_ts, with_flag = cfg.include_commit_ts, cfg.output_old_value
        convert = tp.convert
        row_match = tp.row_re.match
        end = len(text)
        pending: RowChange | None = None  # the D half of an is-update pair
        while pos < end:
            m = row_match(text, pos)
            if m is None:
                raise self._diagnose(text, pos, tp, where)
            row_pos = pos
            pos = m.end()
            try:
                (op, ts_text, flag), values = convert(m.groups())
            except (ValueError, OverflowError):
                raise self._value_error(m, tp, text, row_pos, where) from None
            if op not in _OPS:
                raise self._error(text, row_pos, where, "operation", f"{op!r} is not I, U or D")
            commit_ts = 0
            if with_ts:
                if ts_text is None or not ts_text.isdigit() or not ts_text.isascii() or int(ts_text) > _MAX_U64:
                    raise self._error(text, row_pos, where, "commit-ts", f"{ts_text!r} is not a uint64 commit ts")
                commit_ts = int(ts_text)
            is_update = False
            if with_flag:
                if flag not in ("true", "false"):
                    raise self._error(text, row_pos, where, "is-update", f"{flag!r} is not true or false")
                is_update = flag == "true"
            if pending is not None:
                if not (is_update and op == "I" and commit_ts == pending.commit_ts):
                    raise self._error(
                        text, row_pos, where, "operation", "an is-update D row is not followed by its I row"
                    )
                yield RowChange(commit_ts, table, RowOp.UPDATE, pending.before, values)
                pending = None
                continue
            if op == "D":
                change = RowChange(commit_ts, table, RowOp.DELETE, values, None)
                if is_update:
                    pending = change
                    continue
                yield change
            else:
                if is_update:
                    raise self._error(text, row_pos, where, "operation", "an is-update I row has no D row before it")
                yield RowChange(commit_ts, table, RowOp.INSERT, None, values)
        if pending is not None:
            raise self._error(text, end, where, "operation", "the file ends inside an is-update D+I pair")

    def _fields(self, m: re.Match[str]) -> list[str | None]:
        """The fields of a matched row, generic (slow) form of the compiled converter."""
        cfg = self.config
        groups = m.groups()
        if cfg.quote:
            return [
                (None if b == cfg.null else b) if q is None else q.replace(cfg.quote * 2, cfg.quote)
                for q, b in zip(groups[0::2], groups[1::2], strict=True)
            ]
        unescape = self._grammar.unescape
        return [None if raw == cfg.null else (unescape(raw) if "\\" in raw else raw) for raw in groups]

    def _value_error(self, m: re.Match[str], tp: _TableParser, text: str, row_pos: int, where: str) -> DecodeError:
        """Name the column whose value did not parse (the compiled converter only says that one did not)."""
        raw = self._fields(m)[tp.n_meta :]
        for (_, col), parse, f in zip(tp.visible, tp.parsers, raw, strict=True):
            try:
                if f is not None:
                    parse(f)
            except (ValueError, OverflowError) as e:
                return self._error(text, row_pos, where, col.name, str(e))
        return self._error(text, row_pos, where, "?", "a value does not parse")  # pragma: no cover

    def _error(self, text: str, pos: int, where: str, column: str, what: str) -> DecodeError:
        line = text.count("\n", 0, pos) + 1
        return DecodeError(f"{where}: line {line}, column {column!r}: {what}")

    def _diagnose(self, text: str, pos: int, tp: _TableParser, where: str) -> DecodeError:
        """Re-scan a row that did not match field by field and say what is wrong with it."""
        line = text.count("\n", 0, pos) + 1
        names = self._field_names(tp)
        grammar = self._grammar
        count = 0
        while True:
            column = names[count] if count < len(names) else f"#{count + 1}"
            fm = grammar.field_re.match(text, pos)
            assert fm is not None  # every pattern admits the empty field
            pos = fm.end()
            count += 1
            sm = grammar.sep_re.match(text, pos)
            if sm is None:
                if self.config.quote and text.startswith(self.config.quote, fm.start()) and fm.end() == fm.start():
                    what = "unterminated quoted field"
                else:
                    what = "unexpected character after the field (stray quote or garbage)"
                return DecodeError(f"{where}: line {line}, column {column!r}: {what}")
            if sm.group(1) is None:
                break
            pos = sm.end()
        if sm.end() == len(text) and sm.end() == sm.start() and self.config.terminator and count == tp.n_fields:
            return DecodeError(f"{where}: line {line}: truncated row (no terminator at the end of the file)")
        if count != tp.n_fields:
            return DecodeError(
                f"{where}: line {line}: row has {count} fields, expected {tp.n_fields} "
                f"({tp.n_meta} meta + {len(tp.visible)} columns); if every row is so, read it with the "
                "changefeed's [sink.csv] settings (a consumer's --config: include-commit-ts, output-old-value, "
                "output-handle-key, delimiter)"
            )
        return DecodeError(f"{where}: line {line}: malformed row")


def from_options(options: Mapping[str, Any]) -> CsvDecoder:
    """Registry factory: ``file_decoder("csv", {...})`` with the same options as the encoder.

    Raises:
        ConfigError: unknown option or invalid value.
    """
    return CsvDecoder(CsvConfig.from_options(options))
