"""The MySQL sink's downstream session: where its bookkeeping lives and how its writes are marked."""

from __future__ import annotations

from typing import Final

from sparkcdc.changefeed.bdr import BDR_SERVER_ID
from sparkcdc.filter.system_schemas import TICDC_SCHEMA
from sparkcdc.sink.mysql.config import MysqlSinkConfig

# TiCDC keeps its downstream bookkeeping (syncpoint_v1, ddl_ts_v1) in tidb_cdc, a schema no changefeed captures.
CHECKPOINT_SCHEMA: Final = TICDC_SCHEMA


def session_statements(config: MysqlSinkConfig) -> tuple[str, ...]:
    """Statements run on every new write connection: in bdr-mode, the session's server_id marks every write as
    the changefeed's own (``sparkcdc.changefeed.bdr``; MariaDB allows it to a user with SUPER/BINLOG ADMIN)."""
    return (f"SET SESSION server_id = {BDR_SERVER_ID}",) if config.bdr_mode else ()
