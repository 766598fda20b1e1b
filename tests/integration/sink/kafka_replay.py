"""Read a Kafka sink's topics back, replay them with our decoders and check TiCDC's delivery rules (test helper).

``read_topic`` takes every message of every partition (a plain consumer, assign, no group). ``replay_kafka``
decodes each partition with a decoder of its own (the simple decoder keeps per-partition schema state), merges
the rows of all partitions in commit-ts order and rebuilds every table the way ``pipeline/replay.py`` does for
storage: ``Rows`` keyed by the text of the ``id`` column, values as text, last image wins (so a run replayed by
at-least-once delivery replays to the same state). DDLs are deduplicated across partitions by (commit-ts, query)
and applied at their commit-ts, before the rows of that commit-ts (the simple decoder's order).

The checkers take ``headers(...)`` of one topic (each message decoded on its own, without decoder state, so a
row before its schema is seen where it is) and return violations as lines, an empty list meaning none.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from sparkcdc.codec.base import Message, MessageDecoder, message_decoder
from sparkcdc.codec.simple.decoder import SimpleDecoder
from sparkcdc.devtools.kafka import read_topic
from sparkcdc.model import BootstrapEvent, DDLAction, DDLEvent, ResolvedEvent, RowChange, RowOp, TableInfo
from tests.integration.pipeline.replay import Rows, text

# --- replay -----------------------------------------------------------------------------------------------------


@dataclass
class ReplaySummary:
    """What a replay saw: ``rows`` row events applied (duplicates included), the distinct ``ddls`` in commit-ts
    order, ``resolved_ts`` the smallest last watermark of any partition (0 when one has none), ``bootstraps``
    BOOTSTRAP messages and ``pending`` simple rows still waiting for their schema at the end."""

    rows: int = 0
    ddls: list[DDLEvent] = dataclasses.field(default_factory=list)
    resolved_ts: int = 0
    bootstraps: int = 0
    pending: int = 0


def replay_kafka(
    bootstrap: str, topics: Iterable[str], protocol: str, options: Mapping[str, Any] | None = None,
    upto: int | None = None,
) -> tuple[ReplaySummary, Rows]:  # fmt: skip
    """Read ``topics`` and replay them (see :func:`replay_partitions`)."""
    return replay_partitions({t: read_topic(bootstrap, t) for t in topics}, protocol, options, upto)


def replay_partitions(
    topics: Mapping[str, Mapping[int, Sequence[Message]]], protocol: str, options: Mapping[str, Any] | None = None,
    upto: int | None = None,
) -> tuple[ReplaySummary, Rows]:  # fmt: skip
    """Rebuild every table from already read partitions; only commit-ts <= ``upto`` when given.

    Raises DecodeError when a message does not decode.
    """
    summary = ReplaySummary()
    ordered: list[tuple[tuple[int, int, str, int, int], RowChange | DDLEvent]] = []
    last_watermarks: list[int] = []
    seen_ddls: set[tuple[int, str]] = set()
    for topic, partitions in sorted(topics.items()):
        for p, messages in sorted(partitions.items()):
            decoder = message_decoder(protocol, options)
            seq = 0
            last = 0
            for message in messages:
                for event in decoder.decode(message):
                    seq += 1
                    if isinstance(event, RowChange):
                        ordered.append(((event.commit_ts, 1, topic, p, seq), event))
                    elif isinstance(event, DDLEvent):
                        if (event.commit_ts, event.query) not in seen_ddls:
                            seen_ddls.add((event.commit_ts, event.query))
                            ordered.append(((event.commit_ts, 0, topic, p, seq), event))
                    elif isinstance(event, ResolvedEvent):
                        last = max(last, event.ts)
                    elif isinstance(event, BootstrapEvent):
                        summary.bootstraps += 1
            last_watermarks.append(last)
            if isinstance(decoder, SimpleDecoder):
                summary.pending += decoder.pending
    summary.resolved_ts = min(last_watermarks, default=0)
    out: Rows = {}
    for (ts, *_), event in sorted(ordered, key=lambda item: item[0]):
        if upto is not None and ts > upto:
            continue
        if isinstance(event, DDLEvent):
            summary.ddls.append(event)
            apply_ddl(out, event)
        else:
            summary.rows += 1
            apply_row(out, event)
    return summary, out


def apply_row(out: Rows, row: RowChange) -> None:
    """TiCDC's per-key rule, as the storage replay: the row's own image replaces the stored one."""
    state = out.setdefault(f"{row.table.schema}.{row.table.table}", {})
    names = [c.name for c in row.table.columns]
    image = row.after if row.op is not RowOp.DELETE else row.before
    assert image is not None
    values = dict(zip(names, image, strict=True))
    key = text(values["id"])
    if row.op is RowOp.DELETE:
        state.pop(key, None)
        return
    if row.op is RowOp.UPDATE and row.before is not None:
        old = text(dict(zip(names, row.before, strict=True))["id"])
        if old != key:
            state.pop(old, None)
    state[key] = {k: text(v) for k, v in values.items()}


def apply_ddl(out: Rows, ddl: DDLEvent) -> None:
    """Apply what a DDL does to rows it does not rewrite: CREATE adds an empty table, TRUNCATE empties it, DROP
    removes it (DROP DATABASE all of its tables), RENAME moves it and ADD/DROP COLUMN changes the stored images
    (an added column gets its default). canal-json DDLs carry no schema, so their names and columns come from
    the query; simple DDLs carry the table before and after."""
    if ddl.action is DDLAction.DROP_SCHEMA:
        for name in [n for n in out if n.split(".", 1)[0] == ddl.schema]:
            del out[name]
        return
    if not ddl.table:
        return
    name = f"{ddl.schema}.{ddl.table}"
    if ddl.action is DDLAction.DROP_TABLE:
        out.pop(name, None)
    elif ddl.action is DDLAction.TRUNCATE_TABLE:
        out[name] = {}
    elif ddl.action is DDLAction.RENAME_TABLE:
        old, new = _renamed(ddl)
        out[new] = out.pop(old, {})
    else:
        state = out.setdefault(name, {})
        added, dropped = _column_changes(ddl)
        for key, row in state.items():
            state[key] = {c: v for c, v in row.items() if c.lower() not in dropped} | {
                c: v for c, v in added.items() if c not in row
            }


_IDENT = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_NAME = rf"({_IDENT})(?:\s*\.\s*({_IDENT}))?"
_RENAME = re.compile(rf"^\s*RENAME\s+TABLE\s+{_NAME}\s+TO\s+{_NAME}\s*;?\s*$", re.I | re.S)
_ALTER_RENAME = re.compile(rf"^\s*ALTER\s+TABLE\s+{_NAME}\s+RENAME\s+(?:TO\s+|AS\s+)?{_NAME}\s*;?\s*$", re.I | re.S)
_ALTER = re.compile(rf"^\s*ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+{_NAME}\s+(.*)$", re.I | re.S)
_NOT_COLUMN = r"(?!(?:INDEX|KEY|UNIQUE|PRIMARY|CONSTRAINT|FOREIGN|FULLTEXT|SPATIAL|PARTITION|CHECK|IF)\b)"
_ADD = re.compile(rf"^ADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?{_NOT_COLUMN}({_IDENT})\s+(.*)$", re.I | re.S)
_DROP = re.compile(rf"^DROP\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?{_NOT_COLUMN}({_IDENT})\s*$", re.I | re.S)
_DEFAULT = re.compile(r"\bDEFAULT\s*(?:'((?:[^'\\]|\\.|'')*)'|\((.*)\)|([^\s,]+))", re.I | re.S)


def _unquote(ident: str) -> str:
    return ident[1:-1].replace("``", "`") if ident.startswith("`") else ident


def _qualified(default_schema: str, first: str, second: str | None) -> str:
    return f"{_unquote(first)}.{_unquote(second)}" if second else f"{default_schema}.{_unquote(first)}"


def _renamed(ddl: DDLEvent) -> tuple[str, str]:
    """(old, new) "schema.table" of a RENAME: from the simple message's tables, else from the query."""
    if ddl.pre_table_info is not None and ddl.table_info is not None:
        return ddl.pre_table_info.qualified_name, ddl.table_info.qualified_name
    m = _RENAME.match(ddl.query) or _ALTER_RENAME.match(ddl.query)
    if m is None:
        raise AssertionError(f"cannot replay RENAME at commit-ts {ddl.commit_ts}: {ddl.query!r}")
    return _qualified(ddl.schema, m[1], m[2]), _qualified(ddl.schema, m[3], m[4])


