"""Schemas no changefeed captures: the server's, TiCDC's and Lightning's, and the ones our sinks and consumers
write their bookkeeping into (a catch-all rule must not bring them back)."""

from __future__ import annotations

import pytest

from sparkcdc.filter.system_schemas import SYSTEM_SCHEMAS, is_system_schema
from sparkcdc.filter.table_filter import TableFilter
from sparkcdc.mysql.applier import MysqlApplier
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.sink.mysql.session import CHECKPOINT_SCHEMA
from sparkcdc.sink.mysql.syncpoint import _TABLE as SYNCPOINT_TABLE

TICDC_IGNORED = ["information_schema", "performance_schema", "metrics_schema", "inspection_schema", "mysql", "sys",
                 "dm_heartbeat", "tidb_cdc", "lightning_task_info", "workload_schema"]  # fmt: skip


@pytest.mark.parametrize("schema", [*TICDC_IGNORED, "sparkcdc_consumer"])
@pytest.mark.parametrize("rules", [["*.*"], ["*.*", "tidb_cdc.*", "sparkcdc_consumer.*"], ["/.*/.*"]])
def test_ignored_whatever_the_rules_say(schema: str, rules: list[str]) -> None:
    flt = TableFilter.parse(rules)
    for name in (schema, schema.upper()):
        assert is_system_schema(name)
        assert flt.should_ignore_table(name, "checkpoint")
        assert flt.should_ignore_schema(name)
    assert not flt.should_ignore_table("app", "checkpoint")


def test_user_schemas_are_not_system_schemas() -> None:
    for name in ("app", "tidb_cdc2", "metric_schema", "sparkcdc", "my_sql", ""):
        assert not is_system_schema(name)


def test_every_schema_we_write_bookkeeping_into_is_ignored() -> None:
    """The MySQL sink's checkpoints and sync points and the consumers' checkpoints: a schema added to one of them
    without joining SYSTEM_SCHEMAS would be captured like a user's."""
    applier = MysqlApplier(MysqlTarget("127.0.0.1"))
    assert applier.checkpoint_schema in SYSTEM_SCHEMAS
    assert CHECKPOINT_SCHEMA in SYSTEM_SCHEMAS
    assert SYNCPOINT_TABLE.split(".")[0].strip("`") in SYSTEM_SCHEMAS
