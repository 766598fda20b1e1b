"""Changefeed TOML config: known keys, defaults, errors naming the key or line, API JSON round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.changefeed.config import (
    ReplicaConfig,
    format_duration,
    merge_documents,
    parse_duration,
    read_toml_file,
    replicated_ddl,
)
from sparkcdc.errors import ConfigError
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.events import DDLEvent, RowChange, RowOp
from sparkcdc.model.table import ColumnInfo, TableInfo

FULL = """
case-sensitive = true
force-replicate = true
memory-quota = 2147483648
sync-point-interval = "5m"

[filter]
rules = ["app.*", "!app.secret"]
ignore-txn-start-ts = [1, 2]

[[filter.event-filters]]
matcher = ["app.logs"]
ignore-event = ["delete"]
ignore-sql = ["^truncate"]

[mounter]
worker-num = 8

[sink]
protocol = "canal-json"
date-separator = "none"
file-index-digit = 6

[sink.csv]
delimiter = ";"
include-commit-ts = true

[sink.cloud-storage-config]
flush-interval = "2s"

[scheduler]
enable-table-across-nodes = false
"""


def test_defaults() -> None:
    cfg = ReplicaConfig()
    assert cfg.case_sensitive is False
    assert cfg.filter.rules == ("*.*",)
    assert cfg.table_filter().match_table("A", "b")
    api = cfg.to_api()
    assert api["case_sensitive"] is False
    assert api["filter"]["rules"] == ["*.*"]
    assert api["sync_point_interval"] == 600_000_000_000


def test_the_replicated_tables_are_the_matched_eligible_ones_unless_force_replicate() -> None:
    """What a sink is told the changefeed replicates (its start, its create-time check) and what a snapshot copies:
    filter rules, no system schema, and a handle key unless force-replicate."""
    key = ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True)
    keyed, keyless = TableInfo("app", "a", 1, (key,)), TableInfo("app", "b", 2, (ColumnInfo("v", "int"),))
    tables = [keyed, keyless, TableInfo("other", "c", 3, (key,)), TableInfo("mysql", "user", 4, (key,))]
    rules = {"filter": {"rules": ["app.*", "mysql.*"]}}
    assert ReplicaConfig.from_toml(rules).replicated(tables) == [keyed]
    assert ReplicaConfig.from_toml({**rules, "force-replicate": True}).replicated(tables) == [keyed, keyless]


def test_ddls_of_a_table_without_a_key_are_replicated_as_its_rows_are() -> None:
    """TiCDC's DDL puller: without force-replicate the DDLs of a table without a key after them and before them (or
    created without one) are dropped; a table gaining a key is replicated from its DDL on, as if created there; one
    losing its only key fails the changefeed (passed on under force-replicate); DROP TABLE always passes."""
    key = ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True)
    keyed, keyless = TableInfo("app", "t", 1, (key,)), TableInfo("app", "t", 1, (ColumnInfo("id", "int"),))

    def ddl(action: DDLAction, post: TableInfo | None, pre: TableInfo | None = None) -> DDLEvent:
        return DDLEvent(10, action, "q", "app", "t", post, pre)

    create, alter = ddl(DDLAction.CREATE_TABLE, keyless), ddl(DDLAction.ADD_COLUMN, keyless, keyless)
    assert replicated_ddl(create, False) is None and replicated_ddl(alter, False) is None
    assert replicated_ddl(create, True) == create and replicated_ddl(alter, True) == alter
    gains = ddl(DDLAction.ADD_PRIMARY_KEY, keyed, keyless)
    assert replicated_ddl(gains, False) == ddl(DDLAction.ADD_PRIMARY_KEY, keyed)
    assert replicated_ddl(gains, True) == gains
    loses = ddl(DDLAction.DROP_PRIMARY_KEY, keyless, keyed)
    with pytest.raises(ConfigError, match=r"^DDL 'q' on app\.t at commit-ts 10 leaves a replicated table without a "
                                          r"primary key .* set force-replicate = true") as e:  # fmt: skip
        replicated_ddl(loses, False)
    assert e.value.code == "CDC:ErrOwnerUnknown" and not e.value.retry
    assert replicated_ddl(loses, True) == loses
    for kept in (ddl(DDLAction.ADD_COLUMN, keyed, keyed),
                 ddl(DDLAction.CREATE_TABLE, keyed), ddl(DDLAction.DROP_TABLE, keyless, keyless),
                 ddl(DDLAction.DROP_TABLE, None), ddl(DDLAction.CREATE_SCHEMA, None)):  # fmt: skip
        assert replicated_ddl(kept, False) == kept


def test_full_document(tmp_path: Path) -> None:
    path = tmp_path / "cf.toml"
    path.write_text(FULL, encoding="utf-8")
    cfg = ReplicaConfig.load(path)
    assert cfg.case_sensitive and cfg.force_replicate
    assert cfg.memory_quota == 2147483648
    assert cfg.sync_point_interval_ns == 300 * 10**9
    assert cfg.filter.rules == ("app.*", "!app.secret")
    assert cfg.filter.ignore_txn_start_ts == (1, 2)
    assert cfg.filter.event_filters[0].ignore_event == ("delete",)
    assert cfg.mounter_worker_num == 8
    assert cfg.sink["csv"]["delimiter"] == ";"
    flt = cfg.table_filter()
    assert flt.match_table("app", "x") and not flt.match_table("app", "secret") and not flt.match_table("APP", "x")
    logs = TableInfo("app", "logs", 1, (ColumnInfo("id", "int"),))
    assert cfg.event_filter().should_skip_dml(RowChange(1, logs, RowOp.DELETE, (1,), None))

    api = cfg.to_api()
    assert api["sink"]["file_index_width"] == 6  # TiCDC's JSON name for file-index-digit
    assert api["sink"]["csv"]["include_commit_ts"] is True
    assert api["sink"]["cloud_storage_config"]["flush_interval"] == "2s"
    assert api["scheduler"] == {"enable_table_across_nodes": False}
    back = ReplicaConfig.from_api(api)
    assert back == cfg
    assert ReplicaConfig.from_toml(cfg.to_toml()) == cfg


def test_sink_is_read_only() -> None:
    cfg = ReplicaConfig.from_toml({"sink": {"protocol": "csv"}})
    with pytest.raises(TypeError):
        cfg.sink["protocol"] = "x"  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("bogus = 1", "unknown configuration option 'bogus'"),
        ("[filter]\nrulez = []", "unknown configuration option filter.'rulez'"),
        ("[mounter]\nworkers = 1", "mounter.'workers'"),
        ("[consistent]\nlevel2 = 'x'", "consistent.'level2'"),
        ("case-sensitive = 'yes'", "case-sensitive: expected bool, got str"),
        ("memory-quota = true", "memory-quota: expected int"),
        ("memory-quota = 0", "memory-quota: must be greater than 0"),
        ("sync-point-interval = '10 minutes'", "sync-point-interval: invalid duration"),
        ("[filter]\nrules = 'a.*'", "filter.rules: must be a list of strings"),
        ("[filter]\nrules = ['a']", "wrong table pattern"),
        ("[filter]\nignore-txn-start-ts = ['x']", "must be a list of non-negative integers"),
        ("filter = 3", "filter: must be a table"),
        ("[[filter.event-filters]]\nmatcher = ['a.*']\nignore-event = ['nope']", "invalid ignore event type 'nope'"),
        ("[[filter.event-filters]]\nmatcher = ['a.*']\nfoo = 1", "filter.event-filters[0]: unknown key 'foo'"),
        ("sink = 1", "sink: must be a table"),
    ],
)
def test_bad_values_name_the_key(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as e:
        ReplicaConfig.from_toml_text(text, source="cf.toml")
    assert fragment in str(e.value)
    assert str(e.value).startswith("cf.toml: ")
    assert "\n" not in str(e.value)


def test_malformed_toml_names_the_line() -> None:
    with pytest.raises(ConfigError) as e:
        ReplicaConfig.from_toml_text("case-sensitive = true\n[filter\nrules = []\n", source="cf.toml")
    assert "cf.toml: invalid TOML" in str(e.value)
    assert "line 2" in str(e.value)


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read changefeed config"):
        ReplicaConfig.load(tmp_path / "nope.toml")
    bad = tmp_path / "bin.toml"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_toml_file(bad)


def test_from_api_ignores_nulls_and_rejects_unknown() -> None:
    cfg = ReplicaConfig.from_api({"case_sensitive": True, "filter": {"rules": ["a.*"], "event_filters": None}})
    assert cfg.case_sensitive and cfg.filter.rules == ("a.*",)
    assert ReplicaConfig.from_api(None) == ReplicaConfig()
    with pytest.raises(ConfigError, match="'what-ever'"):
        ReplicaConfig.from_api({"what_ever": 1})


def test_merge_documents() -> None:
    base = {"case-sensitive": False, "filter": {"rules": ["*.*"], "ignore-txn-start-ts": []}}
    merged = merge_documents(base, {"filter": {"rules": ["a.*"]}})
    assert merged == {"case-sensitive": False, "filter": {"rules": ["a.*"], "ignore-txn-start-ts": []}}


@pytest.mark.parametrize(
    ("text", "ns"),
    [("10m", 600 * 10**9), ("1h30m", 5400 * 10**9), ("1.5s", 1_500_000_000), ("250ms", 250_000_000), ("0s", 0)],
)
def test_durations(text: str, ns: int) -> None:
    assert parse_duration(text, "k") == ns


def test_format_duration() -> None:
    assert format_duration(600 * 10**9) == "10m0s"
    assert format_duration(86400 * 10**9) == "24h0m0s"
    assert format_duration(5 * 10**9) == "5s"
    assert parse_duration(format_duration(250_000_000), "k") == 250_000_000
