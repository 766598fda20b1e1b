"""Schema files on storage: CheckOrWriteSchema for the DML path and the DDL path (``spec/storage-layout.md`` §7)."""

from __future__ import annotations

import logging

from sparkcdc.model import DDLEvent
from sparkcdc.storage.external import ExternalStorage
from sparkcdc.storage.layout import SchemaFilePath, schema_dir
from sparkcdc.storage.schema_file import TableDefinition

log = logging.getLogger(__name__)


def check_or_write_schema(storage: ExternalStorage, definition: TableDefinition) -> tuple[int, str | None]:
    """TiCDC's CheckOrWriteSchema (§7.5) for a table-level ``definition`` (``Query ""``, ``Type 0``).

    Returns ``(directory version, path of the schema file written or None)``: the definition's own version when
    its file exists or was just written, else the newest older version whose schema file has the same checksum
    (data then continues in that version's directory).
    Raises StorageError when the storage fails.
    """
    checksum = definition.checksum()
    path = definition.path()
    if storage.exists(path):
        return definition.table_version, None
    suffix = f"_{checksum:010d}.json"
    best = 0
    found = False
    for name in storage.list(schema_dir(definition.schema, definition.table)):
        parsed = SchemaFilePath.parse(name)
        if parsed is None or not name.rsplit("/", 1)[-1].startswith("schema_") or not name.endswith(suffix):
            continue
        if parsed.table != definition.table or parsed.schema != definition.schema:
            continue
        found = True
        best = max(best, parsed.table_version)
    if found and best != 0:
        log.debug("table %s.%s: schema unchanged since version %d; reusing its directory",
                  definition.schema, definition.table, best)  # fmt: skip
        return best, None
    storage.write(path, definition.to_json())
    return definition.table_version, path


def write_ddl_schema(storage: ExternalStorage, ddl: DDLEvent, *, output_column_id: bool = False) -> list[str]:
    """Write the schema file(s) of a replicated DDL (table-level, database-level, or two for EXCHANGE
    PARTITION) and return their paths. Call it only after every earlier DML is durable (TiCDC's DDL barrier).

    Raises ConfigError for a table without columns, StorageError when the storage fails.
    """
    paths = []
    for definition in TableDefinition.from_ddl(ddl, output_column_id=output_column_id):
        path = definition.path()
        storage.write(path, definition.to_json())
        paths.append(path)
    return paths
