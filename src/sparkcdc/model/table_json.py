"""A :class:`~sparkcdc.model.table.TableInfo` as JSON text and back (exactly): how the capture's schema history and
the redo log keep table definitions."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from sparkcdc.errors import CorruptDataError
from sparkcdc.model.table import ColumnInfo, IndexInfo, PartitionInfo, TableInfo


def table_to_json(t: TableInfo) -> str:
    d = {
        "schema": t.schema,
        "table": t.table,
        "table_id": t.table_id,
        "version": t.version,
        "charset": t.charset,
        "collation": t.collation,
        "columns": [asdict(c) for c in t.columns],
        "indexes": [asdict(i) for i in t.indexes],
        "partitions": [asdict(p) for p in t.partitions],
    }
    return json.dumps(d, separators=(",", ":"), default=_bytes_default)


def _bytes_default(v: Any) -> Any:
    if isinstance(v, bytes):
        return {"__bytes__": v.hex()}
    raise TypeError(type(v).__name__)


def table_from_json(text: str | bytes, where: str = "schema history") -> TableInfo:
    """Raises CorruptDataError naming ``where`` for text that is no table definition."""
    try:
        d = json.loads(text)
        cols = []
        for c in d["columns"]:
            c["elements"] = tuple(c["elements"])
            if isinstance(c.get("default"), dict):
                c["default"] = bytes.fromhex(c["default"]["__bytes__"])
            cols.append(ColumnInfo(**c))
        return TableInfo(
            schema=d["schema"],
            table=d["table"],
            table_id=d["table_id"],
            columns=tuple(cols),
            indexes=tuple(IndexInfo(i["name"], tuple(i["columns"]), i["primary"], i["unique"]) for i in d["indexes"]),
            version=d["version"],
            partitions=tuple(PartitionInfo(**p) for p in d["partitions"]),
            charset=d["charset"],
            collation=d["collation"],
        )
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise CorruptDataError(f"{where}: malformed table definition: {e}") from e
