"""The ``cdc server`` process: metadata store + runner + state machine + Open API on uvicorn."""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import socket
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from sparkcdc.changefeed.runner import ChangefeedRunner, RunnerContext
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.local_file import private_dir
from sparkcdc.masking import mask_uri
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.server.capture_state import EtcdCaptureState
from sparkcdc.server.changefeed import ChangefeedManager
from sparkcdc.server.cluster import EtcdMembership, Membership, SingleNode, request_timeout
from sparkcdc.server.cluster_runner import ClusterRunner
from sparkcdc.server.etcd_client import EtcdClient, parse_endpoints
from sparkcdc.server.etcd_store import EtcdStore
from sparkcdc.server.executor import Executor
from sparkcdc.server.gc import GcPolicy
from sparkcdc.server.placement import EtcdPlacement
from sparkcdc.server.runners import create_runner
from sparkcdc.server.store import ChangefeedStore, MetaStore

log = logging.getLogger(__name__)

LOCK_WAIT_SECONDS = 30.0
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}


@dataclass(frozen=True)
class ServerOptions:
    addr: str = "127.0.0.1:8300"
    data_dir: Path = Path("default.data")
    upstream: str | None = None
    pd: str | None = None
    cluster_id: str = "default"
    session_ttl: int = 10
    spark_master: str = "local[*]"
    log_file: Path | None = None
    log_level: str = "info"
    runner: str = "spark"
    poll_interval: float = 0.5
    tz: str = "System"
    gc: GcPolicy = field(default_factory=GcPolicy)
    relay_segment_bytes: int = 256 << 20
    lock_wait: float = LOCK_WAIT_SECONDS

    def __repr__(self) -> str:
        up = mask_uri(self.upstream) if self.upstream else None
        return f"ServerOptions(addr={self.addr!r}, data_dir={str(self.data_dir)!r}, upstream={up!r})"


def parse_addr(addr: str) -> tuple[str, int]:
    """``host:port`` -> (host, port). Raises ConfigError."""
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"invalid --addr {addr!r}; use host:port such as 127.0.0.1:8300")
    return host.strip("[]"), int(port)


def check_spark_master(master: str) -> None:
    """Spark's own rule for a master URL, checked before anything starts: otherwise the server runs on, with a
    JVM that exited at once and changefeeds that never start. Raises ConfigError."""
    if master != "yarn" and not master.startswith(("local", "spark://", "k8s://")):
        raise ConfigError(f"invalid --spark-master {master!r}: Spark takes local[*], local[N], spark://host:port, "
                          "k8s://... or yarn", code="CDC:ErrInvalidServerOption")  # fmt: skip


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


# Libraries whose INFO lines are per-connection chatter, not lifecycle: py4j logs every closed connection, and
# every failed call with its traceback (chained through each retry: thousands of lines when the JVM went away);
# uvicorn repeats our start and stop lines; mysql-replication prints its settings at each (re)connect; httpx
# logs every request (etcd's, several a second with --pd).
_CHATTY = ("py4j", "uvicorn.error", "pymysqlreplication", "httpx", "httpcore")


def setup_logging(log_file: Path | None, level: str) -> None:
    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[%(asctime)s] [%(levelname)s] [%(name)s] %(message)s"))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(_LEVELS.get(level.lower(), logging.INFO))
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.NOTSET if level.lower() == "debug" else logging.WARNING)


def upstream_id(uri: str | None) -> int:
    """A stable id of the upstream (TiCDC shows the PD cluster id): CRC of host:port, 0 without upstream."""
    if not uri:
        return 0
    target = MysqlTarget.parse(uri, upstream=True)
    return zlib.crc32(f"{target.host}:{target.port}".encode()) | (1 << 40)


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


