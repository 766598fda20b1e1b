"""The README's first command (``scripts/quickstart.sh``): a private MariaDB, a ``cdc server``, one changefeed to a
local directory, a short mixed workload with a DDL, then the resulting tree and checkpoint. With ``--kafka`` the
changefeed goes to a private Apache Kafka broker (KRaft) instead (one 3-partition topic per table, TiCDC's
``{schema}_{table}`` dispatcher) and the messages of every topic are printed; with ``--mysql`` to a second private
MariaDB (its tables created empty first, as after a snapshot import), and ``cdc check`` compares both. Everything
it starts is stopped before it returns (also on errors and Ctrl-C).

``python -m sparkcdc.devtools.quickstart [OUTPUT_DIR] [--work-dir DIR] [--spark-master local[*]]
[--kafka [--protocol canal-json|simple|simple-avro] | --mysql]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import click

from sparkcdc.changefeed.info import RUNNING
from sparkcdc.devtools.mariadb import CDC_PASSWORD, CDC_USER, MariaDB
from sparkcdc.devtools.ports import free_port
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.model import tso

CDC = str(Path(sys.executable).parent / "cdc")
DB = "quickstart"
CHANGEFEED = "quickstart"


def say(text: str) -> None:
    click.echo(text)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return env


def _prepare_output(out: Path) -> None:
    """The sink directory must be new, empty, or a previous quickstart's output (which is replaced)."""
    if out.exists() and any(out.iterdir()):
        if not (out / "metadata").exists():
            raise ConfigError(f"{out} is not empty and not a previous quickstart output; choose another directory")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


class _Server:
    def __init__(self, work: Path, port: int, master: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = work / "server.log"
        upstream = f"mysql://{CDC_USER}:{CDC_PASSWORD}@127.0.0.1:{port}"
        out = open(work / "server.out", "ab")  # noqa: SIM115 - owned by the child process
        self.proc = subprocess.Popen(
            [CDC, "server", "--addr", f"127.0.0.1:{self.port}", "--data-dir", str(work / "server"), "--upstream",
             upstream, "--spark-master", master, "--log-file", str(self.log), "--status-interval", "0.2"],
            stdout=out, stderr=out, env=_env(), start_new_session=True,
        )  # fmt: skip
        out.close()

    def wait_healthy(self, timeout: float = 240) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SparkcdcError(f"cdc server exited with {self.proc.returncode}; see {self.log}")
            try:
                if httpx.get(self.url + "/api/v2/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise SparkcdcError(f"cdc server did not become healthy in {timeout:.0f}s; see {self.log}")

    def changefeed(self) -> dict[str, Any]:
        import httpx

        r = httpx.get(f"{self.url}/api/v2/changefeeds/{CHANGEFEED}", timeout=10)
        r.raise_for_status()
        doc: dict[str, Any] = r.json()
        return doc

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(90)
            except subprocess.TimeoutExpired:
                pass
        try:  # Spark's JVM and Python workers are in the server's process group
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)


def _sql(conn: Any, *statements: str) -> None:
    with conn.cursor() as cur:
        for s in statements:
            cur.execute(s)


def _now_tso(conn: Any) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS UNSIGNED)")
        return tso.compose(int(cur.fetchone()[0]) + 1)


def _checkpoint(out: Path) -> int:
    try:
        return int(json.loads((out / "metadata").read_bytes())["checkpoint-ts"])
    except (OSError, ValueError, KeyError):
        return 0


