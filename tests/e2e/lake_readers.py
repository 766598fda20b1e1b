"""Readers of Delta and Iceberg tables written from the formats' specs, sharing no code with delta-rs or pyiceberg:
the e2e tests read the lake sinks' tables back with these, so a table equal to the upstream is one any reader of
the format sees (not only the library that wrote it).

Delta: replay ``_delta_log/NNN.json`` in order (``add``/``remove`` actions), read the live Parquet files.
Iceberg: the catalog's ``metadata_location`` -> table metadata -> the current snapshot's manifest list (Avro) ->
manifests (Avro) -> live data files (status != DELETED, content = data; no delete files are written), their
columns found by field id in the current schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq


def _plain(t: pa.Table) -> pa.Table:
    """Text and binary columns as Arrow's plain types: a Parquet file's embedded Arrow schema (a hint, not part of
    either format) says string_view for the files some writers make and string for others: one Parquet type."""
    views = {pa.string_view(): pa.string(), pa.large_string(): pa.string(), pa.binary_view(): pa.binary(),
             pa.large_binary(): pa.binary()}  # fmt: skip
    return t.cast(pa.schema([f.with_type(views.get(f.type, f.type)) for f in t.schema]))


def _concat(tables: list[pa.Table], schema: pa.Schema | None) -> list[dict[str, Any]]:
    if not tables:
        return []
    out = pa.concat_tables([_plain(t) for t in tables], promote_options="permissive")
    return out.to_pylist()


def read_delta(table_dir: Path) -> list[dict[str, Any]]:
    live: dict[str, None] = {}
    for log in sorted((table_dir / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[unquote(action["add"]["path"])] = None
            elif "remove" in action:
                live.pop(unquote(action["remove"]["path"]), None)
    return _concat([pq.read_table(table_dir / p) for p in live], None)


def _local(uri: str) -> Path:
    return Path(unquote(urlsplit(uri).path))


def read_iceberg(metadata_location: str) -> list[dict[str, Any]]:
    meta = json.loads(_local(metadata_location).read_text())
    current = meta.get("current-snapshot-id")
    if current is None or current == -1:
        return []
    snapshot = next(s for s in meta["snapshots"] if s["snapshot-id"] == current)
    files: list[str] = []
    with _local(snapshot["manifest-list"]).open("rb") as f:
        manifests = [m["manifest_path"] for m in fastavro.reader(f)]
    for m in manifests:
        with _local(m).open("rb") as f:
            for entry in fastavro.reader(f):
                data = entry["data_file"]
                assert data.get("content", 0) == 0, "delete files are not expected"
                if entry["status"] != 2:
                    files.append(data["file_path"])
    schema = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    return _concat([_by_field_id(pq.read_table(_local(p)), schema["fields"]) for p in files], None)


def _by_field_id(data: pa.Table, fields: list[dict[str, Any]]) -> pa.Table:
    """A data file's columns as the table's current schema names them: Iceberg resolves columns by field id, so a
    renamed column is found under its old name in older files, a dropped one is left out, and a column added
    after the file was written reads as NULL."""
    ids = {int(f.metadata[b"PARQUET:field_id"]): i for i, f in enumerate(data.schema)
           if f.metadata and b"PARQUET:field_id" in f.metadata}  # fmt: skip
    columns = [data.column(ids[f["id"]]) if f["id"] in ids else pa.nulls(data.num_rows) for f in fields]
    return pa.Table.from_arrays(columns, names=[f["name"] for f in fields])
