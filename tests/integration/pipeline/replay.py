"""Replay a storage-sink tree with our decoders and compare it with the upstream tables (test helper).

``replay`` reads ``metadata`` first, lists and validates the tree with the consumer's reader (schema-file
checksums, version directories, no foreign files), decodes every data file and applies the rows with
commit-ts <= checkpoint in TiCDC's per-table order: last image wins, so a batch written twice (at-least-once
after a crash) replays to the same state. Values are compared as text, keyed by the ``id`` column.
``keyless_replay`` applies the same changes without a key, which shows any change applied twice.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from sparkcdc.consumer.storage_reader import FileReader, ReaderConfig, scan
from sparkcdc.model.events import RowOp
from sparkcdc.storage.external import ExternalStorage
from sparkcdc.storage.sink_config import StorageSinkConfig

Rows = dict[str, dict[Any, dict[str, str | None]]]  # "schema.table" -> id -> column -> text

_PATHS = [
    re.compile(r"^metadata$"),
    re.compile(r"^[^/]+/meta/schema_\d+_\d{10}\.json$"),
    re.compile(r"^[^/]+/[^/]+/meta/schema_\d+_\d{10}\.json$"),
    re.compile(r"^[^/]+/[^/]+/\d+/\d{4}-\d{2}-\d{2}/CDC\d{20}\.(json|csv)$"),
    re.compile(r"^[^/]+/[^/]+/\d+/\d{4}-\d{2}-\d{2}/meta/CDC\.index$"),
]


_DATA_FILE = re.compile(r"CDC(\d+)\.(json|csv)$")


def text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def unindexed_data_files(sink: Path) -> list[str]:
    """Data files of a local sink that no ``CDC.index`` covers (an aborted batch's leftovers)."""
    out = []
    for f in sink.rglob("CDC*"):
        m = _DATA_FILE.search(f.name)
        if m is None:
            continue
        index = f.parent / "meta" / "CDC.index"
        indexed = _DATA_FILE.search(index.read_text().strip()) if index.exists() else None
        if indexed is None or int(m.group(1)) > int(indexed.group(1)):
            out.append(str(f.relative_to(sink)))
    return out


def layout_violations(storage: ExternalStorage) -> list[str]:
    """Paths that match none of spec/storage-layout.md's patterns (default config: day dirs, 20 digits)."""
    return [p for p in storage.list("") if ".tmp." not in p and not any(r.match(p) for r in _PATHS)]


def _changes(sink_uri: str) -> tuple[Any, Any]:
    """The tree's scan and its row changes up to the checkpoint, per table in TiCDC's order:
    ("schema.table", op, before or None, after or None), images as column -> value."""
    cfg = StorageSinkConfig.from_uri(sink_uri)
    storage = ExternalStorage.from_config(cfg)
    reader_cfg = ReaderConfig.from_sink(cfg)
    snap = scan(storage, reader_cfg)
    assert snap.checkpoint_ts is not None, "no metadata in the sink"
    reader = FileReader(storage, reader_cfg)

    def changes() -> Any:
        for (schema, table, _part), files in snap.streams.items():
            for f in files:
                entry = snap.schema_for(schema, table, f.table_version)
                for row in reader.decode(f, entry):
                    if row.commit_ts > snap.checkpoint_ts:
                        continue
                    names = [c.name for c in row.table.columns]
                    before = dict(zip(names, row.before, strict=True)) if row.before is not None else None
                    after = dict(zip(names, row.after, strict=True)) if row.after is not None else None
                    yield f"{schema}.{table}", row.op, before, after

    return snap, changes()


def row_changes(sink_uri: str) -> list[tuple[str, RowOp, dict[str, Any] | None, dict[str, Any] | None]]:
    """Every row change the tree holds up to its checkpoint, as decoded (no replay)."""
    _, changes = _changes(sink_uri)
    return list(changes)


def replay(sink_uri: str) -> tuple[int, Rows]:
    snap, changes = _changes(sink_uri)
    out: Rows = {}
    for name, op, before, after in changes:
        state = out.setdefault(name, {})
        values = after if op is not RowOp.DELETE else before
        assert values is not None
        key = text(values["id"])
        if op is RowOp.DELETE:
            state.pop(key, None)
        else:
            if op is RowOp.UPDATE and before is not None:
                old = text(before["id"])
                if old != key:
                    state.pop(old, None)
            state[key] = {k: text(v) for k, v in values.items()}
    # A DDL changes rows it does not rewrite (ADD COLUMN fills the default): apply the newest schema file.
    for (schema, table), versions in snap.schemas.items():
        newest = max((v for v in versions if v <= snap.checkpoint_ts), default=None)
        if newest is None or not table or f"{schema}.{table}" not in out:
            continue
        cols = versions[newest].definition.columns or ()
        state = out[f"{schema}.{table}"]
        for key, row in state.items():
            state[key] = {c.name: row[c.name] if c.name in row else text(c.default) for c in cols}
    return snap.checkpoint_ts, out


def keyless_replay(sink_uri: str) -> dict[str, Counter[tuple[tuple[str, str | None], ...]]]:
    """The tree applied as a downstream without keys would apply it: an INSERT adds a row, a DELETE removes one
    equal row if there is one, an UPDATE both. A change applied twice shows as a row twice (or a row that
    should be gone). For a run without replayed batches (a storage sink writes a batch twice only after a crash)."""
    _, changes = _changes(sink_uri)
    out: dict[str, Counter[tuple[tuple[str, str | None], ...]]] = {}
    for name, _op, before, after in changes:
        rows = out.setdefault(name, Counter())
        if before is not None:
            old = tuple((k, text(v)) for k, v in before.items())
            if rows[old] > 0:
                rows[old] -= 1
        if after is not None:
            rows[tuple((k, text(v)) for k, v in after.items())] += 1
    return {name: +rows for name, rows in out.items()}


def upstream_rows(query: Any, schema: str, tables: list[str]) -> Rows:
    """``query(sql)`` -> rows with a description; here a FreshDatabase-like object with ``cursor_rows``."""
    out: Rows = {}
    for t in tables:
        cols, rows = query(f"SELECT * FROM `{schema}`.`{t}`")
        out[f"{schema}.{t}"] = {text(r[cols.index("id")]): {c: text(v) for c, v in zip(cols, r, strict=True)}
                                for r in rows}
    return out