def _wait_checkpoint(server: _Server, current: Callable[[], int], target: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        ts = current()
        if ts >= target:
            return ts
        info = server.changefeed()
        if info.get("state") not in RUNNING:
            raise SparkcdcError(f"changefeed is {info.get('state')}: {info.get('error')}; see {server.log}")
        if time.monotonic() > deadline:
            raise SparkcdcError(f"checkpoint {ts} did not reach {target} in {timeout:.0f}s; see {server.log}")
        time.sleep(0.3)


def _workload(conn: Any) -> None:
    _sql(
        conn,
        "INSERT INTO orders VALUES (1, 'alice', 12.50), (2, 'bob', 7.25), (3, 'carol', 99.99)",
        "INSERT INTO customers VALUES (1, 'alice', 'Paris'), (2, 'bob', 'Oslo'), (3, 'carol', 'Lima')",
        "INSERT INTO stock VALUES (100, 'widget', 10), (101, 'gadget', 5)",
        "BEGIN",
        "UPDATE stock SET qty = qty - 1 WHERE sku = 100",
        "INSERT INTO orders VALUES (4, 'alice', 3.00)",
        "COMMIT",
        "UPDATE customers SET city = 'Rome' WHERE id = 2",
        "DELETE FROM orders WHERE id = 2",
        "ALTER TABLE orders ADD COLUMN status VARCHAR(10) NOT NULL DEFAULT 'new'",
        "INSERT INTO orders VALUES (5, 'dave', 42.00, 'paid')",
        "UPDATE orders SET status = 'shipped' WHERE id = 1",
        "DELETE FROM stock WHERE sku = 101",
    )


def _tree(out: Path) -> list[str]:
    lines = []
    for p in sorted(out.rglob("*")):
        if p.is_file():
            lines.append(f"  {p.relative_to(out)}  ({p.stat().st_size} bytes)")
    return lines


# --protocol of the Kafka quickstart -> (sink URI parameters, changefeed TOML)
KAFKA_PROTOCOLS = {
    "canal-json": ("protocol=canal-json&enable-tidb-extension=true", ""),
    "simple": ("protocol=simple", ""),
    "simple-avro": ("protocol=simple", '[sink.kafka-config.codec-config]\nencoding-format = "avro"\n'),
}
_DISPATCH = (
    f'[sink]\ndispatchers = [{{matcher = ["{DB}.*"], topic = "{{schema}}_{{table}}", partition = "index-value"}}]\n'
)


def _show_topics(bootstrap: str, topics: list[str], protocol: str) -> None:
    from sparkcdc.devtools.kafka import read_topic

    for topic in topics:
        partitions = read_topic(bootstrap, topic)
        counts = ", ".join(f"partition {p}: {len(m)}" for p, m in partitions.items())
        say(f"  topic {topic} ({counts} messages)")
        for p, messages in partitions.items():
            for m in messages[:4]:
                avro = protocol == "simple-avro"
                shown = f"<{len(m.value)} bytes of Avro>" if avro else m.value.decode(errors="replace")
                say(f"    [{p}] {shown[:160]}{'...' if len(shown) > 160 else ''}")
            if len(messages) > 4:
                say(f"    [{p}] ... {len(messages) - 4} more")


TABLES = (
    "CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(20), amount DECIMAL(10,2))",
    "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(20), city VARCHAR(20))",
    "CREATE TABLE stock (sku INT PRIMARY KEY, name VARCHAR(20), qty INT)",
)


def _check(up: MariaDB, down: MariaDB) -> int:
    """``cdc check`` of the quickstart's tables between the two servers, printed; its exit code."""
    res = subprocess.run([CDC, "check", "--source", f"mysql://root@127.0.0.1:{up.port}/", "--target",
                          f"mysql://root@127.0.0.1:{down.port}/", "--tables", f"{DB}.*"],
                         capture_output=True, text=True, env=_env(), timeout=300)  # fmt: skip
    for line in (res.stdout + res.stderr).strip().splitlines():
        say("  " + line)
    return res.returncode


def run(out: Path, work: Path, master: str, kafka_protocol: str | None = None, mysql: bool = False) -> int:
    if kafka_protocol is None and not mysql:
        _prepare_output(out)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    db = server = broker = downstream = None
    try:
        say(f"1/5 starting a private MariaDB under {work / 'mariadb'}")
        db = MariaDB(work / "mariadb").start()
        import pymysql  # type: ignore[import-untyped]

        conn = pymysql.connect(**db.connect_kwargs("root", autocommit=True))
        _sql(conn, f"CREATE DATABASE {DB}", f"USE {DB}", *TABLES)
        say(f"2/5 starting cdc server (Spark {master}); its log: {work / 'server.log'}")
        server = _Server(work, db.port or 0, master)
        server.wait_healthy()
        config = work / "changefeed.toml"
        config.write_text(f'[filter]\nrules = ["{DB}.*"]\n')
        sink = f"file://{out}?protocol=canal-json&flush-interval=2s"

        def api_checkpoint() -> int:  # a Kafka or MySQL sink has no metadata file to read
            return int(server.changefeed()["checkpoint_ts"]) if server is not None else 0

        current: Callable[[], int] = partial(_checkpoint, out)
        if kafka_protocol is not None:
            from sparkcdc.devtools.apache_kafka import ApacheKafka

            broker = ApacheKafka(work / "kafka").start(timeout=120)
            say(f"    a private Apache Kafka broker (KRaft) listens on {broker.bootstrap}")
            params, codec = KAFKA_PROTOCOLS[kafka_protocol]
            sink = f"kafka://{broker.bootstrap}/{DB}?{params}&partition-num=3"
            config.write_text(f'[filter]\nrules = ["{DB}.*"]\n\n{_DISPATCH}{codec}')
            current = api_checkpoint

        if mysql:
            downstream = MariaDB(work / "downstream", server_id=2).start()
            say(f"    a second private MariaDB (the downstream) listens on 127.0.0.1:{downstream.port}")
            down = pymysql.connect(**downstream.connect_kwargs("root", autocommit=True))
            _sql(down, f"CREATE DATABASE {DB}", f"USE {DB}", *TABLES)  # as after a snapshot import
            down.close()
            sink = f"mysql://root@127.0.0.1:{downstream.port}/?worker-count=4"
            current = api_checkpoint

        say(f"3/5 cdc cli changefeed create --sink-uri '{sink}' --changefeed-id {CHANGEFEED}")
        created = subprocess.run(
            [CDC, "cli", "changefeed", "create", "--server", server.url, "--sink-uri", sink, "--changefeed-id",
             CHANGEFEED, "--config", str(config)],
            capture_output=True, text=True, env=_env(), timeout=120,
        )  # fmt: skip
        if created.returncode != 0:
            raise SparkcdcError(f"changefeed create failed: {created.stderr.strip() or created.stdout.strip()}")
        say("    " + created.stdout.strip().splitlines()[0])
        start_ts = int(server.changefeed()["checkpoint_ts"])
        _wait_checkpoint(server, current, start_ts + 1, 300)
        say("4/5 running a mixed workload on 3 tables (inserts, updates, deletes, ALTER TABLE ADD COLUMN)")
        _workload(conn)
        target = _now_tso(conn)
        conn.close()
        checkpoint = _wait_checkpoint(server, current, target, 300)
        when = datetime.fromtimestamp(tso.physical(checkpoint) / 1000, UTC).isoformat(timespec="milliseconds")
        if broker is not None and kafka_protocol is not None:
            server.stop()  # a running changefeed keeps sending watermarks: stop it to read the topics to their end
            server = None
            say(f"5/5 checkpoint {checkpoint} ({when}) covers the workload; the topics on {broker.bootstrap}:")
            _show_topics(broker.bootstrap, [f"{DB}_{t}" for t in ("customers", "orders", "stock")] + [DB],
                         kafka_protocol)  # fmt: skip
            return 0
        if downstream is not None:
            say(f"5/5 checkpoint {checkpoint} ({when}) covers the workload; cdc check, upstream against downstream:")
            return _check(db, downstream)
        say(f"5/5 checkpoint {checkpoint} ({when}) covers the workload; the storage sink tree under {out}:")
        for line in _tree(out):
            say(line)
        say(f"metadata: {(out / 'metadata').read_text()}")
        return 0
    finally:
        if server is not None:
            server.stop()
        if broker is not None:
            broker.stop()
        if downstream is not None:
            downstream.stop()
        if db is not None:
            db.stop()
        say("stopped everything the quickstart started")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/quickstart.sh", description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("output", nargs="?", default="quickstart-data", help="sink directory (default ./quickstart-data)")
    ap.add_argument("--work-dir", default=".quickstart", help="MariaDB and server state (default ./.quickstart)")
    ap.add_argument("--spark-master", default="local[*]", help="Spark master for the pipeline (default local[*])")
    ap.add_argument("--kafka", action="store_true", help="replicate to a private Kafka broker instead of files")
    ap.add_argument("--protocol", choices=sorted(KAFKA_PROTOCOLS), default="canal-json",
                    help="Kafka message protocol with --kafka (default canal-json with the TiDB extension)")
    ap.add_argument("--mysql", action="store_true", help="replicate to a second private MariaDB and cdc check it")
    args = ap.parse_args(argv)
    if args.kafka and args.mysql:
        ap.error("choose one of --kafka and --mysql")
    try:
        return run(Path(args.output).resolve(), Path(args.work_dir).resolve(), args.spark_master,
                   args.protocol if args.kafka else None, args.mysql)  # fmt: skip
    except SparkcdcError as e:
        click.echo(f"Error: {e}", err=True)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
