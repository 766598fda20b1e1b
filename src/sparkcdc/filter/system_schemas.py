"""Schemas no changefeed ever captures, whatever its filter rules, force-replicate, snapshot or bdr-mode say.

TiCDC's ``pkg/filter`` ignores the server's system schemas (TiDB's ``IsSystemSchema``) and the schemas of its own
tools (``tidb_cdc``, ``lightning_task_info``, ``workload_schema``) before any rule is looked at. This project's
sinks and consumers keep their bookkeeping in schemas of their downstream, which is often another changefeed's
upstream (bdr-mode pairs, chains A->B->C): were those captured, a checkpoint row written on B would travel on to C,
or back to A and on again forever. So they are listed here too, and the capture (``sparkcdc.capture``) drops every
row event, DDL and table definition of these schemas before any changefeed sees them.
"""

from __future__ import annotations

from typing import Final

# The MySQL sink's checkpoints and sync points, as TiCDC keeps its own bookkeeping (syncpoint_v1) there.
TICDC_SCHEMA: Final = "tidb_cdc"
# The consumers' checkpoints (``cdc storage-consumer``, ``cdc kafka-consumer``).
CONSUMER_SCHEMA: Final = "sparkcdc_consumer"

SYSTEM_SCHEMAS: Final = frozenset(
    {
        # the server's own (TiDB's IsSystemSchema, which covers MySQL's and MariaDB's)
        "information_schema",
        "performance_schema",
        "metrics_schema",
        "inspection_schema",
        "mysql",
        "sys",
        "dm_heartbeat",
        # TiCDC's and Lightning's (pkg/filter)
        TICDC_SCHEMA,
        "lightning_task_info",
        "workload_schema",
        # ours
        CONSUMER_SCHEMA,
    }
)


def is_system_schema(schema: str) -> bool:
    """True for a schema no changefeed captures (:data:`SYSTEM_SCHEMAS`), in any letter case."""
    return schema.lower() in SYSTEM_SCHEMAS