def lock_data_dir(data_dir: Path, wait: float = LOCK_WAIT_SECONDS) -> int:
    """Hold an exclusive lock on ``<data-dir>/LOCK`` for the process lifetime: one server per data dir.

    Spark's JVM inherits the lock (``RunnerContext.hold_fds``) and outlives a killed server for a moment (until
    it sees its stdin close), so a busy lock is retried for ``wait`` seconds before it is an error."""
    try:
        private_dir(data_dir)  # the metadata store and the changefeeds' specs below hold sink URIs with passwords
        fd = os.open(data_dir / "LOCK", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise ConfigError(f"cannot use --data-dir {data_dir}: {e.strerror or e}") from e
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as e:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise ConfigError(
                    f"--data-dir {data_dir} is used by another cdc server (or by the Spark processes of one that "
                    "was just stopped); stop it or choose another"
                ) from e
            time.sleep(0.1)


class StoppedWhileStarting(BaseException):
    """A stop signal came before any changefeed started: give up starting (BaseException, like
    KeyboardInterrupt, so no ``except Exception`` on the way swallows it)."""


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP of ``cdc server``: the first asks for an orderly stop (``requested`` is set:
    the API stops, running micro-batches commit, Spark stops); another one exits at once, abandoning running
    micro-batches (their files are never indexed; a restart redoes them from the checkpoint, as after kill -9).

    Handlers run in the main thread, so the main thread only waits on ``requested``. Spark's JVM ignores these
    signals (``sparkcdc.pipeline.gateway``): a terminal or service manager signalling the whole process group
    reaches only this process, which decides when Spark stops.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.name = ""
        self.starting = True  # until changefeeds start: a signal abandons the start-up (capture waits up to 60s)

    def install(self) -> None:
        for sig in self.SIGNALS:
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if not self.requested.is_set():
            self.name = name
            self.requested.set()
            if self.starting:
                raise StoppedWhileStarting(name)
            return
        log.warning("received %s while stopping: exiting now; running micro-batches are abandoned and redone "
                    "after a restart", name)  # fmt: skip
        for handler in logging.getLogger().handlers:
            handler.flush()
        os._exit(1)


def _serve(manager: ChangefeedManager, membership: Membership, host: str, port: int, sock: socket.socket,
           stop: StopSignals, scheduler: ClusterRunner | None) -> None:  # fmt: skip
    """Serve the Open API on a thread until a stop signal (uvicorn installs no signal handlers outside the main
    thread, so ours decide). Raises SparkcdcError when the API server ends by itself."""
    import uvicorn

    # imported here, after the runner has started Spark's JVM in the background: FastAPI and the API's models
    # take a second to import, which the JVM's start then overlaps
    from sparkcdc.server.api import create_app

    config = uvicorn.Config(
        create_app(manager, membership, scheduler.executor if scheduler else None, scheduler),
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    api = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="open-api", daemon=True)
    api.start()
    while not stop.requested.wait(0.5):
        if not api.is_alive():
            raise SparkcdcError("the Open API server stopped unexpectedly; see the log above")
    log.info("stopping cdc server (%s): running micro-batches commit first; send it again to exit at once",
             stop.name)  # fmt: skip
    server.should_exit = True
    api.join(10)


def _join(opts: ServerOptions, manager: ChangefeedManager, cluster: EtcdMembership | None) -> Membership:
    """Join the cluster; the manager runs the changefeeds while this server is the owner."""

    def on_owner(owner: bool) -> None:
        if owner:
            manager.start()
        else:
            manager.suspend()

    if cluster is None:
        return SingleNode(opts.addr, on_owner)
    cluster.on_owner = on_owner
    return cluster.start()


def run_server(opts: ServerOptions) -> None:
    """Run until SIGINT, SIGTERM or SIGHUP (``StopSignals``), then stop in order and return. Raises ConfigError
    for bad options (before anything starts), SparkcdcError when the Open API stops by itself."""
    host, port = parse_addr(opts.addr)
    tz = parse_tz(opts.tz)
    check_spark_master(opts.spark_master)
    if opts.upstream:
        MysqlTarget.parse(opts.upstream, upstream=True)  # a bad URI or TLS file: one error line before anything runs
    if opts.pd:
        parse_endpoints(opts.pd)
    if opts.log_file:
        try:
            opts.log_file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"cannot use --log-file {opts.log_file}: {e.strerror or e}") from e
    lock_fd = lock_data_dir(Path(opts.data_dir), opts.lock_wait)
    sock = listen(host, port)
    try:
        setup_logging(opts.log_file, opts.log_level)
    except OSError as e:
        sock.close()
        os.close(lock_fd)
        raise ConfigError(f"cannot write --log-file {opts.log_file}: {e.strerror or e}") from e
    bound = sock.getsockname()
    log.info("starting cdc server pid=%d addr=%s:%s data_dir=%s runner=%s", os.getpid(), bound[0], bound[1],
             opts.data_dir, opts.runner)  # fmt: skip
    store: ChangefeedStore | None = None
    scheduler: ClusterRunner | None = None
    manager: ChangefeedManager | None = None
    membership: Membership | None = None
    etcd: EtcdClient | None = None
    stop = StopSignals()
    stop.install()
    try:
        shared = None
        if opts.pd:
            etcd = EtcdClient(parse_endpoints(opts.pd), timeout=request_timeout(opts.session_ttl))
            cluster = EtcdMembership(etcd, opts.addr, cluster_id=opts.cluster_id, ttl=opts.session_ttl)
            store = EtcdStore(etcd, opts.cluster_id, fence=cluster.fence)
            shared = EtcdCaptureState(etcd, opts.cluster_id, fence=cluster.fence)
        else:
            store = MetaStore(opts.data_dir)
        ctx = RunnerContext(
            data_dir=Path(opts.data_dir),
            upstream_uri=opts.upstream,
            spark_master=opts.spark_master,
            log_level=opts.log_level,
            server_addr=opts.addr,
            tz=tz,
            relay_segment_bytes=opts.relay_segment_bytes,
            hold_fds=(lock_fd,),
            shared_capture=shared,
        )
        runner: ChangefeedRunner = create_runner(opts.runner, ctx)
        if opts.pd:  # the owner places changefeeds on the captures; each runs its share here
            assert etcd is not None
            placement = EtcdPlacement(etcd, opts.cluster_id, cluster.capture_id, lambda: cluster.lease)
            executor = Executor(runner, placement)
            cluster.on_cut_off = executor.stop_all
            runner = scheduler = ClusterRunner(runner, executor, cluster, placement)
        manager = ChangefeedManager(
            store,
            runner,
            addr=opts.addr,
            upstream_id=upstream_id(opts.upstream),
            poll_interval=opts.poll_interval,
            gc=opts.gc,
        )
        stop.starting = False
        if not stop.requested.is_set():
            membership = _join(opts, manager, cluster if opts.pd else None)
            _serve(manager, membership, host, port, sock, stop, scheduler)
    except StoppedWhileStarting:
        log.info("stopping cdc server (%s) while it was starting", stop.name)
    finally:
        if scheduler is not None:  # before the session's lease goes: no other capture may start them meanwhile
            scheduler.executor.stop_all()
        if membership is not None:
            membership.close()
        if manager is not None:
            manager.close()
        if store is not None:
            store.close()
        if etcd is not None:
            etcd.close()
        sock.close()
        os.close(lock_fd)
    log.info("cdc server stopped")
