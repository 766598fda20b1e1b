"""The MySQL sink's downstream session: where its bookkeeping lives and how its writes are marked."""

from __future__ import annotations

from typing import Final

from sparkcdc.sink.mysql.config import MysqlSinkConfig

# TiCDC keeps its downstream bookkeeping (syncpoint_v1, ddl_ts_v1) in tidb_cdc, a schema every changefeed filters out.
CHECKPOINT_SCHEMA: Final = "tidb_cdc"


def session_statements(config: MysqlSinkConfig) -> tuple[str, ...]:
    """Statements run on every new write connection."""
    return ()
