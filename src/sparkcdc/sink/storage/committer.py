"""Driver side: index files of the batch's data files, then the DDL schema files, then ``metadata``.

The order is the durability rule of the storage layout: an index names only durable files, a DDL's schema file
comes after the data before it (the DDL barrier ends the batch at the DDL), and ``metadata`` (the checkpoint a
consumer trusts) comes last. Idempotent: a replayed batch re-indexes its own files and rewrites the same schema
files.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.model import DDLEvent, TableInfo
from sparkcdc.sink.storage.layout_writer import commit_index_files
from sparkcdc.storage.external import ExternalStorage
from sparkcdc.storage.metadata import write_checkpoint
from sparkcdc.storage.schema_store import write_ddl_schema
from sparkcdc.storage.sink_config import StorageSinkConfig

log = logging.getLogger(__name__)


class StorageCommitter:
    def __init__(self, config: StorageSinkConfig) -> None:
        self.config = config
        self.storage = ExternalStorage.from_config(config)

    def recover(self) -> None:
        """Delete the temporary files of the data files a killed process was still writing (local storage)."""
        removed = self.storage.remove_temporary()
        if removed:
            log.info("storage sink %s: removed %d temporary files a killed process left", self.storage, removed)

    def start(self, tables: Callable[[], Sequence[TableInfo]]) -> None:
        """Nothing: a table's schema file is written with its first data or DDL."""

    def commit(self, results: Sequence[Any], ddls: Sequence[DDLEvent]) -> None:
        files = [f for r in results for f in r]
        if files:
            commit_index_files(self.storage, files)
        for ddl in ddls:
            write_ddl_schema(self.storage, ddl, output_column_id=self.config.output_column_id)

    def checkpoint(self, ts: int) -> None:
        write_checkpoint(self.storage, ts)
