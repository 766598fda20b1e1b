"""``GET /metrics`` of a real `cdc server` (Spark runner) replicating a workload to storage: every metric of issue 16
is there, the checkpoint lag falls once the changefeed catches up, and the sink's row counter equals the row
changes in the files it wrote."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from sparkcdc.devtools.mariadb import MariaDB
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.server import CheckpointWatch, SparkServer, Workload, now_tso

pytestmark = pytest.mark.e2e

Scrape = dict[str, dict[tuple[tuple[str, str], ...], float]]
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


def test_metrics_follow_a_changefeed(fresh_db: FreshDatabase, mariadb: MariaDB, tmp_path: Path) -> None:
    db = fresh_db
    work = Workload(db, tables=2, ddl_every=40)
    work.create()
    start = now_tso(db)
    for i in range(120):  # before the changefeed exists: it starts behind
        work.step(i)
    end = now_tso(db)
    sink = tmp_path / "sink"
    sink_uri = f"file://{sink}?protocol=canal-json"
    server = SparkServer(tmp_path, mariadb.port or 0).start()
    try:
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
