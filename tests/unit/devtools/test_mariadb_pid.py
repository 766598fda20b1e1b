"""A pid file a killed MariaDB left behind (``MariaDB._alive_pid``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sparkcdc.devtools.mariadb import MariaDB


def test_a_stale_pid_file_naming_another_process_is_neither_signalled_nor_adopted(tmp_path: Path) -> None:
    """Pids wrap at 32768 here: the pid a killed server's file names may be another program's by now."""
    other = subprocess.Popen(["sleep", "60"])
    try:
        db = MariaDB(tmp_path)
        db.pid_file.write_text(f"{other.pid}\n")
        assert db._alive_pid() is None
        db.stop(timeout=1)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