def _column_changes(ddl: DDLEvent) -> tuple[dict[str, str | None], set[str]]:
    """Added columns with their default as text, and dropped column names (lower case)."""
    if ddl.pre_table_info is not None and ddl.table_info is not None:
        return _diff(ddl.pre_table_info, ddl.table_info)
    m = _ALTER.match(ddl.query)
    if m is None:
        return {}, set()
    added: dict[str, str | None] = {}
    dropped: set[str] = set()
    for clause in _clauses(m[3]):
        if (a := _ADD.match(clause)) is not None:
            added[_unquote(a[1])] = _default_text(_DEFAULT.search(a[2]))
        elif (dr := _DROP.match(clause)) is not None:
            dropped.add(_unquote(dr[1]).lower())
    return added, dropped


def _default_text(m: re.Match[str] | None) -> str | None:
    """The DEFAULT of a column definition as the upstream returns it in a SELECT (no DEFAULT: NULL)."""
    if m is None:
        return None
    if m[1] is not None:
        return m[1].replace("''", "'")
    if m[2] is not None:
        return m[2]
    return None if m[3].upper() == "NULL" else m[3]


def _diff(before: TableInfo, after: TableInfo) -> tuple[dict[str, str | None], set[str]]:
    old = {c.name.lower() for c in before.columns}
    new = {c.name.lower() for c in after.columns}
    return {c.name: text(c.default) for c in after.columns if c.name.lower() not in old}, old - new


