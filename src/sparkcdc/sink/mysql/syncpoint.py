"""Sync points (``enable-sync-point``): rows of ``tidb_cdc.syncpoint_v1`` naming a point where the downstream equals
the upstream, as TiCDC writes them (``ticdc_cluster_id``, ``changefeed`` as ``namespace/id``, ``primary_ts``,
``secondary_ts``, ``created_at``; ``INSERT IGNORE``; rows older than ``sync-point-retention`` deleted).

A checkpoint is such a point: the driver records it after every row and DDL up to it is durable downstream and
before the next batch writes anything. So the first checkpoint at or after each multiple of
``sync-point-interval`` becomes a sync point (TiCDC cuts its stream exactly at the multiple; a micro-batch ends
where the upstream's resolved ts is, so ``primary_ts`` here is the first consistent point at or after it).
``secondary_ts`` says where that point is downstream: ``@@tidb_current_ts`` on TiDB (TiCDC's), the GTID position on
MariaDB (``@@gtid_binlog_pos``) and MySQL (``@@gtid_executed``), read before the sync point row is written. So
that GTID strings fit, this sink creates ``secondary_ts`` as varchar(255) where TiCDC has varchar(18).
"""

from __future__ import annotations

import logging
from typing import Final

from sparkcdc.filter.system_schemas import TICDC_SCHEMA
from sparkcdc.model.tso import physical
from sparkcdc.mysql.applier import MysqlApplier

log = logging.getLogger(__name__)

CLUSTER_ID: Final = "default"
_TABLE: Final = f"`{TICDC_SCHEMA}`.`syncpoint_v1`"
_CREATE: Final = f"""CREATE TABLE IF NOT EXISTS {_TABLE} (
  ticdc_cluster_id varchar(255),
  changefeed varchar(255),
  primary_ts varchar(18),
  secondary_ts varchar(255),
  created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
  INDEX (created_at),
  PRIMARY KEY (changefeed, primary_ts)
)"""


def secondary_ts_sql(version: str) -> str:
    """What identifies "now" on a downstream of this ``@@version``."""
    if "TiDB" in version:
        return "SELECT @@tidb_current_ts"
    if "MariaDB" in version:
        return "SELECT @@gtid_binlog_pos"
    return "SELECT @@gtid_executed"


def due(ts: int, last: int, interval_ms: int) -> bool:
    """Whether checkpoint ``ts`` is the first at or after a multiple of the interval since sync point ``last``."""
    return physical(ts) // interval_ms > physical(last) // interval_ms


class SyncPoints:
    """Writes the sync points of one changefeed run (driver side) through ``applier``'s connection (the sink's
    session: in bdr-mode, marked). Raises SparkcdcError from :meth:`checkpoint`."""

    def __init__(self, applier: MysqlApplier, changefeed: str, start_ts: int, interval_ns: int,
                 retention_ns: int) -> None:  # fmt: skip
        self.applier = applier
        self.changefeed = changefeed
        self.interval_ms = max(1, interval_ns // 1_000_000)
        self.retention_s = max(1, retention_ns // 1_000_000_000)
        self._start = start_ts
        self._last: int | None = None
        self._secondary = ""

    def _setup(self) -> int:
        """Create the table, learn the downstream's kind and the last sync point; returns it."""
        if self._last is None:
            _, _, version, found = self.applier.transaction([
                (f"CREATE DATABASE IF NOT EXISTS `{TICDC_SCHEMA}`", ()),
                (_CREATE, ()),
                ("SELECT @@version", ()),
                (f"SELECT MAX(CAST(primary_ts AS UNSIGNED)) FROM {_TABLE} WHERE changefeed=%s", (self.changefeed,)),
            ])  # fmt: skip
            self._secondary = secondary_ts_sql(str(version[0][0]))
            self._last = max(self._start, int(found[0][0] or 0))
        return self._last

    def checkpoint(self, ts: int) -> bool:
        """Record ``ts`` as a sync point when it is due; True when it was."""
        if not due(ts, self._setup(), self.interval_ms):
            return False
        secondary, _, _ = self.applier.transaction([
            (self._secondary, ()),
            (f"INSERT IGNORE INTO {_TABLE} (ticdc_cluster_id, changefeed, primary_ts, secondary_ts) "
             "VALUES (%s, %s, %s, (SELECT " + self._secondary.removeprefix("SELECT ") + "))",
             (CLUSTER_ID, self.changefeed, str(ts))),
            (f"DELETE IGNORE FROM {_TABLE} WHERE ticdc_cluster_id=%s AND changefeed=%s AND "
             "created_at < (NOW() - INTERVAL %s SECOND)", (CLUSTER_ID, self.changefeed, self.retention_s)),
        ])  # fmt: skip
        self._last = ts
        log.info("changefeed=%s: sync point primary_ts=%d secondary_ts=%s", self.changefeed, ts, secondary[0][0])
        return True
