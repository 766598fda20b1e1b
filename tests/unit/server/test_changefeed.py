"""The changefeed state machine over a real SQLite store and a scripted runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.changefeed.info import ChangefeedInfo, ChangefeedStatus, FeedState, RunningError
from sparkcdc.errors import ConfigError, UpstreamError
from sparkcdc.masking import mask_uri
from sparkcdc.server.changefeed import ChangefeedManager, CreateRequest, states_needed
from sparkcdc.server.store import MetaStore
from tests.fixtures.replica_configs import REFUSED
from tests.unit.server.fakes import NOW, OLDEST, SINK, FakeRunner, object_stores_answer


@pytest.fixture
def runner() -> FakeRunner:
    return FakeRunner()


@pytest.fixture
def mgr(tmp_path: Path, runner: FakeRunner) -> ChangefeedManager:
    m = ChangefeedManager(MetaStore(tmp_path), runner, addr="127.0.0.1:1")
    m.start(poll=False)
    return m


def create(mgr: ChangefeedManager, cf: str = "cf1", **kw: object) -> None:
    mgr.create(CreateRequest(changefeed_id=cf, sink_uri=str(kw.pop("sink_uri", SINK)), **kw))  # type: ignore[arg-type]


def test_create_defaults_and_starts(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    info, status = mgr.create(CreateRequest(changefeed_id="cf1", sink_uri=SINK))
    assert info.state == FeedState.NORMAL
    assert info.start_ts == NOW and status.checkpoint_ts == NOW
    assert info.config.sink["protocol"] == "canal-json"  # taken from the URI
    assert runner.running == {"cf1": NOW}


def test_create_generates_uuid(mgr: ChangefeedManager) -> None:
    info, _ = mgr.create(CreateRequest(sink_uri=SINK))
    assert len(info.id) == 36 and info.id.count("-") == 4


@pytest.mark.parametrize(
    ("kw", "code", "fragment"),
    [
        ({"changefeed_id": "bad_id"}, "CDC:ErrAPIInvalidParam", "invalid changefeed_id: bad_id"),
        ({"changefeed_id": "-a"}, "CDC:ErrAPIInvalidParam", "invalid changefeed_id"),
        ({"changefeed_id": "a" * 129}, "CDC:ErrAPIInvalidParam", "invalid changefeed_id"),
        ({"sink_uri": ""}, "CDC:ErrSinkURIInvalid", "sink_uri is empty"),
        ({"sink_uri": "ftp://h/p?protocol=csv"}, "CDC:ErrSinkURIInvalid", "ftp"),
        ({"sink_uri": "file:///tmp/x"}, None, "protocol"),
        ({"sink_uri": "file:///proc/no/such/dir?protocol=csv"}, "CDC:ErrStorageInitialize",
         "cannot write the sink's storage file:///proc/no/such/dir?protocol=csv: write file:///proc/no/such/dir/"),
        ({"start_ts": NOW + 1}, "CDC:ErrAPIInvalidParam", "larger than current tso"),
        ({"start_ts": OLDEST - 1}, "CDC:ErrStartTsBeforeGC", "earlier than the oldest binlog"),
        ({"start_ts": NOW - 10, "target_ts": NOW - 10}, "CDC:ErrTargetTsBeforeStartTs", "target-ts"),
        ({"namespace": "bad ns"}, "CDC:ErrAPIInvalidParam", "invalid namespace"),
    ],
)
def test_create_rejects_and_changes_nothing(
    mgr: ChangefeedManager, runner: FakeRunner, kw: dict[str, object], code: str | None, fragment: str
) -> None:
    args: dict[str, object] = {"changefeed_id": "ok", "sink_uri": SINK, **kw}
    with pytest.raises(ConfigError) as e:
        mgr.create(CreateRequest(**args))  # type: ignore[arg-type]
    assert fragment in e.value.message
    if code:
        assert e.value.code == code
    assert mgr.list(None) == []
    assert runner.calls == []


def test_duplicate_id(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    create(mgr)
    with pytest.raises(ConfigError) as e:
        create(mgr, sink_uri="file:///other?protocol=csv")
    assert e.value.code == "CDC:ErrChangeFeedAlreadyExists"
    info, _ = mgr.get("default", "cf1")
    assert info.sink_uri == SINK
    assert runner.calls == [("start", "cf1")]


def test_bad_sink_config_is_rejected(mgr: ChangefeedManager) -> None:
    cfg = ReplicaConfig.from_toml({"sink": {"date-separator": "week"}})
    with pytest.raises(ConfigError, match="date-separator"):
        mgr.create(CreateRequest(changefeed_id="cf1", sink_uri=SINK, config=cfg))
    assert mgr.list() == []


def test_upstream_unreachable_is_reported(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    def boom() -> int:
        raise UpstreamError("cannot connect to upstream 127.0.0.1:1", retryable=True)

    runner.current_tso = boom  # type: ignore[method-assign]
    with pytest.raises(UpstreamError):
        create(mgr)
    assert mgr.list() == []


def test_pause_resume(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    create(mgr)
    mgr.pause("default", "cf1")
    assert mgr.get("default", "cf1")[0].state == FeedState.STOPPED
    assert "cf1" not in runner.running
    mgr.pause("default", "cf1")  # pausing a stopped changefeed is ignored, as in TiCDC
    assert mgr.get("default", "cf1")[0].state == FeedState.STOPPED
    mgr.resume("default", "cf1")
    assert mgr.get("default", "cf1")[0].state == FeedState.NORMAL
    assert runner.running == {"cf1": NOW}
    mgr.resume("default", "cf1")  # resuming a running changefeed is ignored
    assert runner.calls.count(("start", "cf1")) == 2


def test_progress_is_monotonic(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    create(mgr, start_ts=NOW - 1000)
    runner.report("cf1", NOW - 500)
    mgr.poll_once()
    assert mgr.get("default", "cf1")[1].checkpoint_ts == NOW - 500
    runner.report("cf1", NOW - 900)  # a runner going backwards never moves the stored checkpoint back
    mgr.poll_once()
    assert mgr.get("default", "cf1")[1].checkpoint_ts == NOW - 500


def test_a_warning_cleared_with_progress_is_one_write(tmp_path: Path, runner: FakeRunner) -> None:
    """State and checkpoint change in one store write: a reader (the API) never sees the checkpoint the recovered
    run reached with the ``warning`` it recovered from."""
    writes: list[str] = []

    class Recording(MetaStore):
        def put_info(self, info: ChangefeedInfo) -> None:
            writes.append("info")
            super().put_info(info)

        def put_status(self, namespace: str, changefeed_id: str, status: ChangefeedStatus) -> None:
            writes.append("status")
            super().put_status(namespace, changefeed_id, status)

        def put(self, info: ChangefeedInfo, status: ChangefeedStatus) -> None:
            writes.append("both")
            super().put(info, status)

    mgr = ChangefeedManager(Recording(tmp_path), runner, addr="127.0.0.1:1")
    mgr.start(poll=False)
    create(mgr, start_ts=NOW - 1000)
    runner.report("cf1", NOW - 900, warning=RunningError("CDC:ErrAvroSchemaAPIError", "refused"))
    mgr.poll_once()
    assert mgr.get("default", "cf1")[0].state == FeedState.WARNING
    writes.clear()
    runner.report("cf1", NOW - 500)
    mgr.poll_once()
    info, status = mgr.get("default", "cf1")
    assert (info.state, status.checkpoint_ts, writes) == (FeedState.NORMAL, NOW - 500, ["both"])
    runner.report("cf1", NOW - 400)
    mgr.poll_once()
    assert writes == ["both", "status"]


def test_error_moves_to_failed_and_keeps_error(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    create(mgr, start_ts=NOW - 1000)
    runner.report("cf1", NOW - 500, error=RunningError("CDC:ErrExternalStorageAPI", "s3 said no"))
    mgr.poll_once()
    info, status = mgr.get("default", "cf1")
    assert info.state == FeedState.FAILED
    assert info.error is not None and info.error.message == "s3 said no"
    assert status.checkpoint_ts == NOW - 1000
    assert "cf1" not in runner.running
    mgr.pause("default", "cf1")  # failed cannot be paused (ignored)
    assert mgr.get("default", "cf1")[0].state == FeedState.FAILED
    mgr.resume("default", "cf1")
    info, _ = mgr.get("default", "cf1")
    assert info.state == FeedState.NORMAL and info.error is None
    assert runner.running["cf1"] == NOW - 1000


def test_start_failure_marks_failed(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    runner.fail_start = UpstreamError("binlog purged")
    create(mgr)
    info, _ = mgr.get("default", "cf1")
    assert info.state == FeedState.FAILED
    assert info.error is not None and info.error.code == "CDC:ErrUpstream" and info.error.addr == "127.0.0.1:1"


def test_target_ts_finishes(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    create(mgr, start_ts=NOW - 1000, target_ts=NOW - 100)
    runner.report("cf1", NOW - 200)
    mgr.poll_once()
    assert mgr.get("default", "cf1")[0].state == FeedState.NORMAL
    runner.report("cf1", NOW)
    mgr.poll_once()
    info, status = mgr.get("default", "cf1")
    assert info.state == FeedState.FINISHED
    assert status.checkpoint_ts == NOW - 100
    assert "cf1" not in runner.running
    assert [s for s in states_needed("") or () if s == FeedState.FINISHED] == []


def test_update_only_when_stopped(mgr: ChangefeedManager) -> None:
    create(mgr, start_ts=NOW - 1000)
    with pytest.raises(ConfigError) as e:
        mgr.update("default", "cf1", target_ts=NOW)
    assert e.value.code == "CDC:ErrChangefeedUpdateRefused"
    mgr.pause("default", "cf1")
    with pytest.raises(ConfigError, match="must be larger than start-ts"):
        mgr.update("default", "cf1", target_ts=NOW - 1000)
    cfg = ReplicaConfig.from_toml({"filter": {"rules": ["app.*"]}})
    info, _ = mgr.update("default", "cf1", target_ts=NOW, sink_uri="file:///tmp/new?protocol=csv", config=cfg)
    assert info.target_ts == NOW and info.config.filter.rules == ("app.*",)
    assert info.config.sink["protocol"] == "csv"
    assert mgr.get("default", "cf1")[0].sink_uri == "file:///tmp/new?protocol=csv"
    with pytest.raises(ConfigError):
        mgr.update("default", "cf1", sink_uri="ftp://x/y")
    assert mgr.get("default", "cf1")[0].sink_uri == "file:///tmp/new?protocol=csv"


def test_update_refuses_what_create_refuses(mgr: ChangefeedManager) -> None:
    create(mgr)
    mgr.pause("default", "cf1")
    before = mgr.get("default", "cf1")[0]
    for case in REFUSED:
        with pytest.raises(ConfigError) as e:
            mgr.update("default", "cf1", config=ReplicaConfig.from_toml_text(case.toml))
        assert e.value.code == case.code and case.fragment in e.value.message, case.id
    assert mgr.get("default", "cf1")[0] == before


def test_update_with_the_masked_sink_uri_keeps_the_secret(
    mgr: ChangefeedManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GET shows the sink URI masked; sending it back unchanged must not store 'xxxxx' as the secret."""
    probed = object_stores_answer(monkeypatch)
    secret = "s3://bkt/p?protocol=csv&access-key=AK&secret-access-key=TOPSECRET"
    create(mgr, sink_uri=secret)
    mgr.pause("default", "cf1")
    masked = mask_uri(secret)
    assert "TOPSECRET" not in masked
    info, _ = mgr.update("default", "cf1", sink_uri=masked, config=mgr.get("default", "cf1")[0].config)
    assert info.sink_uri == secret and mgr.get("default", "cf1")[0].sink_uri == secret
    other = "s3://bkt/p?protocol=csv&access-key=AK&secret-access-key=NEW"
    assert mgr.update("default", "cf1", sink_uri=other)[0].sink_uri == other
    assert probed == ["the sink's storage s3://bkt/p?protocol=csv&access-key=xxxxx&secret-access-key=xxxxx"] * 3


