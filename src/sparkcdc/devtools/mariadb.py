"""A private MariaDB instance with a row-based binlog, for tests, benchmarks and the quickstart.

It never touches the system service: every file lives under ``--dir`` and both ``mariadb-install-db``
and ``mariadbd`` run with ``--no-defaults`` (otherwise /etc/mysql/my.cnf redirects them to
/var/lib/mysql). The server listens on 127.0.0.1 only, on a free port unless one is given.

    python -m sparkcdc.devtools.mariadb start --dir /tmp/m [--port 3307]
    python -m sparkcdc.devtools.mariadb stop --dir /tmp/m

Python API: ``MariaDB(dir, port=None).start()`` / ``.stop()``, or use it as a context manager.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from sparkcdc.devtools.ports import free_port
from sparkcdc.errors import ConfigError, UpstreamError

log = logging.getLogger(__name__)

CDC_USER = "cdc"
CDC_PASSWORD = "cdcpw"
_STATE_FILE = "instance.json"


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
        if found:
            return found
    raise ConfigError(f"{names[0]} not found; install it with: apt-get install -y mariadb-server mariadb-client")


def ensure_installed() -> None:
    """Install mariadb-server/client from apt when missing (waits for a concurrent apt's lock)."""
    if shutil.which("mariadb-install-db") and Path("/usr/sbin/mariadbd").exists():
        return
    log.info("installing mariadb-server and mariadb-client from apt")
    cmd = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "mariadb-server", "mariadb-client"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    if proc.returncode != 0:
        raise ConfigError(f"apt-get install mariadb-server failed: {proc.stderr.strip().splitlines()[-1:]}")


@dataclass(frozen=True)
class Connection:
    """Where the instance listens. ``password`` is never part of the repr."""

    host: str
    port: int
    user: str
    socket: str

    def __repr__(self) -> str:
        return f"Connection(host={self.host!r}, port={self.port}, user={self.user!r})"


class MariaDB:
    """One private server under ``directory`` (data dir, socket, pid file, error log)."""

    def __init__(self, directory: str | os.PathLike[str], port: int | None = None, server_id: int = 1,
                 tls: tuple[str, str, str] | None = None) -> None:  # fmt: skip
        """``tls``: (CA, certificate, key) PEM files; the server then offers TLS (a user may REQUIRE SSL)."""
        self.dir = Path(directory).resolve()
        self.port = port
        self.server_id = server_id
        self.tls = tls
        self._proc: subprocess.Popen[bytes] | None = None

    # -- paths -----------------------------------------------------------------------------------
    @property
    def datadir(self) -> Path:
        return self.dir / "data"

    @property
    def tmpdir(self) -> Path:
        """The instance's own temporary directory: a starting mariadbd deletes every ``#sql*`` file in its
        tmpdir, so instances sharing ``/tmp`` delete each other's temporary tables (an install running
        beside another instance's start fails with "Error on delete of '/tmp/#sql-temptable-...'")."""
        return self.dir / "tmp"

    @property
    def socket_path(self) -> Path:
        return self.dir / "mysqld.sock"

    @property
    def pid_file(self) -> Path:
        return self.dir / "mysqld.pid"

    @property
    def error_log(self) -> Path:
        return self.dir / "error.log"

    def connection(self, user: str = "root") -> Connection:
        if self.port is None:
            raise ConfigError(f"MariaDB under {self.dir} is not started")
        return Connection("127.0.0.1", self.port, user, str(self.socket_path))

    def connect_kwargs(self, user: str = "root", **extra: Any) -> dict[str, Any]:
        """pymysql.connect keyword arguments (root has no password; the cdc user has CDC_PASSWORD)."""
        if self.port is None:
            raise ConfigError(f"MariaDB under {self.dir} is not started")
        pw = CDC_PASSWORD if user == CDC_USER else ""
        return {"host": "127.0.0.1", "port": self.port, "user": user, "password": pw, "charset": "utf8mb4", **extra}

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> MariaDB:
        """Initialise the data dir if needed and start the server; returns when it answers a ping.

        Raises UpstreamError when the server does not come up (the error log's tail is in the message).
        """
        ensure_installed()
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        if self._alive_pid() is not None:
            state = json.loads((self.dir / _STATE_FILE).read_text())
            self.port = int(state["port"])
            return self
        if not (self.datadir / "mysql").exists():
            cmd = [
                _binary("mariadb-install-db"),
                "--no-defaults",
                f"--datadir={self.datadir}",
                f"--tmpdir={self.tmpdir}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise UpstreamError(f"mariadb-install-db failed in {self.datadir}: {proc.stderr.strip()[-500:]}")
        if self.port is None:
            self.port = free_port()
        cmd = [
            _binary("mariadbd"),
            "--no-defaults",
            "--user=root",
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={self.socket_path}",
            f"--pid-file={self.pid_file}",
            f"--log-error={self.error_log}",
            f"--log-bin={self.datadir / 'mysql-bin'}",
            "--binlog-format=ROW",
            "--binlog-row-image=FULL",
            "--binlog-row-metadata=FULL",
            f"--server-id={self.server_id}",
            "--gtid-strict-mode=ON",
            "--local-infile=1",
            "--max-allowed-packet=256M",
            "--innodb-buffer-pool-size=256M",
            "--innodb-flush-log-at-trx-commit=2",
            "--sync-binlog=0",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_general_ci",
            "--skip-name-resolve",
            "--explicit-defaults-for-timestamp=ON",
        ]
        if self.tls:
            cmd += [f"--ssl-ca={self.tls[0]}", f"--ssl-cert={self.tls[1]}", f"--ssl-key={self.tls[2]}"]
        out = open(self.dir / "mariadbd.out", "ab")  # noqa: SIM115 - owned by the child process
        self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        deadline = time.monotonic() + timeout
        while not self._ping():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                tail = self.error_log.read_text(errors="replace")[-800:] if self.error_log.exists() else ""
                self.stop()
                raise UpstreamError(f"MariaDB under {self.dir} did not start on port {self.port}: {tail}")
            time.sleep(0.05)
        (self.dir / _STATE_FILE).write_text(json.dumps({"port": self.port, "pid": self._proc.pid}))
        self._create_cdc_user()
        log.info("MariaDB started dir=%s port=%d", self.dir, self.port)
        return self

    def _ping(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1)
                s.connect(str(self.socket_path))
                return bool(s.recv(1))
        except OSError:
            return False

    def _create_cdc_user(self) -> None:
        import pymysql  # type: ignore[import-untyped]

        conn = pymysql.connect(unix_socket=str(self.socket_path), user="root", password="")
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE USER IF NOT EXISTS '{CDC_USER}'@'%' IDENTIFIED BY '{CDC_PASSWORD}'")
                cur.execute(
                    f"GRANT SELECT, RELOAD, REPLICATION SLAVE, BINLOG MONITOR, REPLICATION MASTER ADMIN "
                    f"ON *.* TO '{CDC_USER}'@'%'"
                )
        finally:
            conn.close()

    def _alive_pid(self) -> int | None:
        """The pid of the mariadbd of this directory, None when none runs. A pid file a killed server left names a
        pid the kernel may since have given another process (pids wrap at 32768 on these machines): that one is
        neither adopted nor signalled."""
        try:
            pid = int(self.pid_file.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        if f"--pid-file={self.pid_file}".encode() not in cmdline:
            return None
        return pid

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the server (SIGTERM = clean shutdown; SIGKILL after ``timeout``). Idempotent."""
        pid = self._alive_pid()
        if pid is None and self._proc is not None and self._proc.poll() is None:
            pid = self._proc.pid
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pid = None
        deadline = time.monotonic() + timeout
        while pid is not None and time.monotonic() < deadline:
            if self._proc is not None and self._proc.pid == pid:
                if self._proc.poll() is not None:
                    break
            else:
                try:
                    os.kill(pid, 0)
                except OSError:
                    break
            time.sleep(0.05)
        else:
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            self._proc = None
        log.info("MariaDB stopped dir=%s", self.dir)

    def __enter__(self) -> MariaDB:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkcdc.devtools.mariadb", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_start = sub.add_parser("start", help="start a private MariaDB (initialises the data dir if needed)")
    p_start.add_argument("--dir", required=True, help="directory holding the data dir, socket and logs")
    p_start.add_argument("--port", type=int, default=None, help="TCP port on 127.0.0.1 (default: a free one)")
    p_stop = sub.add_parser("stop", help="stop the private MariaDB under --dir")
    p_stop.add_argument("--dir", required=True, help="directory given to start")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "start":
            db = MariaDB(args.dir, args.port).start()
            print(json.dumps({"host": "127.0.0.1", "port": db.port, "user": CDC_USER, "socket": str(db.socket_path)}))
        else:
            MariaDB(args.dir).stop()
    except (ConfigError, UpstreamError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