def _clauses(body: str) -> list[str]:
    """``ALTER TABLE`` clauses split at top-level commas (not inside quotes or parentheses)."""
    out, start, depth, quote = [], 0, 0, ""
    for i, ch in enumerate(body):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(body[start:i].strip())
            start = i + 1
    out.append(body[start:].strip().rstrip(";").strip())
    return out


# --- per-message headers and checkers ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Header:
    """One message decoded on its own. ``kind`` is row, ddl, watermark or bootstrap; ``ts`` the commit-ts (the
    watermark's ts, 0 for a bootstrap); ``table``/``version`` name a row's table and simple schema version;
    ``announces`` the (table, version) pairs whose schema a simple DDL or BOOTSTRAP carries; ``fingerprint`` the
    row without the members that change when it is encoded again (canal-json ``ts``, simple ``buildTs``)."""

    offset: int
    kind: str
    ts: int
    table: str = ""
    version: int = 0
    query: str = ""
    announces: tuple[tuple[str, int], ...] = ()
    fingerprint: bytes = b""


def headers(partitions: Mapping[int, Sequence[Message]], protocol: str,
            options: Mapping[str, Any] | None = None) -> dict[int, list[Header]]:  # fmt: skip
    """Headers of every message of one topic, by partition, in offset order."""
    out: dict[int, list[Header]] = {}
    for p, messages in sorted(partitions.items()):
        if protocol == "simple":
            parser = message_decoder(protocol, options)
            assert isinstance(parser, SimpleDecoder)
            out[p] = [_simple_header(i, parser, m) for i, m in enumerate(messages)]
        else:
            decoder = message_decoder(protocol, options)
            out[p] = [_canal_header(i, decoder, m) for i, m in enumerate(messages)]
    return out


def _simple_header(offset: int, parser: SimpleDecoder, message: Message) -> Header:
    m = parser.parse(message.value)
    if m.is_dml:
        fingerprint = repr(dataclasses.replace(m, build_ts=0)).encode()
        return Header(offset, "row", m.commit_ts, f"{m.database}.{m.table}", m.schema_version, fingerprint=fingerprint)
    announces = tuple((t.qualified_name, t.version) for t in (m.table_schema, m.pre_table_schema) if t is not None)
    if m.type == "WATERMARK":
        return Header(offset, "watermark", m.commit_ts)
    if m.type == "BOOTSTRAP":
        return Header(offset, "bootstrap", m.commit_ts, announces[0][0], announces[0][1], announces=announces)
    table = announces[0][0] if announces else ""  # a simple DDL names its table in tableSchema only
    return Header(offset, "ddl", m.commit_ts, table, query=m.sql, announces=announces)


