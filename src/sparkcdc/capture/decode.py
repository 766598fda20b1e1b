"""Decode a relay-log chunk into RowChange and DDLEvent values, without a connection.

Each transaction frame carries its own TABLE_MAP events, so any chunk decodes independently of the others:
the Spark source decodes chunks on executors in parallel. Table definitions (names, keys, versions) come
from the persisted ``SchemaHistory`` at the transaction's commit-ts; the row layout itself comes from the
table map. Row decoders are cached per process by table-map layout, so a worker compiles each table once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from datetime import UTC, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sparkcdc.capture import binlog as b
from sparkcdc.capture.relay_log import (
    FLAG_CHECKSUM,
    FLAG_DDL,
    FRAME,
    FRAME_LEN,
    ChunkRef,
    RelayLog,
    iter_frames,
    open_chunk,
)
from sparkcdc.capture.row_decoder import RowDecoder
from sparkcdc.capture.rows_layout import Layout
from sparkcdc.capture.schema_history import SchemaHistory, table_from_map
from sparkcdc.capture.table_map import TableMap, parse_table_map, table_map_name
from sparkcdc.errors import ConfigError
from sparkcdc.filter.system_schemas import is_system_schema
from sparkcdc.model.events import DDLEvent, RowChange, RowOp, RowsEvent
from sparkcdc.model.table import TableInfo

log = logging.getLogger(__name__)

_DECODERS: dict[tuple[Any, ...], RowDecoder] = {}
_LAYOUTS: dict[tuple[int, tuple[int, ...] | None], Layout] = {}
_WARNED: set[tuple[str, str, str]] = set()
_MAX_CACHED = 4096


def resolve_tz(tz: tzinfo | str | None) -> tzinfo:
    """A tzinfo from a name such as ``UTC`` or ``Asia/Shanghai``; raises ConfigError naming a bad one."""
    if tz is None:
        return UTC
    if isinstance(tz, tzinfo):
        return tz
    if tz.upper() in ("UTC", "Z", "+00:00", "SYSTEM") and tz.upper() != "SYSTEM":
        return UTC
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise ConfigError(f"unknown time zone {tz!r}; use an IANA name such as UTC or Asia/Shanghai") from e


_HISTORIES: dict[str, tuple[int, SchemaHistory]] = {}


def _last_frame_ts(data: bytes) -> int:
    """Commit-ts of the last frame of raw chunk bytes (hops from header to header)."""
    pos, last = 0, 0
    while pos + FRAME_LEN <= len(data):
        _magic, _v, _f, _r, plen, ts, _crc = FRAME.unpack_from(data, pos)
        last = ts
        pos += FRAME_LEN + plen
    return last


def cached_history(data_dir: str, need_ts: int) -> SchemaHistory:
    """Per-process cache of a data dir's schema history. History up to the relay's resolved ts never changes,
    so a cached copy serves every chunk whose last commit-ts it covers; otherwise it is reloaded."""
    cached = _HISTORIES.get(data_dir)
    if cached is not None and cached[0] >= need_ts:
        return cached[1]
    relay = RelayLog(data_dir)
    try:
        resolved = relay.resolved_ts()
    finally:
        relay.close()
    history = SchemaHistory.load(data_dir)
    _HISTORIES[data_dir] = (resolved, history)
    return history


def _warn_once(kind: str, schema: str, table: str, message: str, *args: Any) -> None:
    key = (kind, schema, table)
    if key not in _WARNED:
        _WARNED.add(key)
        log.warning(message, *args)


def _decoder(m: TableMap, tz: tzinfo, info: TableInfo | None) -> RowDecoder:
    hints = info.columns if info is not None and len(info.columns) == m.column_count else None
    key = (m.signature(), tz, hints if not m.collations else None)
    dec = _DECODERS.get(key)
    if dec is None:
        if len(_DECODERS) >= _MAX_CACHED:
            _DECODERS.clear()
        dec = RowDecoder(m, tz, hints)
        _DECODERS[key] = dec
    return dec


def _layout(dec: RowDecoder, remap: tuple[int, ...] | None) -> Layout:
    """The per-process layout of a decoder and column mapping (kernels are cached by its identity)."""
    key = (id(dec), remap)
    layout = _LAYOUTS.get(key)
    if layout is None or layout.decoder is not dec:
        if len(_LAYOUTS) >= _MAX_CACHED:
            _LAYOUTS.clear()
        layout = _LAYOUTS[key] = Layout(dec, remap)
    return layout


def _remap(m: TableMap, info: TableInfo) -> tuple[int, ...] | None:
    """Positions of the table map's columns for each TableInfo column (-1 = absent, e.g. virtual), or None
    when they already line up."""
    if not m.names:
        return None
    names = [c.name for c in info.columns]
    if names == list(m.names):
        return None
    where = {n.lower(): i for i, n in enumerate(m.names)}
    return tuple(where.get(n.lower(), -1) for n in names)


def decode_chunk(
    source: ChunkRef | bytes,
    schema_source: SchemaHistory | str | os.PathLike[str],
    *,
    tz: tzinfo | str | None = None,
    force_replicate: bool = False,
    skip_server_id: int | None = None,
    raw_rows: bool = False,
    tables: Callable[[str, str], bool] | None = None,
) -> Iterator[RowChange | RowsEvent | DDLEvent]:
    """Yield the row changes and DDL events of every transaction in ``source``, in commit order.

    With ``raw_rows`` each rows event comes as one undecoded ``RowsEvent`` (its ``rows()`` are the RowChanges
    it would have yielded): a sink's native kernel encodes those bytes directly. With ``tables`` only the rows of
    the tables it accepts (``tables(schema, table)``) are decoded: another table's table map is read no further
    than its name, and its rows events are skipped by their table id (a task that writes some tables only).

    ``schema_source`` is a loaded SchemaHistory or the puller's data dir. TIMESTAMP values render in ``tz``
    (default UTC). Rows of tables without a PK or NOT NULL unique key are skipped (with one warning per
    table) unless ``force_replicate``. Transactions written by a session with server_id ``skip_server_id`` are
    left out (bdr-mode: a changefeed's own writes, see ``sparkcdc.changefeed.bdr``). Raises CorruptDataError on a
    damaged chunk, StorageError when the segment cannot be read.
    """
    if isinstance(schema_source, SchemaHistory):
        history = schema_source
    else:
        need = source.last_ts if isinstance(source, ChunkRef) else _last_frame_ts(source)
        history = cached_history(str(schema_source), need)
    zone = resolve_tz(tz)
    stream, length, name = open_chunk(source)
    try:
        for frame, events in iter_frames(stream, length, name):
            yield from _decode_frame(frame.commit_ts, frame.flags, events, history, zone, force_replicate,
                                     skip_server_id, raw_rows, tables)  # fmt: skip
    finally:
        stream.close()


_OPS = {
    b.WRITE_ROWS_V1: RowOp.INSERT,
    b.WRITE_ROWS_V2: RowOp.INSERT,
    b.DELETE_ROWS_V1: RowOp.DELETE,
    b.DELETE_ROWS_V2: RowOp.DELETE,
    b.UPDATE_ROWS_V1: RowOp.UPDATE,
    b.UPDATE_ROWS_V2: RowOp.UPDATE,
}


def _decode_frame(
    commit_ts: int,
    flags: int,
    events: Iterator[bytes],
    history: SchemaHistory,
    zone: tzinfo,
    force_replicate: bool,
    skip_server_id: int | None,
    raw_rows: bool = False,
    tables: Callable[[str, str], bool] | None = None,
) -> Iterator[RowChange | RowsEvent | DDLEvent]:
    cs = 4 if flags & FLAG_CHECKSUM else 0
    maps: dict[int, tuple[Layout, TableInfo] | None] = {}
    ddl_done = False
    skipped = False
    for ev in events:
        if skip_server_id is not None and (skipped or int.from_bytes(ev[5:9], "little") == skip_server_id):
            skipped = True  # read on: the frame's events must be consumed for its checksum
            continue
        typ = ev[4]
        if typ in b.ROWS_EVENTS:
            table_id = int.from_bytes(ev[19:25], "little")
            entry = maps.get(table_id)
            if entry is None:
                continue  # table skipped (system schema or ineligible)
            layout, info = entry
            start = 19 + 8
            if typ >= b.WRITE_ROWS_V2:
                start += int.from_bytes(ev[start : start + 2], "little")
            rows = RowsEvent(commit_ts, info, _OPS[typ], ev, start, len(ev) - cs, layout, info.table_id)
            if raw_rows:
                yield rows
            else:
                yield from rows.rows()
        elif typ == b.TABLE_MAP_EVENT:
            body = ev[19 : len(ev) - cs]
            if tables is not None and not tables(*table_map_name(body)):
                maps[int.from_bytes(body[0:6], "little")] = None
                continue
            m = parse_table_map(body)
            maps[m.table_id] = _bind(m, commit_ts, history, zone, force_replicate)
        elif typ == b.QUERY_EVENT and flags & FLAG_DDL and not ddl_done:
            ddl_done = True
            yield from history.ddl_events_at(commit_ts)


def _bind(
    m: TableMap, commit_ts: int, history: SchemaHistory, zone: tzinfo, force_replicate: bool
) -> tuple[Layout, TableInfo] | None:
    if is_system_schema(m.schema):  # never captured, whatever the changefeed says (filter.system_schemas)
        return None
    info = history.table_info_at(m.schema, m.table, commit_ts)
    if info is None or (not m.names and len(info.columns) != m.column_count):
        _warn_once("unknown", m.schema, m.table,
                   "table %s.%s has no schema history at ts=%d; using its table map", m.schema, m.table, commit_ts)
        info = table_from_map(m, 0, 0, info)
    if not info.is_eligible and not force_replicate:
        _warn_once("ineligible", m.schema, m.table,
                   "table %s.%s has no primary key or not-null unique key; its rows are skipped "
                   "(set force-replicate to replicate it)", m.schema, m.table)
        return None
    remap = _remap(m, info)
    if remap is not None and -1 in remap and len([k for k in remap if k >= 0]) != m.column_count:
        _warn_once("mismatch", m.schema, m.table,
                   "table %s.%s: table map columns %s differ from the schema history; using the table map",
                   m.schema, m.table, m.names)
        info = table_from_map(m, info.table_id, info.version, info)
        remap = None
    return _layout(_decoder(m, zone, info), remap), info


def ddl_flag() -> int:
    """Frame flag marking DDL transactions (for tests and tools)."""
    return FLAG_DDL
