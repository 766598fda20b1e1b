"""The quickstart's MariaDB manager CLI starts a private server with a row binlog and stops it."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pymysql
import pytest

from sparkcdc.devtools.mariadb import CDC_PASSWORD

pytestmark = pytest.mark.integration


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sparkcdc.devtools.mariadb", *args], capture_output=True,
                          text=True, timeout=120)


def test_cli_start_and_stop(tmp_path: Path) -> None:
    started = _cli("start", "--dir", str(tmp_path / "m"))
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    try:
        again = _cli("start", "--dir", str(tmp_path / "m"))  # idempotent: reports the running instance
        assert again.returncode == 0 and json.loads(again.stdout)["port"] == info["port"]
        conn = pymysql.connect(host="127.0.0.1", port=info["port"], user=info["user"], password=CDC_PASSWORD)
        with conn.cursor() as cur:
            cur.execute("SELECT @@log_bin, @@binlog_format, @@binlog_row_image, @@binlog_row_metadata, "
                        "@@character_set_server, @@datadir, @@tmpdir")
            log_bin, fmt, image, metadata, charset, datadir, tmpdir = cur.fetchone()
        conn.close()
        assert (log_bin, fmt, image, metadata, charset) == (1, "ROW", "FULL", "FULL", "utf8mb4")
        assert Path(datadir).resolve() == (tmp_path / "m" / "data").resolve()
        assert Path(tmpdir).resolve() == (tmp_path / "m" / "tmp").resolve()
    finally:
        stopped = _cli("stop", "--dir", str(tmp_path / "m"))
    assert stopped.returncode == 0, stopped.stderr
    with pytest.raises(pymysql.err.OperationalError):
        pymysql.connect(host="127.0.0.1", port=info["port"], user="root", connect_timeout=2)


def test_start_leaves_other_instances_temporary_tables_alone(tmp_path: Path) -> None:
    """A starting mariadbd deletes every ``#sql*`` file in its tmpdir: with ``/tmp`` shared, one test worker's
    server start deleted the temporary tables of another worker's ``mariadb-install-db``, which then failed."""
    other = Path(tempfile.gettempdir()) / f"#sql-temptable-sparkcdc-{uuid.uuid4().hex}.MAI"
    other.write_bytes(b"another instance's temporary table")
    try:
        started = _cli("start", "--dir", str(tmp_path / "m"))
        assert started.returncode == 0, started.stderr
        assert other.read_bytes() == b"another instance's temporary table"
    finally:
        _cli("stop", "--dir", str(tmp_path / "m"))
        other.unlink(missing_ok=True)


def test_cli_usage_errors_are_one_line(tmp_path: Path) -> None:
    bad = _cli("start")
    assert bad.returncode == 2 and "--dir" in bad.stderr
