"""``GET /metrics``: TiCDC's owner and sink metric names and values from a scripted runner, parsed back with
prometheus_client's own parser (in-process)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sparkcdc.changefeed.info import RunningError
from sparkcdc.changefeed.runner import BatchStats, CaptureStats, RunnerStatus, SinkTotals
from sparkcdc.model import tso
from sparkcdc.server import api_model
from sparkcdc.server.api import create_app
from sparkcdc.server.changefeed import ChangefeedManager, CreateRequest
from sparkcdc.server.cluster import SingleNode
from sparkcdc.server.metrics import ServerMetrics
from sparkcdc.server.store import MetaStore
from tests.unit.server.fakes import NOW, SINK, FakeRunner
from tests.unit.server.test_api import ASGIClient

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
NOW_S = tso.physical(NOW) / 1000


def scrape(client: ASGIClient) -> Samples:
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(r.text) for s in family.samples}  # fmt: skip


def cf(name: str = "cf1") -> tuple[tuple[str, str], ...]:
    return (("changefeed", name), ("namespace", "default"))


class Owner:
    def __init__(self) -> None:
        self.owner = True

    def __call__(self) -> bool:
        return self.owner


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ChangefeedManager, FakeRunner, ASGIClient, Owner]:
    runner = FakeRunner()
    mgr = ChangefeedManager(MetaStore(tmp_path), runner, metrics=ServerMetrics(clock=lambda: NOW_S + 30))
    mgr.start(poll=False)
    owner = Owner()
    node = SingleNode("127.0.0.1:8300", capture_id="cap-1")
    node.is_owner = owner  # type: ignore[method-assign]
    return mgr, runner, ASGIClient(create_app(mgr, node)), owner


def batch(rows: int, size: int, flush: float, took: float) -> BatchStats:
    return BatchStats(rows=rows, size=size, flush_seconds=flush, batch_seconds=took)


def test_owner_metrics_follow_checkpoint_and_state(setup: tuple[ChangefeedManager, FakeRunner, ASGIClient, Owner],
                                                   ) -> None:  # fmt: skip
    mgr, runner, client, owner = setup
    start = NOW - (20_000 << 18)  # 20 s before NOW; the metrics clock is NOW + 30 s
    mgr.create(CreateRequest("cf1", sink_uri=SINK, start_ts=start))
    runner.progress["cf1"] = RunnerStatus(start + (5_000 << 18), start + (15_000 << 18))
    mgr.poll_once()
    got = scrape(client)
    assert got[("ticdc_owner_status", cf())] == 0
    assert got[("ticdc_owner_checkpoint_ts", cf())] == tso.physical(start) + 5_000
    assert got[("ticdc_owner_checkpoint_ts_lag", cf())] == pytest.approx(45.0)
    assert got[("ticdc_owner_resolved_ts", cf())] == tso.physical(start) + 15_000
    assert got[("ticdc_owner_resolved_ts_lag", cf())] == pytest.approx(35.0)

    runner.progress["cf1"] = RunnerStatus(NOW + (29_000 << 18), NOW + (29_500 << 18))  # caught up: lag falls
    mgr.poll_once()
    assert scrape(client)[("ticdc_owner_checkpoint_ts_lag", cf())] == pytest.approx(1.0)

    mgr.pause("default", "cf1")
    got = scrape(client)
    assert got[("ticdc_owner_status", cf())] == 3  # TiCDC's FeedState.ToInt for stopped
    assert ("ticdc_owner_checkpoint_ts_lag", cf()) not in got  # only running changefeeds report ts and lag

    owner.owner = False  # a capture that is not the owner reports no owner metrics
    assert not [k for k in scrape(client) if k[0].startswith("ticdc_owner_")]


def test_sink_counters_histograms_errors_and_capture(setup: tuple[ChangefeedManager, FakeRunner, ASGIClient, Owner],
                                                     ) -> None:  # fmt: skip
    mgr, runner, client, _ = setup
    mgr.create(CreateRequest("cf1", sink_uri=SINK, start_ts=NOW - 1))
    runner.progress["cf1"] = RunnerStatus(NOW, NOW, totals=SinkTotals(10, 1000, 1),
                                          last_batch=batch(10, 1000, 0.3, 1.5), last_batch_id=0)  # fmt: skip
    mgr.poll_once()
    mgr.poll_once()  # the same batch seen again is not observed twice
    runner.progress["cf1"] = RunnerStatus(NOW, NOW, totals=SinkTotals(25, 2400, 2),
                                          last_batch=batch(15, 1400, 3.0, 5.0), last_batch_id=1)  # fmt: skip
    mgr.poll_once()
    runner.capture = CaptureStats(resolved_ts=NOW + (28_000 << 18), relay_bytes=12345)
    got = scrape(client)
    assert got[("ticdc_sink_dml_event_count", cf())] == 25
    assert got[("ticdc_sink_write_bytes_total", cf())] == 2400
    assert got[("sparkcdc_sink_flush_duration_seconds_count", cf())] == 2
    assert got[("sparkcdc_sink_flush_duration_seconds_sum", cf())] == pytest.approx(3.3)
    assert got[("sparkcdc_sink_flush_duration_seconds_bucket", tuple(sorted((*cf(), ("le", "0.32")))))] == 1
    assert got[("sparkcdc_changefeed_batch_duration_seconds_sum", cf())] == pytest.approx(6.5)
    assert got[("sparkcdc_relay_log_bytes", ())] == 12345
    assert got[("sparkcdc_relay_resolved_ts_lag", ())] == pytest.approx(2.0)

    warning = RunningError(addr="a", code="CDC:ErrKafkaSendMessage", message="broker down")
    runner.progress["cf1"] = RunnerStatus(NOW, NOW, warning=warning)
    mgr.poll_once()
    mgr.poll_once()  # the same warning still standing is counted once
    runner.progress["cf1"] = RunnerStatus(NOW, NOW, error=RunningError(addr="a", code="CDC:ErrX", message="boom"))
    mgr.poll_once()
    got = scrape(client)
    assert got[("sparkcdc_changefeed_warnings_total", cf())] == 1
    assert got[("sparkcdc_changefeed_errors_total", cf())] == 1
    assert got[("ticdc_owner_status", cf())] == 2  # failed

    mgr.remove("default", "cf1")
    assert not [k for k in scrape(client) if dict(k[1]).get("changefeed") == "cf1"]


def test_synced_follows_ticdc_cases(setup: tuple[ChangefeedManager, FakeRunner, ASGIClient, Owner]) -> None:
    mgr, runner, client, _ = setup
    now_ms = time.time_ns() // 1_000_000

    def ago(seconds: float) -> int:
        return tso.compose(int(now_ms - seconds * 1000))

    runner.now = ago(0)
    mgr.create(CreateRequest("cf1", sink_uri=SINK, start_ts=ago(3600)))

    def synced(checkpoint: int, resolved: int, last: int) -> dict[str, Any]:
        runner.progress["cf1"] = RunnerStatus(checkpoint, resolved, totals=SinkTotals(1, 1, 1, last))
        mgr.poll_once()
        r = client.get("/api/v2/changefeeds/cf1/synced")
        assert r.status_code == 200
        doc: dict[str, Any] = r.json()
        assert list(doc) == ["synced", "sink_checkpoint_ts", "puller_resolved_ts", "last_synced_ts", "now_ts", "info"]
        return doc

    # (the stored checkpoint never goes back: the cases run with a checkpoint moving forward)
    stuck = synced(ago(3000), ago(2999), ago(3100))  # quiet, but checkpoint and resolved ts both stand still
    assert stuck["synced"] is False and stuck["info"].startswith("Please check whether the upstream is online")
    behind = synced(ago(1000), ago(5), ago(1100))  # quiet, resolved ts moves on: catching up
    assert behind["synced"] is False and behind["info"] == "The data syncing is not finished, please wait"
    busy = synced(ago(2), ago(1), ago(10))  # a row change 10 s ago: still syncing
    assert busy["synced"] is False and busy["info"] == "The data syncing is not finished, please wait"
    done = synced(ago(1), ago(0.5), ago(400))  # quiet for 400 s > 300, checkpoint 1 s behind < 15
    assert done["synced"] is True and done["info"] == "Data syncing is finished"
    assert done["last_synced_ts"] == api_model.json_time(ago(400))
    assert client.get("/api/v2/changefeeds/nope/synced").status_code == 400
