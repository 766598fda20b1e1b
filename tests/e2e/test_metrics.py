"""``GET /metrics`` and ``/dashboard`` of a real `cdc server` (Spark runner) replicating a workload to storage:
every metric of issue 16 is there, the checkpoint lag falls once the changefeed catches up, and the sink's row
counter equals the row changes in the files it wrote; headless Chromium loads the status page, which shows the
changefeed, its lag chart and the capture, and its screenshot has the chart drawn."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from PIL import Image
from prometheus_client.parser import text_string_to_metric_families

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.server.lag_history import SAMPLE_S as LAG_SAMPLE_S
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.server import CheckpointWatch, SparkServer, Workload, now_tso
from tests.support import wait_for

pytestmark = pytest.mark.e2e

Scrape = dict[str, dict[tuple[tuple[str, str], ...], float]]
LINE_RGB = (0x2F, 0x6F, 0xDF)  # the lag chart's stroke (sparkcdc.server.dashboard)
LABELS = (("changefeed", "metered"), ("namespace", "default"))


def scrape(server: SparkServer) -> Scrape:
    r = httpx.get(server.url + "/metrics", timeout=10)
    assert r.status_code == 200, r.text
    out: Scrape = {}
    for family in text_string_to_metric_families(r.text):
        out.setdefault(family.name, {})
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def dml_messages(sink: Path) -> int:
    n = 0
    for f in sink.rglob("CDC*.json"):
        n += sum(1 for line in f.read_text().splitlines() if line.strip() and not json.loads(line)["isDdl"])
    return n


def test_metrics_and_status_page_follow_a_changefeed(fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path) -> None:
    db = fresh_db
    work = Workload(db, tables=2, ddl_every=40)
    work.create()
    sink = tmp_path / "sink"
    sink_uri = f"file://{sink}?protocol=canal-json&flush-interval=2s"
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    try:
        start = max(now_tso(db), relay_start(server))  # the server's capture starts with it
        time.sleep(1.1)  # commit-ts come from whole binlog seconds: the workload's are after start
        for i in range(120):  # before the changefeed exists: it starts behind
            work.step(i)
        end = now_tso(db)
        time.sleep(10)  # the changefeed starts 10 s behind
        r = server.cli("create", "-c", "metered", "--sink-uri", sink_uri, "--start-ts", str(start))
        assert r.returncode == 0, r.stderr
        behind = scrape(server)
        CheckpointWatch(ExternalStorage.from_uri(sink_uri)).wait(end, 240)
        server.changefeed("metered")  # one more status poll after the checkpoint moved
        caught_up = scrape(server)
        for _ in range(20):  # the manager polls the runner twice a second: let it see the last batch
            if caught_up["ticdc_sink_dml_event_count"].get(LABELS) == dml_messages(sink):
                break
            caught_up = scrape(server)
        # two lag samples (one per SAMPLE_S): the chart has a line
        wait_for(lambda: len(chart_points(httpx.get(server.url + "/dashboard", timeout=10).text)) >= 2,
                 LAG_SAMPLE_S + 30, "a second lag sample", 0.5)  # fmt: skip
        dom = chromium("--dump-dom", server.url + "/dashboard")
        shot = tmp_path / "dashboard.png"
        chromium("--window-size=1200,900", f"--screenshot={shot}", server.url + "/dashboard")
    finally:
        server.stop()
    for name in ("ticdc_owner_checkpoint_ts", "ticdc_owner_checkpoint_ts_lag", "ticdc_owner_resolved_ts",
                 "ticdc_owner_resolved_ts_lag", "ticdc_owner_status", "ticdc_sink_dml_event_count",
                 "ticdc_sink_write_bytes_total", "sparkcdc_sink_flush_duration_seconds_count",
                 "sparkcdc_changefeed_batch_duration_seconds_count", "sparkcdc_relay_resolved_ts_lag",
                 "sparkcdc_relay_log_bytes", "sparkcdc_changefeed_errors", "sparkcdc_changefeed_warnings"):  # fmt: skip
        assert name in caught_up, name
    assert caught_up["ticdc_owner_status"][LABELS] == 0  # normal
    lag_before = behind["ticdc_owner_checkpoint_ts_lag"][LABELS]
    lag_after = caught_up["ticdc_owner_checkpoint_ts_lag"][LABELS]
    assert lag_after < lag_before, (lag_before, lag_after)
    assert caught_up["ticdc_owner_checkpoint_ts"][LABELS] >= end >> 18
    assert caught_up["ticdc_owner_resolved_ts"][LABELS] >= caught_up["ticdc_owner_checkpoint_ts"][LABELS]
    assert caught_up["ticdc_sink_dml_event_count"][LABELS] == dml_messages(sink) > 0
    assert caught_up["ticdc_sink_write_bytes_total"][LABELS] > 0
    assert caught_up["sparkcdc_sink_flush_duration_seconds_count"][LABELS] >= 1
    assert caught_up["sparkcdc_changefeed_batch_duration_seconds_sum"][LABELS] > 0
    assert caught_up["sparkcdc_relay_log_bytes"][()] > 0
    assert 0 <= caught_up["sparkcdc_relay_resolved_ts_lag"][()] < 30
    assert not caught_up.get("sparkcdc_changefeed_errors_total")  # declared, nothing counted

    # the status page, as a browser renders it
    row = re.search(r'<tr data-changefeed="default/metered">(.*?)</tr>', dom, re.S)
    assert row is not None, dom[:2000]
    assert '<td class="state normal">normal</td>' in row.group(1)
    assert re.search(r'<td class="num lag">[0-9.]+s</td>', row.group(1)), row.group(1)
    assert len(chart_points(dom)) >= 2, dom[:3000]
    assert re.search(r'<table id="captures">.*<td>owner</td>', dom, re.S)
    with Image.open(shot) as img:
        assert img.size == (1200, 900)
        rgb = img.convert("RGB").tobytes()
    line = bytes(LINE_RGB)
    blue = sum(1 for i in range(0, len(rgb), 3) if rgb[i : i + 3] == line)
    assert blue > 50, blue  # the lag line is drawn


def chart_points(dom: str) -> list[str]:
    """The points of the changefeed's lag chart on the status page."""
    chart = re.search(r'<figure data-changefeed="default/metered">.*?<polyline[^>]*points="([^"]+)"', dom, re.S)
    return chart.group(1).split() if chart else []


def relay_start(server: SparkServer) -> int:
    marker = server.data_dir / "capture" / "bootstrap_ts"
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline, "the server's capture did not start"
        time.sleep(0.2)
    return int(marker.read_text()) + 1


def chromium(*args: str) -> str:
    r = subprocess.run(["chromium-headless-shell", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout
