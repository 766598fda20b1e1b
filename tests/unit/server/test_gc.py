"""The service GC safepoint (states, gc-ttl, life time) and how the state machine applies it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sparkcdc.changefeed.info import ChangefeedInfo, ChangefeedStatus, FeedState, RunningError
from sparkcdc.changefeed.runner import RunnerStatus
from sparkcdc.errors import ConfigError
from sparkcdc.model import tso
from sparkcdc.server.changefeed import ChangefeedManager, CreateRequest
from sparkcdc.server.gc import GcPolicy, gc_ttl_exceeded, safepoint
from sparkcdc.server.store import MetaStore
from tests.unit.server.fakes import NOW, SINK, FakeRunner

NOW_S = tso.physical(NOW) / 1000
POLICY = GcPolicy(ttl_s=3600, life_time_s=600)
FLOOR = tso.compose(tso.physical(NOW) - 600_000)  # NOW minus the life time


def feed(
    cf: str, state: FeedState, checkpoint: int, stopped_at: float = 0.0
) -> tuple[ChangefeedInfo, ChangefeedStatus]:
    info = ChangefeedInfo(id=cf, sink_uri=SINK, start_ts=checkpoint, state=state, stopped_at=stopped_at)
    return info, ChangefeedStatus(checkpoint, checkpoint)


def ago(seconds: float) -> int:
    return tso.compose(tso.physical(NOW) - int(seconds * 1000))


def test_no_changefeeds_keeps_the_life_time() -> None:
    assert safepoint([], NOW, NOW_S, POLICY) == FLOOR
    assert safepoint([], NOW, NOW_S, GcPolicy(life_time_s=0)) == NOW


@pytest.mark.parametrize("state", [FeedState.NORMAL, FeedState.WARNING, FeedState.PENDING])
def test_running_changefeeds_hold_their_checkpoint(state: FeedState) -> None:
    feeds = [feed("a", state, ago(7200)), feed("b", FeedState.NORMAL, ago(3000))]
    assert safepoint(feeds, NOW, NOW_S, POLICY) == ago(7200)


def test_recent_checkpoints_never_move_the_floor_forward() -> None:
    assert safepoint([feed("a", FeedState.NORMAL, ago(5))], NOW, NOW_S, POLICY) == FLOOR


@pytest.mark.parametrize("state", [FeedState.STOPPED, FeedState.FAILED])
def test_stopped_changefeeds_hold_data_until_gc_ttl(state: FeedState) -> None:
    within = feed("a", state, ago(9000), stopped_at=NOW_S - 3599)
    assert safepoint([within], NOW, NOW_S, POLICY) == ago(9000)
    assert not gc_ttl_exceeded(*within, NOW_S, POLICY)
    expired = feed("a", state, ago(9000), stopped_at=NOW_S - 3601)
    assert safepoint([expired], NOW, NOW_S, POLICY) == FLOOR
    assert gc_ttl_exceeded(*expired, NOW_S, POLICY)


def test_gc_ttl_counts_from_the_stop_not_the_checkpoint() -> None:
    """A changefeed paused with an old checkpoint (catching up) keeps its data for gc-ttl after the pause."""
    paused = feed("a", FeedState.STOPPED, ago(86400 * 3), stopped_at=NOW_S - 10)
    assert safepoint([paused], NOW, NOW_S, POLICY) == ago(86400 * 3)


def test_a_stop_without_a_recorded_time_counts_from_its_checkpoint() -> None:
    assert gc_ttl_exceeded(*feed("a", FeedState.STOPPED, ago(3601)), NOW_S, POLICY)
    assert not gc_ttl_exceeded(*feed("a", FeedState.STOPPED, ago(3599)), NOW_S, POLICY)


def test_finished_changefeeds_hold_nothing() -> None:
    assert safepoint([feed("a", FeedState.FINISHED, ago(9000))], NOW, NOW_S, POLICY) == FLOOR


def test_policy_rejects_bad_values() -> None:
    with pytest.raises(ConfigError, match="ttl_s"):
        GcPolicy(ttl_s=-1)
    with pytest.raises(ConfigError, match="interval_s"):
        GcPolicy(interval_s=0)


class Clock:
    def __init__(self) -> None:
        self.now = NOW_S

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def runner() -> FakeRunner:
    return FakeRunner()


@pytest.fixture
def mgr(tmp_path: Path, runner: FakeRunner, clock: Clock) -> ChangefeedManager:
    m = ChangefeedManager(MetaStore(tmp_path), runner, gc=POLICY, clock=clock)
    m.start(poll=False)
    return m


def create(mgr: ChangefeedManager, cf: str, start_ts: int) -> None:
    mgr.create(CreateRequest(changefeed_id=cf, sink_uri=SINK, start_ts=start_ts))


def test_gc_once_hands_the_safepoint_to_the_runner(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    create(mgr, "cf1", ago(7200))
    create(mgr, "cf2", ago(5000))
    mgr.pause("default", "cf1")
    assert mgr.gc_once() == ago(7200)
    mgr.remove("default", "cf1")
    mgr.remove("default", "cf2")
    assert mgr.gc_once() == FLOOR
    assert runner.gc_calls == [ago(7200), FLOOR]
    with pytest.raises(ConfigError) as e:  # below the safepoint: refused from now on
        create(mgr, "cf3", ago(601))
    assert e.value.code == "CDC:ErrStartTsBeforeGC"
    create(mgr, "cf3", ago(599))  # a recent start-ts still works with no changefeed holding data


def test_paused_past_gc_ttl_cannot_resume(
    mgr: ChangefeedManager, runner: FakeRunner, clock: Clock, tmp_path: Path
) -> None:
    create(mgr, "cf1", ago(7200))
    create(mgr, "cf2", ago(5000))
    mgr.pause("default", "cf1")
    assert MetaStore(tmp_path).get("default", "cf1")[0].stopped_at == NOW_S  # persisted with the state
    clock.now += 3601
    runner.now = tso.compose(tso.physical(NOW) + 3601_000)
    assert mgr.gc_once() == ago(5000)  # cf1 no longer holds data back
    with pytest.raises(ConfigError) as e:
        mgr.resume("default", "cf1")
    assert e.value.code == "CDC:ErrStartTsBeforeGC"
    assert "gc-ttl" in e.value.message and "\n" not in e.value.message
    assert mgr.get("default", "cf1")[0].state == FeedState.STOPPED
    assert "cf1" not in runner.running
    mgr.resume("default", "cf1", ago(4000))  # TiCDC's way out: a checkpoint that is still retained
    info, status = mgr.get("default", "cf1")
    assert info.state == FeedState.NORMAL and info.stopped_at == 0 and status.checkpoint_ts == ago(4000)


def test_resume_within_gc_ttl_works(mgr: ChangefeedManager, runner: FakeRunner, clock: Clock) -> None:
    create(mgr, "cf1", ago(7200))
    mgr.pause("default", "cf1")
    clock.now += 3599
    mgr.gc_once()
    mgr.resume("default", "cf1")
    assert runner.running["cf1"] == ago(7200)


def test_failed_changefeed_expires_from_its_failure(mgr: ChangefeedManager, runner: FakeRunner, clock: Clock) -> None:
    create(mgr, "cf1", ago(7200))
    runner.report("cf1", ago(7000), error=RunningError("CDC:ErrSinkFailed", "boom"))
    mgr.poll_once()
    assert mgr.get("default", "cf1")[0].state == FeedState.FAILED
    clock.now += 3601
    with pytest.raises(ConfigError) as e:
        mgr.resume("default", "cf1")
    assert e.value.code == "CDC:ErrStartTsBeforeGC"


def test_resume_behind_the_retained_data_is_refused(mgr: ChangefeedManager, runner: FakeRunner) -> None:
    create(mgr, "cf1", ago(7200))
    mgr.pause("default", "cf1")
    runner.oldest = ago(100)  # e.g. the upstream purged its binlogs
    with pytest.raises(ConfigError) as e:
        mgr.resume("default", "cf1")
    assert e.value.code == "CDC:ErrStartTsBeforeGC"


class CountingRunner(FakeRunner):
    def __init__(self) -> None:
        super().__init__()
        self.polls = 0

    def status(self, namespace: str, changefeed_id: str) -> RunnerStatus | None:
        self.polls += 1
        return super().status(namespace, changefeed_id)


def test_the_poller_updates_the_safepoint_once_per_interval(tmp_path: Path) -> None:
    runner = CountingRunner()
    m = ChangefeedManager(MetaStore(tmp_path), runner, poll_interval=0.01, gc=GcPolicy(interval_s=3600))
    m.create(CreateRequest(changefeed_id="cf1", sink_uri=SINK, start_ts=ago(60)))
    m.start()
    try:
        deadline = time.monotonic() + 10
        while (not runner.gc_calls or runner.polls < 20) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert runner.polls >= 20
        assert runner.gc_calls == [FLOOR]  # on the first poll, then not again within the interval
    finally:
        m.close()
