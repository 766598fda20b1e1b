"""Hand-made storage-sink trees in real TiCDC's shapes (schema files, csv / canal-json data, metadata)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparkcdc.model import ColumnInfo, TableInfo
from sparkcdc.storage.layout import encode_name
from sparkcdc.storage.schema_file import TableDefinition


def table(schema: str, name: str, *extra: ColumnInfo) -> TableInfo:
    """``id INT PRIMARY KEY, v VARCHAR(20)`` plus ``extra`` columns."""
    cols = (
        ColumnInfo("id", "int", primary_key=True, handle_key=True, nullable=False),
        ColumnInfo("v", "varchar", length=20),
        *extra,
    )
    return TableInfo(schema, name, 1, cols)


class Tree:
    """Writes files under ``root``; data paths follow TiCDC's layout with the given width and date."""

    def __init__(self, root: Path, *, protocol: str = "csv", width: int = 20, date: str = "2024-01-02") -> None:
        self.root = root
        self.protocol = protocol
        self.width = width
        self.date = date
        self.ext = ".csv" if protocol == "csv" else ".json"

    def put(self, rel: str, data: bytes) -> str:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        return rel

    def schema(self, info: TableInfo, version: int, query: str = "", ddl_type: int = 0) -> str:
        d = TableDefinition.from_table(info, version, query=query, ddl_type=ddl_type)
        return self.put(d.path(), d.to_json())

    def db_schema(self, schema: str, version: int, query: str = "", ddl_type: int = 0) -> str:
        d = TableDefinition.for_database(schema, version, query=query, ddl_type=ddl_type)
        return self.put(d.path(), d.to_json())

    def data_path(self, schema: str, name: str, version: int, index: int, *, partition: int | None = None,
                  date: str | None = None, width: int | None = None) -> str:  # fmt: skip
        parts = [encode_name(schema), encode_name(name), str(version)]
        if partition is not None:
            parts.append(str(partition))
        d = self.date if date is None else date
        if d:
            parts.append(d)
        return "/".join(parts) + f"/CDC{index:0{width or self.width}d}{self.ext}"

    def data(self, schema: str, name: str, version: int, index: int, lines: list[str], **kw: Any) -> str:
        return self.put(self.data_path(schema, name, version, index, **kw), "".join(lines).encode())

    def metadata(self, ts: int) -> None:
        self.put("metadata", b'{"checkpoint-ts":%d}' % ts)


def csv_row(op: str, schema: str, name: str, ts: int, *values: Any) -> str:
    """A default-config CSV row with include-commit-ts (``"I","t","db",ts,1,"a"``), CRLF-terminated."""
    fields = [f'"{op}"', f'"{name}"', f'"{schema}"', str(ts)]
    for v in values:
        if v is None:
            fields.append("\\N")
        elif isinstance(v, str):
            fields.append('"' + v.replace('"', '""') + '"')
        else:
            fields.append(str(v))
    return ",".join(fields) + "\r\n"


def canal_row(op: str, schema: str, name: str, ts: int, data: dict[str, Any], old: dict[str, Any] | None = None,
              *, types: dict[str, str] | None = None, pk: tuple[str, ...] = ("id",)) -> str:  # fmt: skip
    """A canal-json line with the TiDB extension, CRLF-terminated (member order as TiCDC writes it)."""
    mysql_types = types or {k: ("int" if k == "id" else "varchar") for k in data}
    sql_types = {k: (4 if t == "int" else 12) for k, t in mysql_types.items()}

    def image(d: dict[str, Any]) -> dict[str, Any]:
        return {k: (None if v is None else str(v)) for k, v in d.items()}

    doc = {
        "id": 0, "database": schema, "table": name, "pkNames": list(pk), "isDdl": False, "type": op,
        "es": ts >> 18, "ts": (ts >> 18) + 5, "sql": "", "sqlType": sql_types, "mysqlType": mysql_types,
        "old": [image(old)] if old is not None else None, "data": [image(data)], "_tidb": {"commitTs": ts},
    }  # fmt: skip
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\r\n"


# What any target holds after :func:`partitioned_canal_tree` is consumed: db2.p's (id, v) rows by id.
PARTITIONED_ROWS = [(1, "b"), (3, None), (100, "x")]


def partitioned_canal_tree(root: Path, first_ts: int) -> Tree:
    """A canal-json tree of one partitioned table ``db2.p`` (partitions 101 and 102) with no CREATE TABLE (the
    changefeed started after the table existed): inserts, an update and deletes, resolved at ``first_ts + 10``."""
    tree = Tree(root, protocol="canal-json")
    tree.schema(table("db2", "p"), first_ts)
    ts = first_ts
    tree.data("db2", "p", ts, 1, [canal_row("INSERT", "db2", "p", ts + 1, {"id": 1, "v": "a"})], partition=101)
    tree.data("db2", "p", ts, 1, [canal_row("INSERT", "db2", "p", ts + 2, {"id": 100, "v": "x"})], partition=102)
    tree.data("db2", "p", ts, 2, [
        canal_row("UPDATE", "db2", "p", ts + 3, {"id": 1, "v": "b"}, {"id": 1, "v": "a"}),
        canal_row("DELETE", "db2", "p", ts + 4, {"id": 2, "v": None}),
        canal_row("INSERT", "db2", "p", ts + 5, {"id": 3, "v": None}),
    ], partition=101)  # fmt: skip
    tree.metadata(ts + 10)
    return tree
