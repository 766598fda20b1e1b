"""Helpers of the e2e tests that replicate into a MySQL downstream: its URI, ``cdc storage-consumer`` into it and
``cdc check`` against it."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from sparkcdc.mysql.target import MysqlTarget
from tests.support import CDC, server_env


def mysql_uri(host: str, port: int, query: str = "") -> str:
    return f"mysql://root@{host}:{port}/{query}"


def check(up: dict[str, Any], target: MysqlTarget, db: str) -> dict[str, Any]:
    """``cdc check --output json`` of every table of ``db`` between the upstream ``up`` and ``target``."""
    res = subprocess.run([CDC, "check", "--source", mysql_uri(up["host"], up["port"]), "--target",
                          mysql_uri(target.host, target.port), "--tables", f"{db}.*", "--output", "json"],
                         capture_output=True, text=True, timeout=300, env=server_env())  # fmt: skip
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def storage_consumer(sink_uri: str, target: MysqlTarget, *args: str) -> subprocess.CompletedProcess[str]:
    """``cdc storage-consumer --once`` of the storage tree ``sink_uri`` into ``target``; ``args`` are extra options."""
    return subprocess.run([CDC, "storage-consumer", "--upstream-uri", sink_uri, "--downstream-uri",
                           mysql_uri(target.host, target.port), "--once", "--log-level", "warn", *args],
                          capture_output=True, text=True, timeout=600, env=server_env())  # fmt: skip