def test_resume_overwrite_checkpoint(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    create(mgr, start_ts=NOW - 1000)
    mgr.pause("default", "cf1")
    with pytest.raises(ConfigError, match="smaller than current TSO"):
        mgr.resume("default", "cf1", NOW + 1)
    with pytest.raises(ConfigError) as e:
        mgr.resume("default", "cf1", OLDEST - 1)
    assert e.value.code == "CDC:ErrStartTsBeforeGC"
    assert mgr.get("default", "cf1")[0].state == FeedState.STOPPED
    mgr.resume("default", "cf1", NOW - 10)
    assert mgr.get("default", "cf1")[1].checkpoint_ts == NOW - 10
    assert runner.running["cf1"] == NOW - 10


def test_remove(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    create(mgr)
    assert mgr.remove("default", "cf1") is True
    assert runner.removed == ["cf1"] and "cf1" not in runner.running
    with pytest.raises(ConfigError) as e:
        mgr.get("default", "cf1")
    assert e.value.code == "CDC:ErrChangeFeedNotExists"
    assert mgr.remove("default", "cf1") is False


def test_unknown_changefeed(mgr: ChangefeedManager) -> None:
    for op in (mgr.pause, mgr.resume, mgr.get):
        with pytest.raises(ConfigError) as e:
            op("default", "nope")
        assert e.value.code == "CDC:ErrChangeFeedNotExists"


def test_restart_resumes_only_running(tmp_path: Path) -> None:
    r1 = FakeRunner()
    m1 = ChangefeedManager(MetaStore(tmp_path), r1)
    m1.start(poll=False)
    for cf in ("run", "paused", "broken"):
        create(m1, cf, start_ts=NOW - 1000)
    m1.pause("default", "paused")
    r1.report("broken", NOW - 900, error=RunningError("CDC:ErrX", "x"))
    r1.report("run", NOW - 800)
    m1.poll_once()
    # no close(): the process "dies"; a new manager over the same data dir takes over
    r2 = FakeRunner()
    m2 = ChangefeedManager(MetaStore(tmp_path), r2)
    m2.start(poll=False)
    assert r2.running == {"run": NOW - 800}
    states = {i.id: i.state for i, _ in m2.list()}
    assert states == {"run": FeedState.NORMAL, "paused": FeedState.STOPPED, "broken": FeedState.FAILED}
    m2.close()
    assert r2.closed


def test_poller_thread_applies_status(tmp_path: Path) -> None:
    from sparkcdc.server.runners import NoopRunner

    runner = NoopRunner()
    m = ChangefeedManager(MetaStore(tmp_path), runner, poll_interval=0.01)
    start = runner.current_tso()
    m.start()
    try:
        m.create(CreateRequest(changefeed_id="cf1", sink_uri=SINK, start_ts=start - 1000, target_ts=start - 10))
        import time

        deadline = time.monotonic() + 5
        while m.get("default", "cf1")[0].state != FeedState.FINISHED and time.monotonic() < deadline:
            time.sleep(0.01)
        info, status = m.get("default", "cf1")
        assert info.state == FeedState.FINISHED and status.checkpoint_ts == start - 10
    finally:
        m.close()


def test_noop_runner_honours_the_contract() -> None:
    from sparkcdc.server.runners import NoopRunner
    from tests.unit.server.runner_contract import check_runner_contract

    runner = NoopRunner()
    now = runner.current_tso()
    check_runner_contract(runner, ChangefeedInfo(id="cf1", sink_uri=SINK, start_ts=now - 1000))


def test_restart_does_not_start_twice(tmp_path: Path) -> None:
    r1 = FakeRunner()
    m1 = ChangefeedManager(MetaStore(tmp_path), r1)
    m1.start(poll=False)
    create(m1, "a")
    create(m1, "b")
    m1.pause("default", "b")
    r2 = FakeRunner()
    m2 = ChangefeedManager(MetaStore(tmp_path), r2)
    m2.resume("default", "b")  # an API call that lands before the restart loop reaches "b"
    m2.resume_all()  # FakeRunner asserts on a second start without stop
    assert sorted(r2.running) == ["a", "b"]


def test_a_lake_sink_refuses_a_keyless_table_with_a_change_log_column_name_at_create(
        mgr: ChangefeedManager, runner: FakeRunner, tmp_path: Path) -> None:  # fmt: skip
    """A key-less table the changefeed would keep as a change log (force-replicate) with a column named like one of
    its columns is refused at create and update in one line, with the lake's DDL code; nothing is created. Tables it
    does not replicate (no force-replicate, filtered out) and tables with a key are not refused."""
    from sparkcdc.model.table import ColumnInfo, TableInfo

    key = ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True)
    runner.tables = [TableInfo("shop", "log", 1, (ColumnInfo("v", "int"), ColumnInfo("_TiDB_Commit_TS", "bigint"))),
                     TableInfo("shop", "keyed", 2, (key, ColumnInfo("_tidb_op", "varchar")))]  # fmt: skip
    lake = f"delta://{tmp_path}/lake"
    forced = ReplicaConfig.from_toml({"force-replicate": True})
    with pytest.raises(ConfigError) as e:
        create(mgr, "bad", sink_uri=lake, config=forced)
    assert e.value.code == "CDC:ErrLakeDDLUnsupported"
    assert e.value.message == (
        "shop.log: the table has no key, so its lake table is a change log that adds a column '_tidb_commit_ts', and "
        "the table has a column '_TiDB_Commit_TS' of its own; rename that column upstream, or exclude the table from "
        "the changefeed ([filter] rules)")  # fmt: skip
    assert mgr.list(None) == [] and runner.calls == []
    create(mgr, "not-forced", sink_uri=lake)
    create(mgr, "filtered", sink_uri=lake, config=ReplicaConfig.from_toml({"force-replicate": True, "filter": {
        "rules": ["shop.keyed"]}}))  # fmt: skip
    mgr.pause("default", "not-forced")
    with pytest.raises(ConfigError, match=r"^shop\.log: the table has no key") as e:
        mgr.update("default", "not-forced", config=forced)
    assert e.value.code == "CDC:ErrLakeDDLUnsupported"


def _expr_config(expr: str, matcher: str = "shop.*") -> ReplicaConfig:
    return ReplicaConfig.from_toml({"filter": {"rules": ["shop.*"], "event-filters": [
        {"matcher": [matcher], "ignore-insert-value-expr": expr}]}})  # fmt: skip


def test_expression_filter_checked_against_the_upstream_tables(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    """As TiCDC's create: an expression naming a column a matched, replicated table lacks is refused with
    CDC:ErrExpressionColumnNotFound, at create and at update; nothing is created or changed. Tables the
    changefeed does not replicate, or the rule does not match, are not checked."""
    from sparkcdc.model.table import ColumnInfo, TableInfo

    key = ColumnInfo("id", "int", primary_key=True, handle_key=True, nullable=False)
    runner.tables = [
        TableInfo("shop", "orders", 1, (key, ColumnInfo("amount", "decimal"))),
        TableInfo("crm", "people", 2, (key,)),  # not replicated: shop.* only
        TableInfo("shop", "audit", 3, (ColumnInfo("amount", "decimal"),)),  # not replicated: no key
    ]
    with pytest.raises(ConfigError) as e:
        create(mgr, "bad", config=_expr_config("region = 'eu'"))
    assert e.value.code == "CDC:ErrExpressionColumnNotFound"
    assert e.value.message == ("filter.event-filters[0].ignore-insert-value-expr: invalid filter expression(s). "
                               "Cannot find column 'region' from table 'shop.orders' in: region = 'eu'")  # fmt: skip
    assert mgr.list(None) == [] and runner.calls == []

    create(mgr, "ok", config=_expr_config("amount > 100"))
    create(mgr, "other-table", config=_expr_config("region = 'eu'", matcher="shop.nothing"))
    mgr.pause("default", "ok")
    before = mgr.get("default", "ok")
    with pytest.raises(ConfigError) as e:
        mgr.update("default", "ok", config=_expr_config("amount > 100 or missing = 1"))
    assert e.value.code == "CDC:ErrExpressionColumnNotFound" and "'missing'" in e.value.message
    assert mgr.get("default", "ok") == before
    # the key-less table is checked once force-replicate replicates it, as the rows then reach the filter
    forced = ReplicaConfig.from_toml({**_expr_config("amount > 100 or id > 1").to_toml(), "force-replicate": True})
    with pytest.raises(ConfigError, match=r"Cannot find column 'id' from table 'shop\.audit'") as e:
        mgr.update("default", "ok", config=forced)
    assert e.value.code == "CDC:ErrExpressionColumnNotFound"
    mgr.update("default", "ok", config=_expr_config("amount > 100 or id > 1"))
    runner.tables = None  # a runner that cannot tell (noop) accepts: the changefeed would fail on the row
    mgr.update("default", "ok", config=_expr_config("missing = 1"))


def test_create_and_update_read_the_upstream_tables_once(
        mgr: ChangefeedManager, runner: FakeRunner, tmp_path: Path) -> None:  # fmt: skip
    """The expression filters' check and the lake sink's check share one read of the schema history."""
    from sparkcdc.model.table import ColumnInfo, TableInfo

    key = ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True)
    runner.tables = [TableInfo("shop", "orders", 1, (key, ColumnInfo("amount", "decimal")))]
    create(mgr, "lake", sink_uri=f"delta://{tmp_path}/lake", config=_expr_config("amount > 100"))
    assert runner.table_reads == 1
    mgr.pause("default", "lake")
    mgr.update("default", "lake", config=_expr_config("amount > 200"))
    assert runner.table_reads == 2


def test_create_is_refused_when_no_changefeed_can_run_here(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    runner.unstartable = "cdc server was started without --upstream"
    with pytest.raises(ConfigError, match="without --upstream") as e:
        create(mgr)
    assert e.value.code == "CDC:ErrInvalidServerOption"
    assert mgr.list(None) == [] and runner.calls == []  # nothing stored, nothing started


def test_resume_is_refused_when_no_changefeed_can_run_here(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    create(mgr)
    mgr.pause("default", "cf1")
    runner.unstartable = "cdc server was started without --upstream"
    calls = list(runner.calls)
    with pytest.raises(ConfigError, match="without --upstream") as e:
        mgr.resume("default", "cf1")
    assert e.value.code == "CDC:ErrInvalidServerOption"
    assert mgr.get("default", "cf1")[0].state.value == "stopped" and runner.calls == calls  # nothing started