def _canal_header(offset: int, decoder: MessageDecoder, message: Message) -> Header:
    [event, *_] = decoder.decode(message)
    if isinstance(event, ResolvedEvent):
        return Header(offset, "watermark", event.ts)
    if isinstance(event, DDLEvent):
        return Header(offset, "ddl", event.commit_ts, f"{event.schema}.{event.table}", query=event.query)
    assert isinstance(event, RowChange), f"unexpected {type(event).__name__} in a canal-json topic"
    obj = orjson.loads(message.value)
    obj.pop("ts", None)
    fingerprint = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    return Header(offset, "row", event.commit_ts, event.table.qualified_name, fingerprint=fingerprint)


def ddl_on_every_partition(heads: Mapping[int, Sequence[Header]], protocol: str) -> list[str]:
    """Every DDL seen on any partition is on every partition (canal-json: on partition 0 and nowhere else)."""
    seen = {p: {(h.ts, h.query) for h in hs if h.kind == "ddl"} for p, hs in heads.items()}
    out = []
    for ts, query in sorted(set().union(*seen.values())):
        for p in sorted(heads):
            wanted = p == 0 or protocol != "canal-json"
            if wanted and (ts, query) not in seen[p]:
                out.append(f"partition {p}: no DDL at commit-ts {ts} ({query:.60})")
            elif not wanted and (ts, query) in seen[p]:
                out.append(f"partition {p}: DDL at commit-ts {ts} ({query:.60}); canal-json sends DDLs to partition 0")
    return out


def watermarks_on_every_partition(heads: Mapping[int, Sequence[Header]]) -> list[str]:
    """Every partition carries a watermark, and every watermark ts sent to one partition reached all of them."""
    seen = {p: {h.ts for h in hs if h.kind == "watermark"} for p, hs in heads.items()}
    every: set[int] = set().union(*seen.values())
    out = []
    for p in sorted(heads):
        missing = sorted(every - seen[p])
        if not seen[p]:
            out.append(f"partition {p}: no watermark")
        elif missing:
            out.append(f"partition {p}: {len(missing)} watermark(s) sent elsewhere are missing, first {missing[0]}")
    return out


def commit_ts_order_violations(heads: Mapping[int, Sequence[Header]], allow_replays: bool = False) -> list[str]:
    """Positions where a partition's row commit-ts goes back. With ``allow_replays`` a step back that starts a
    repetition of an earlier run of rows (same fingerprints, in order, as far as the partition goes) is fine:
    at-least-once delivery re-sends everything after the checkpoint."""
    out = []
    for p, hs in sorted(heads.items()):
        rows = [h for h in hs if h.kind == "row"]
        for i in range(1, len(rows)):
            if rows[i].ts >= rows[i - 1].ts or (allow_replays and _replays_earlier_run(rows, i)):
                continue
            out.append(f"partition {p} offset {rows[i].offset}: commit-ts {rows[i].ts} after {rows[i - 1].ts} "
                       f"(offset {rows[i - 1].offset})")  # fmt: skip
    return out


def _replays_earlier_run(rows: Sequence[Header], i: int) -> bool:
    for j in range(i):
        if rows[j].fingerprint != rows[i].fingerprint:
            continue
        length = min(i - j, len(rows) - i)
        if all(rows[j + k].fingerprint == rows[i + k].fingerprint for k in range(length)):
            return True
    return False


def bootstrap_violations(heads: Mapping[int, Sequence[Header]]) -> list[str]:
    """Simple protocol: on every partition a table's first row comes after a BOOTSTRAP of that table with the
    row's schema version, and every later row's version was announced (BOOTSTRAP or DDL) before it there."""
    out = []
    for p, hs in sorted(heads.items()):
        bootstrapped: set[tuple[str, int]] = set()
        announced: set[tuple[str, int]] = set()
        tables: set[str] = set()
        for h in hs:
            if h.kind == "bootstrap":
                bootstrapped.update(h.announces)
            announced.update(h.announces)
            if h.kind != "row":
                continue
            if h.table not in tables:
                tables.add(h.table)
                if (h.table, h.version) not in bootstrapped:
                    out.append(f"partition {p} offset {h.offset}: first row of {h.table} (schema version "
                               f"{h.version}) has no BOOTSTRAP of that version before it")  # fmt: skip
            elif (h.table, h.version) not in announced:
                out.append(f"partition {p} offset {h.offset}: row of {h.table} uses schema version {h.version}, "
                           "announced by no earlier BOOTSTRAP or DDL on this partition")  # fmt: skip
    return out
