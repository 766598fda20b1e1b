"""The ``cdc server`` process: metadata store + runner + state machine + Open API on uvicorn."""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import socket
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from sparkcdc.errors import ConfigError
from sparkcdc.server.api import create_app
from sparkcdc.server.changefeed import ChangefeedManager
from sparkcdc.server.gc import GcPolicy
from sparkcdc.server.runner import RunnerContext, create_runner
from sparkcdc.server.sink_check import mask_sink_uri
from sparkcdc.server.store import MetaStore
from sparkcdc.server.upstream import parse_mysql_uri

log = logging.getLogger(__name__)

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}


@dataclass(frozen=True)
class ServerOptions:
    addr: str = "127.0.0.1:8300"
    data_dir: Path = Path("default.data")
    upstream: str | None = None
    spark_master: str = "local[*]"
    log_file: Path | None = None
    log_level: str = "info"
    runner: str = "spark"
    poll_interval: float = 0.5
    tz: str = "System"
    gc: GcPolicy = field(default_factory=GcPolicy)
    relay_segment_bytes: int = 256 << 20

    def __repr__(self) -> str:
        up = mask_sink_uri(self.upstream) if self.upstream else None
        return f"ServerOptions(addr={self.addr!r}, data_dir={str(self.data_dir)!r}, upstream={up!r})"


def parse_addr(addr: str) -> tuple[str, int]:
    """``host:port`` -> (host, port). Raises ConfigError."""
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"invalid --addr {addr!r}; use host:port such as 127.0.0.1:8300")
    return host.strip("[]"), int(port)


def parse_tz(tz: str) -> str | None:
    """TiCDC's ``--tz``: ``System`` (None) or an IANA zone name. Raises ConfigError."""
    if not tz or tz.lower() in ("system", "local"):
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise ConfigError(f"invalid --tz {tz!r}: unknown time zone; use System or a name such as Asia/Shanghai") from e
    return tz


def setup_logging(log_file: Path | None, level: str) -> None:
    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[%(asctime)s] [%(levelname)s] [%(name)s] %(message)s"))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(_LEVELS.get(level.lower(), logging.INFO))


def upstream_id(uri: str | None) -> int:
    """A stable id of the upstream (TiCDC shows the PD cluster id): CRC of host:port, 0 without upstream."""
    if not uri:
        return 0
    args = parse_mysql_uri(uri)
    return zlib.crc32(f"{args['host']}:{args['port']}".encode()) | (1 << 40)


def listen(host: str, port: int) -> socket.socket:
    """Bind the API socket before anything starts, so a busy port is one clear error. Raises ConfigError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}; choose another --addr") from e
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def lock_data_dir(data_dir: Path) -> int:
    """Hold an exclusive lock on ``<data-dir>/LOCK`` for the process lifetime: one server per data dir."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(data_dir / "LOCK", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise ConfigError(f"cannot use --data-dir {data_dir}: {e.strerror or e}") from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        raise ConfigError(f"--data-dir {data_dir} is used by another cdc server; stop it or choose another") from e
    return fd


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)


def run_server(opts: ServerOptions) -> None:
    """Run until SIGINT/SIGTERM. Raises ConfigError for bad options (before anything starts)."""
    import uvicorn

    host, port = parse_addr(opts.addr)
    tz = parse_tz(opts.tz)
    if opts.upstream:
        parse_mysql_uri(opts.upstream)
    if opts.log_file:
        opts.log_file.parent.mkdir(parents=True, exist_ok=True)
    lock_fd = lock_data_dir(Path(opts.data_dir))
    sock = listen(host, port)
    setup_logging(opts.log_file, opts.log_level)
    store = MetaStore(opts.data_dir)
    ctx = RunnerContext(
        data_dir=Path(opts.data_dir),
        upstream_uri=opts.upstream,
        spark_master=opts.spark_master,
        log_level=opts.log_level,
        server_addr=opts.addr,
        tz=tz,
        relay_segment_bytes=opts.relay_segment_bytes,
    )
    runner = create_runner(opts.runner, ctx)
    manager = ChangefeedManager(
        store,
        runner,
        addr=opts.addr,
        upstream_id=upstream_id(opts.upstream),
        poll_interval=opts.poll_interval,
        gc=opts.gc,
    )
    # uvicorn re-raises SIGTERM after its graceful shutdown; turn it into SystemExit so the finally below
    # stops the changefeeds' pipelines instead of the process dying under them.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    bound = sock.getsockname()
    log.info("starting cdc server addr=%s:%s data_dir=%s runner=%s", bound[0], bound[1], opts.data_dir, opts.runner)
    try:
        manager.start()
        config = uvicorn.Config(
            create_app(manager),
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=5,
        )
        server = uvicorn.Server(config)
        server.run(sockets=[sock])
    finally:
        log.info("stopping cdc server")
        manager.close()
        store.close()
        sock.close()
        os.close(lock_fd)
