"""The source passes on a DDL to every sink only when the changefeed replicates its table (TiCDC's DDL puller,
``checkIneligibleTableDDL``): without ``force-replicate`` a table without a key is not replicated, nor are its DDLs;
a table gaining a key is replicated from that DDL on; a replicated table losing its only key fails the changefeed."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.errors import ConfigError, from_traceback
from sparkcdc.model import ColumnInfo, DDLEvent, TableInfo
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.stage_row import Ddl
from sparkcdc.pipeline.transform import ChunkTransform

KEY = ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True)
KEYED = TableInfo("db", "t", 7, (KEY, ColumnInfo("v", "int")), version=300)
KEYLESS = TableInfo("db", "t", 7, (ColumnInfo("id", "int"), ColumnInfo("v", "int")), version=100)
KEYLESS_V2 = KEYLESS.with_version(200)
SINKS = ("file://{d}/sink?protocol=canal-json", "kafka://127.0.0.1:9/t?protocol=canal-json", "mysql://u@127.0.0.1:9/",
         "blackhole://")  # fmt: skip


def transform(tmp_path: Path, sink: str, force_replicate: bool) -> ChunkTransform:
    config: dict[str, Any] = {"filter": {"rules": ["db.*"]}, "force-replicate": force_replicate}
    return ChunkTransform(FeedSpec(
        changefeed="default/unit", capture_dir=str(tmp_path / "capture"), state_dir=str(tmp_path / "state"),
        sink_uri=sink.format(d=tmp_path), config=config, start_ts=100, sink_start_ts=100,
    ))  # fmt: skip


def ddls_out(t: ChunkTransform, events: list[DDLEvent]) -> list[DDLEvent]:
    return [pickle.loads(r.event) for r in t.rows(events) if isinstance(r, Ddl)]


KEYLESS_DDLS = [
    DDLEvent(100, DDLAction.CREATE_TABLE, "CREATE TABLE t (id INT, v INT)", "db", "t", KEYLESS),
    DDLEvent(200, DDLAction.ADD_COLUMN, "ALTER TABLE t ADD COLUMN w INT", "db", "t", KEYLESS_V2, KEYLESS),
    DDLEvent(250, DDLAction.TRUNCATE_TABLE, "TRUNCATE t", "db", "t", KEYLESS_V2, KEYLESS_V2),
]
GAINS = DDLEvent(300, DDLAction.ADD_PRIMARY_KEY, "ALTER TABLE t ADD PRIMARY KEY (id)", "db", "t", KEYED, KEYLESS_V2)


@pytest.mark.parametrize("sink", SINKS)
def test_a_keyless_tables_ddls_reach_no_sink_without_force_replicate(tmp_path: Path, sink: str) -> None:
    assert ddls_out(transform(tmp_path, sink, False), KEYLESS_DDLS) == []


@pytest.mark.parametrize("sink", SINKS)
def test_a_keyless_tables_ddls_reach_every_sink_under_force_replicate(tmp_path: Path, sink: str) -> None:
    assert ddls_out(transform(tmp_path, sink, True), [*KEYLESS_DDLS, GAINS]) == [*KEYLESS_DDLS, GAINS]


def test_a_table_gaining_a_key_is_replicated_from_that_ddl_on(tmp_path: Path) -> None:
    """Its DDL comes without the table before it: nothing of the table was replicated before (a lake sink creates
    its table there; the MySQL sink runs the ALTER on a table it never created, and fails as TiCDC's does)."""
    drop = DDLEvent(400, DDLAction.DROP_TABLE, "DROP TABLE t", "db", "t", KEYED, KEYED)
    out = ddls_out(transform(tmp_path, SINKS[0], False), [*KEYLESS_DDLS, GAINS, drop])
    assert out == [DDLEvent(300, DDLAction.ADD_PRIMARY_KEY, GAINS.query, "db", "t", KEYED), drop]


@pytest.mark.parametrize("sink", SINKS)
def test_a_replicated_table_losing_its_only_key_fails_the_changefeed_for_every_sink(tmp_path: Path, sink: str) -> None:
    """As TiCDC's DDL puller: its changes would stop being replicated. The error names the DDL and the way on, and
    keeps its code and permanence across Spark (only its text crosses); under force-replicate the DDL passes."""
    loses = DDLEvent(400, DDLAction.DROP_PRIMARY_KEY, "ALTER TABLE t DROP PRIMARY KEY", "db", "t",
                     KEYLESS.with_version(400), KEYED)  # fmt: skip
    with pytest.raises(ConfigError) as e:
        ddls_out(transform(tmp_path, sink, False), [loses])
    crossed = from_traceback(f"sparkcdc.errors.ConfigError: {e.value.message}")
    assert crossed is not None and crossed.code == "CDC:ErrOwnerUnknown" and crossed.permanent
    assert crossed.message == ("DDL 'ALTER TABLE t DROP PRIMARY KEY' on db.t at commit-ts 400 leaves a replicated "
                                    "table without a primary key or NOT NULL unique key, so its changes would no "
                                    "longer be replicated; to replicate the table on without a key, pause the "
                                    "changefeed, set force-replicate = true, and resume it")  # fmt: skip
    assert ddls_out(transform(tmp_path / "forced", sink, True), [loses]) == [loses]
