"""The CSV wire layout (``spec/csv.md`` §2-3): field quoting/escaping, meta columns, header line.

A *CSV value* is what TiCDC's ``fromColValToCsvVal`` produces: ``None`` (NULL), a ``str`` (a string field:
quoted or escaped), or a non-string written with Go ``%v`` and never quoted (``int``, ``float``, ``bool``).
The encoder compiles the same rules into per-table formatters; ``encode_message`` is the plain,
value-at-a-time form of one ``csvMessage.encode()`` call (used by tests and as the reference).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

from sparkcdc.codec.csv.config import CsvConfig
from sparkcdc.codec.gofmt import go_float_v

CsvValue = str | int | float | bool | None

META_HEADER: Final = ("ticdc-meta$operation", "ticdc-meta$table", "ticdc-meta$schema")
COMMIT_TS_HEADER: Final = "ticdc-meta$commit-ts"
IS_UPDATE_HEADER: Final = "ticdc-meta$is-update"

_ESCAPES: Final = {"\r": "\\r", "\n": "\\n", "\\": "\\\\"}


def quote_field(value: str, quote: str) -> str:
    """Quote mode: wrap in the quote, double embedded quotes; nothing else is escaped."""
    return quote + value.replace(quote, quote + quote) + quote


def fast_escape_ok(delimiter: str) -> bool:
    """True when chained ``str.replace`` calls escape exactly like the byte scan (``escape_field``).

    That holds when the delimiter is ASCII and contains none of the characters the other replacements
    insert (backslash, ``r``, ``n``).
    """
    return delimiter.isascii() and not any(ch in delimiter for ch in "\\rn")


def delimiter_escape(delimiter: str) -> str:
    r"""The escaped form of the delimiter: a backslash before **every byte**.

    Go writes each byte as ``rune(byte)``, so a byte >= 0x80 becomes U+0080..U+00FF (TiCDC's corrupted
    output for non-ASCII delimiters, vector ``csv-escape-nonascii-delimiter-quirk``); ``chr(byte)`` reproduces
    that once the text is UTF-8 encoded.
    """
    return "".join("\\" + chr(b) for b in delimiter.encode("utf-8"))


def escape_pattern(delimiter: str) -> re.Pattern[str]:
    """Leftmost match of the delimiter (tried first) or of CR, LF, backslash: the scan of ``formatWithEscapes``.

    Regex matches never overlap, which is where TiCDC would index out of range and panic (a delimiter
    match overlapping another special character); there we skip past the delimiter.
    """
    return re.compile(re.escape(delimiter) + r"|[\r\n\\]")


def escape_field(value: str, delimiter: str) -> str:
    r"""Escape mode: CR -> ``\r``, LF -> ``\n``, ``\`` -> ``\\``, delimiter -> backslash before each byte."""
    if fast_escape_ok(delimiter):
        return (
            value.replace("\\", "\\\\")
            .replace("\r", "\\r")
            .replace("\n", "\\n")
            .replace(delimiter, delimiter_escape(delimiter))
        )
    table = dict(_ESCAPES)
    table[delimiter] = delimiter_escape(delimiter)
    return escape_pattern(delimiter).sub(lambda m: table[m.group()], value)


def string_formatter(cfg: CsvConfig) -> Callable[[str], str]:
    """The function that writes a string field under ``cfg`` (quote or escape mode)."""
    quote, delimiter = cfg.quote, cfg.delimiter
    if quote:
        doubled = quote + quote
        return lambda value: quote + value.replace(quote, doubled) + quote
    return lambda value: escape_field(value, delimiter)


def format_value(value: CsvValue, cfg: CsvConfig) -> str:
    """One field (without delimiter): NULL, string, or Go ``%v`` non-string (floats as float64)."""
    if value is None:
        return cfg.null
    if isinstance(value, str):
        return quote_field(value, cfg.quote) if cfg.quote else escape_field(value, cfg.delimiter)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float_v(value, 64)
    return str(value)


def meta_fields(
    cfg: CsvConfig, op: str, table: str, schema: str, commit_ts: int, is_update: bool, handle_key: str | None
) -> list[CsvValue]:
    """The leading fields of a row: OP, TABLE, SCHEMA, [COMMIT_TS], [IS_UPDATE], [HANDLE_KEY]."""
    out: list[CsvValue] = [op, table, schema]
    if cfg.include_commit_ts:
        out.append(commit_ts)
    if cfg.output_old_value:
        out.append(is_update)
    if cfg.output_handle_key:
        out.append(handle_key)
    return out


def encode_row(cfg: CsvConfig, fields: Sequence[CsvValue]) -> str:
    """Fields joined by the delimiter, then the terminator."""
    return cfg.delimiter.join(format_value(f, cfg) for f in fields) + cfg.terminator


def encode_message(
    cfg: CsvConfig,
    op: str,
    table: str,
    schema: str,
    commit_ts: int,
    columns: Sequence[CsvValue],
    pre_columns: Sequence[CsvValue] = (),
    handle_key: str | None = None,
) -> str:
    """One TiCDC ``csvMessage.encode()``: an ``U`` with old values and output-old-value becomes D + I rows."""
    if op == "U" and cfg.output_old_value and pre_columns:
        return encode_row(
            cfg, meta_fields(cfg, "D", table, schema, commit_ts, True, handle_key) + list(pre_columns)
        ) + encode_row(cfg, meta_fields(cfg, "I", table, schema, commit_ts, True, handle_key) + list(columns))
    return encode_row(cfg, meta_fields(cfg, op, table, schema, commit_ts, op == "U", handle_key) + list(columns))


def header_names(cfg: CsvConfig, column_names: Sequence[str]) -> list[str]:
    """Header field names: meta columns (never the handle key), then the columns."""
    names = list(META_HEADER)
    if cfg.include_commit_ts:
        names.append(COMMIT_TS_HEADER)
    if cfg.output_old_value:
        names.append(IS_UPDATE_HEADER)
    names.extend(column_names)
    return names


def header_line(cfg: CsvConfig, column_names: Sequence[str]) -> str:
    """The header line: names joined by the delimiter without quoting or escaping, plus the terminator."""
    return cfg.delimiter.join(header_names(cfg, column_names)) + cfg.terminator
