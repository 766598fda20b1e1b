"""``GET /dashboard``: the status page rendered from the manager's state and its lag history (in-process, scripted
runner, a fake clock): table, rows/s, the lag chart's points, captures, escaping."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from sparkcdc.changefeed.info import RunningError
from sparkcdc.changefeed.runner import RunnerStatus, SinkTotals
from sparkcdc.model import tso
from sparkcdc.server.api import create_app
from sparkcdc.server.changefeed import ChangefeedManager, CreateRequest
from sparkcdc.server.cluster import SingleNode
from sparkcdc.server.lag_history import LagHistory
from sparkcdc.server.store import MetaStore
from tests.unit.server.fakes import NOW, SINK, FakeRunner
from tests.unit.server.test_api import ASGIClient


class Clock:
    def __init__(self) -> None:
        self.now = tso.physical(NOW) / 1000

    def __call__(self) -> float:
        return self.now


def test_page_shows_changefeeds_lag_chart_rate_and_captures(tmp_path: Path) -> None:
    clock = Clock()
    runner = FakeRunner()
    mgr = ChangefeedManager(MetaStore(tmp_path), runner, clock=clock)
    mgr.start(poll=False)
    client = ASGIClient(create_app(mgr, SingleNode("127.0.0.1:8300", capture_id="cap-1")))
    mgr.create(CreateRequest("cf1", sink_uri=SINK, start_ts=NOW - (600_000 << 18)))
    mgr.create(CreateRequest("paused", sink_uri=SINK, start_ts=NOW - 1))
    mgr.pause("default", "paused")
    for i in range(7):  # a sample every 10 s; 100 rows and 80 s of lag made up between samples
        checkpoint = tso.compose(int((clock.now - 600 + 90 * i) * 1000))
        runner.progress["cf1"] = RunnerStatus(checkpoint, checkpoint, totals=SinkTotals(100 * i, 1, i))
        mgr.poll_once()
        clock.now += 10
    r = client.get("/dashboard")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org", "")  # self-contained
    row = re.search(r'<tr data-changefeed="default/cf1">(.*?)</tr>', page)
    assert row is not None
    assert '<td class="state normal">normal</td>' in row.group(1)
    assert re.search(r'<td class="num rate">10</td>', row.group(1))  # 600 rows over the last 60 s
    assert '<td class="num lag">1m 10s</td>' in row.group(1)  # the page's clock is 70 s past the checkpoint
    paused = re.search(r'<tr data-changefeed="default/paused">(.*?)</tr>', page)
    assert paused is not None and '<td class="state stopped">stopped</td>' in paused.group(1)
    chart = re.search(r'<figure data-changefeed="default/cf1">.*?points="([^"]+)"', page)
    assert chart is not None and len(chart.group(1).split()) == 7
    assert 'data-changefeed="default/paused"><figcaption>' not in page  # charts for running changefeeds only
    assert '<tr data-capture="cap-1"><td>cap-1</td><td>127.0.0.1:8300</td><td>owner</td></tr>' in page

    runner.progress["cf1"] = RunnerStatus(NOW, NOW, error=RunningError(code="CDC:ErrX", message="bad <b>&"))
    mgr.poll_once()
    page = client.get("/dashboard").text
    assert "[CDC:ErrX] bad &lt;b&gt;&amp;" in page and "<b>&" not in page
    mgr.close()


def test_history_keeps_an_hour_and_one_sample_per_ten_seconds() -> None:
    clock = Clock()
    h = LagHistory(clock)
    for i in range(800):  # 4000 s, polled every 5 s
        h.record("cf", tso.compose(int((clock.now - 30) * 1000)), i)
        clock.now += 5
    samples = h.samples("cf")
    assert 355 <= len(samples) <= 361 and all(b.at - a.at >= 10 for a, b in itertools.pairwise(samples))
    assert samples[-1].lag_s == 30.0
    assert abs(h.rows_per_second("cf") - 0.2) < 0.01  # a row per poll, a poll per 5 s
