"""A server process of our own for tests, benchmarks and demos (Kafka broker, etcd), kept under one directory.

The directory holds the pid file, ``instance.json`` (port and pid) and the log. ``start`` adopts a server already
running under the directory, else spawns one on a free port (unless given) in a session of its own, and returns
once it answers; ``stop`` stops it by its pid (SIGTERM, then SIGKILL), also when another process started it;
``pause``/``resume`` freeze and thaw it (SIGSTOP/SIGCONT), which clients see as a dead server that keeps its data.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from sparkcdc.devtools.ports import free_port
from sparkcdc.errors import ConfigError, SparkcdcError

log = logging.getLogger(__name__)

STATE_FILE = "instance.json"


class PrivateServer:
    """Subclasses say what they run (``command``), when it is up (``ready``) and what clients need (``address``)."""

    what = "server"
    marker = b""  # a part of the command line that tells our server from another program with a reused pid
    pid_name = "server.pid"
    log_name = "server.log"

    def __init__(self, directory: str | os.PathLike[str], port: int | None = None) -> None:
        self.dir = Path(directory).resolve()
        self.port = port
        self._proc: subprocess.Popen[bytes] | None = None

    # -- what subclasses define ----------------------------------------------------------------------
    def command(self) -> list[str]:
        raise NotImplementedError

    def ready(self) -> bool:
        raise NotImplementedError

    def address(self) -> dict[str, object]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def state(self) -> dict[str, Any]:
        """What ``instance.json`` keeps besides the pid (read back by ``restore``)."""
        return {"port": self.port}

    def restore(self, state: dict[str, Any]) -> None:
        self.port = int(state["port"])

    # -- lifecycle ------------------------------------------------------------------------------------
    @property
    def pid_file(self) -> Path:
        return self.dir / self.pid_name

    @property
    def log_file(self) -> Path:
        return self.dir / self.log_name

    def start(self, timeout: float = 30.0) -> Self:
        """Start the server (or adopt the one already running under the directory); returns once it answers.
        Raises ConfigError when its program is missing or the port is not usable, SparkcdcError when it does not
        come up (the log's tail is in the message)."""
        self._start(timeout)
        return self

    def _start(self, timeout: float) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.alive_pid() is not None:
            self.restore(json.loads((self.dir / STATE_FILE).read_text()))
            return
        if self.port is None:
            self.port = free_port()
        if not 0 < self.port < 65536:
            raise ConfigError(f"invalid port {self.port}; use 1-65535")
        cmd = self.command()
        out = open(self.log_file, "ab")  # noqa: SIM115 - owned by the child process
        self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.environment(),
                                      cwd=self.dir, start_new_session=True)  # fmt: skip
        out.close()
        self.pid_file.write_text(str(self._proc.pid))
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log_file.read_text(errors="replace")[-800:].strip().replace("\n", " | ")
                self.stop()
                raise SparkcdcError(f"{self.what} under {self.dir} did not start on port {self.port}: {tail}")
            time.sleep(0.02)
        (self.dir / STATE_FILE).write_text(json.dumps({**self.state(), "pid": self._proc.pid}))
        log.info("%s started dir=%s %s", self.what, self.dir, self.address())

    def alive_pid(self) -> int | None:
        """The pid of the running server of this directory, None when none runs."""
        try:
            pid = int(self.pid_file.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        if self.marker not in cmdline or self._exited(pid):
            return None
        return pid

    def status(self) -> dict[str, object]:
        """``{"running": bool, ...address, "pid": ...}`` of the server under the directory."""
        pid = self.alive_pid()
        if pid is None:
            return {"running": False, "dir": str(self.dir)}
        self.restore(json.loads((self.dir / STATE_FILE).read_text()))
        return {"running": self.ready(), **self.address(), "pid": pid}

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): clients time out as with a dead server, but no data is lost."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Undo :meth:`pause` (SIGCONT)."""
        self._signal(signal.SIGCONT)

    def _signal(self, sig: signal.Signals) -> None:
        pid = self.alive_pid()
        if pid is None:
            raise ConfigError(f"no {self.what} runs under {self.dir}")
        os.kill(pid, sig)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server by its pid (SIGTERM, SIGKILL after ``timeout``). Idempotent."""
        pid = self.alive_pid()
        if pid is None and self._proc is not None and self._proc.poll() is None:
            pid = self._proc.pid
        if pid is not None:
            try:
                os.kill(pid, signal.SIGCONT)  # a paused server cannot act on SIGTERM
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pid = None
        deadline = time.monotonic() + timeout
        while pid is not None and not self._exited(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.02)
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            self._proc = None
        self.pid_file.unlink(missing_ok=True)
        log.info("%s stopped dir=%s", self.what, self.dir)

    def _exited(self, pid: int) -> bool:
        if self._proc is not None and self._proc.pid == pid:
            return self._proc.poll() is not None
        try:
            os.kill(pid, 0)
        except OSError:
            return True
        # A zombie we did not spawn cannot be reaped here; treat it as gone.
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
        except (OSError, IndexError):
            return True

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def server_main(argv: list[str] | None, prog: str, doc: str, make: Callable[[str, int | None], PrivateServer]) -> int:
    """``start --dir D [--port N]`` (prints the address as JSON), ``status --dir D`` (exit 1 when not running)
    and ``stop --dir D`` for the server ``make(dir, port)`` builds."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_start = sub.add_parser("start", help="start it on 127.0.0.1")
    p_start.add_argument("--dir", required=True, help="directory holding its data, pid file and log")
    p_start.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
    for name, text in (("status", "print whether it runs under --dir (exit 1 when not)"), ("stop", "stop it")):
        sub.add_parser(name, help=text).add_argument("--dir", required=True, help="directory given to start")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "start":
            server = make(args.dir, args.port).start()
            print(json.dumps({**server.address(), "dir": str(server.dir), "log": str(server.log_file)}))
        elif args.cmd == "status":
            state = make(args.dir, None).status()
            print(json.dumps(state))
            return 0 if state["running"] else 1
        else:
            make(args.dir, None).stop()
    except SparkcdcError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    return 0
