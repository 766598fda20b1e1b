"""Driver side: the batch's DDLs at the barrier, after every table's MERGE of the batch committed; tables
missing from the lake are created once per run from the run's table definitions, so a table with no DDL in the
stream exists before its first row. A DDL of a table the changefeed does not replicate (no key, no
``force-replicate``) never comes here: the source leaves it out for every sink
(:func:`~sparkcdc.changefeed.config.replicated_ddl`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.lake.ddl import apply_ddl
from sparkcdc.lake.target import open_tables
from sparkcdc.model import DDLEvent, TableInfo
from sparkcdc.sink.base import SinkContext
from sparkcdc.sink.lake.config import LakeSinkConfig


class LakeCommitter:
    def __init__(self, config: LakeSinkConfig, ctx: SinkContext) -> None:
        self.config = config
        self.ctx = ctx

    def recover(self) -> None:
        return None  # a killed writer leaves nothing behind that a batch's retry does not replace

    def start(self, tables: Callable[[], Sequence[TableInfo]]) -> None:
        lake = open_tables(self.config.where, self.ctx.changefeed)
        for info in tables():  # only created: an existing table already followed the DDLs (maybe past this run's
            lake.ensure(info, add_columns=False)  # definitions, after a crash: a renamed column must not come back)

    def commit(self, results: Sequence[Any], ddls: Sequence[DDLEvent]) -> None:
        if not ddls:
            return
        lake = open_tables(self.config.where, self.ctx.changefeed)
        for ddl in ddls:
            apply_ddl(lake, ddl)

    def checkpoint(self, ts: int) -> None:
        return None  # every table's commit already records the commit-ts it reflects
