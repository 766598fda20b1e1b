"""End to end: upstream workload -> storage tree (file:// and s3:// on moto) -> `cdc storage-consumer` ->
MariaDB downstream -> `cdc check` reports zero difference; also under repeated kill -9 of the consumer."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.storage.external import ExternalStorage
from tests.fixtures.object_stores import backend_uri
from tests.integration.consumer import workload
from tests.integration.consumer.servers import run_sql
from tests.support import CDC

pytestmark = [pytest.mark.e2e, pytest.mark.integration]



def _uri(t: MysqlTarget) -> str:
    return f"mysql://root@{t.host}:{t.port}/"


def _cdc(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CDC, *args], capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": "src"}, **kw
    )


@pytest.fixture()
def clean(source: MysqlTarget, target: MysqlTarget) -> None:
    for t in (source, target):
        run_sql(t, f"DROP DATABASE IF EXISTS {workload.DB}", "DROP DATABASE IF EXISTS sparkcdc_consumer")


def _check(source: MysqlTarget, target: MysqlTarget) -> dict[str, Any]:
    res = _cdc("check", "--source", _uri(source), "--target", _uri(target), "--tables", f"{workload.DB}.*",
               "--output", "json")  # fmt: skip
    doc: dict[str, Any] = json.loads(res.stdout)
    doc["rc"] = res.returncode
    return doc


@pytest.mark.parametrize(("backend", "protocol"), [("file", "csv"), ("s3", "canal-json")])
def test_storage_consumer_then_check_zero_difference(
    backend: str, protocol: str, request: pytest.FixtureRequest, clean: None, source: MysqlTarget,
    target: MysqlTarget,
) -> None:  # fmt: skip
    root = backend_uri(backend, request, "cdc-e2e")
    storage = ExternalStorage.from_uri(root)
    w = workload.run(source, storage, protocol, txns=200)
    sep = "&" if "?" in root else "?"
    upstream = f"{root}{sep}protocol={protocol}"
    cfg = request.getfixturevalue("tmp_path") / "cf.toml"
    cfg.write_text('[sink]\ndate-separator = "day"\n[sink.csv]\ninclude-commit-ts = true\n')
    res = _cdc("storage-consumer", "--upstream-uri", upstream, "--downstream-uri", _uri(target), "--once",
               "--config", str(cfg), "--log-level", "warn")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "replayed-skipped=" in res.stderr
    doc = _check(source, target)
    tables = {t["table"]: t for t in doc["tables"]}
    assert set(tables) == {"t0r", "t1", "t2", "p"}
    assert doc["rc"] == 0 and doc["match"], doc
    assert sum(t["source_rows"] for t in tables.values()) > 50
    assert w.rows_written > 300
    # the check really compares: one changed cell downstream is reported and fails the command
    run_sql(target, f"UPDATE {workload.DB}.t1 SET v = CONCAT(IFNULL(v, ''), '!') ORDER BY id LIMIT 1")
    doc = _check(source, target)
    assert doc["rc"] == 1 and [t["table"] for t in doc["tables"] if not t["match"]] == ["t1"]


def _progress(t: MysqlTarget) -> int:
    try:
        rows = run_sql(t, "SELECT COALESCE(SUM(file_index * 100000 + row_offset), 0) FROM sparkcdc_consumer.checkpoint")
    except Exception:
        return 0
    return int(rows[0][0])


def test_kill_minus_9_at_random_moments_then_check(
    tmp_path: Path,
    clean: None,
    source: MysqlTarget,
    target: MysqlTarget,
) -> None:
    storage = ExternalStorage.from_uri(f"file://{tmp_path / 'tree'}")
    workload.run(source, storage, "csv", txns=1500, seed=11, width=6)
    upstream = f"file://{tmp_path / 'tree'}?protocol=csv"
    cfg = tmp_path / "cf.toml"
    cfg.write_text('[sink]\ndate-separator = "day"\n[sink.csv]\ninclude-commit-ts = true\n')
    args = [CDC, "storage-consumer", "--upstream-uri", upstream, "--downstream-uri", _uri(target), "--once",
            "--config", str(cfg), "--batch-rows", "7", "--workers", "2", "--quiet", "--log-level", "error"]  # fmt: skip
    rng = random.Random(5)
    kills = 0
    for _ in range(12):
        before = _progress(target)
        proc = subprocess.Popen(args, env={**os.environ, "PYTHONPATH": "src"}, stderr=subprocess.PIPE)
        goal = before + rng.randint(1, 400)
        deadline = time.monotonic() + 120
        while proc.poll() is None and _progress(target) < goal and time.monotonic() < deadline:
            time.sleep(0.01)  # bounded polling of the downstream checkpoint
        if proc.poll() is not None:
            assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
            break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()
        kills += 1
    assert kills >= 5
    res = subprocess.run(args, env={**os.environ, "PYTHONPATH": "src"}, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    doc = _check(source, target)
    assert doc["rc"] == 0 and doc["match"], doc


def test_storage_consumer_serves_metrics(request: pytest.FixtureRequest, clean: None, source: MysqlTarget,
                                         target: MysqlTarget, tmp_path: Path) -> None:  # fmt: skip
    """``--metrics-addr``: while the consumer runs, /metrics counts the rows it applied (the same figure as its
    final progress line) and gives the applied commit-ts; a malformed address is one clear error."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    from tests.support import free_port

    root = backend_uri("file", request, "cdc-metrics")
    workload.run(source, ExternalStorage.from_uri(root), "csv", txns=80)
    cfg = tmp_path / "cf.toml"
    cfg.write_text('[sink]\ndate-separator = "day"\n[sink.csv]\ninclude-commit-ts = true\n')
    port = free_port()
    args = [CDC, "storage-consumer", "--upstream-uri", f"{root}?protocol=csv", "--downstream-uri", _uri(target),
            "--config", str(cfg), "--interval", "1", "--changefeed", "metered", "--metrics-addr", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(args, env={**os.environ, "PYTHONPATH": "src"}, stderr=subprocess.PIPE, text=True)
    samples: dict[str, float] = {}
    try:
        deadline = time.monotonic() + 120
        while True:
            assert time.monotonic() < deadline, samples
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
            except httpx.HTTPError:
                time.sleep(0.2)
                continue
            now = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples
                   if s.labels.get("changefeed") == "metered"}  # fmt: skip
            moving = {k: v for k, v in now.items() if not k.endswith("_lag")}  # the lag follows the clock
            if now.get("sparkcdc_consumer_rows_applied_total", 0) > 0 and moving == {
                    k: v for k, v in samples.items() if not k.endswith("_lag")}:
                samples = now
                break  # applied and unchanged since the last scrape: the round is over
            samples = now
            time.sleep(1.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    final = [line for line in err.splitlines() if line.startswith("rows=")][-1]
    assert samples["sparkcdc_consumer_rows_applied_total"] == int(final.split()[0].removeprefix("rows=")) > 0
    assert samples["sparkcdc_consumer_applied_ts"] > 1_600_000_000_000  # Unix ms
    assert samples["sparkcdc_consumer_applied_ts_lag"] >= 0
    assert samples["sparkcdc_consumer_ddls_executed_total"] >= 1  # the tables' CREATE
    bad = _cdc("storage-consumer", "--upstream-uri", f"{root}?protocol=csv", "--downstream-uri", _uri(target),
               "--metrics-addr", "localhost", "--once")  # fmt: skip
    assert bad.returncode == 1 and bad.stderr.strip().splitlines()[-1].startswith("Error: [")
    assert "--metrics-addr 'localhost' must be host:port" in bad.stderr
