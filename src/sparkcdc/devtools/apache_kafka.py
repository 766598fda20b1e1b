"""A private Apache Kafka broker (4.x, KRaft, one node that is broker and controller) for tests, benchmarks and demos.

The jars come from Maven Central, fetched once by ``scripts/setup.sh`` into ``$SPARKCDC_CACHE/kafka-<version>/libs``
(``~/.cache/sparkcdc`` by default); nothing is downloaded here. Everything else lives under ``--dir``: the
``server.properties`` written on first start, the formatted log dirs (``data/``, kept across restarts: a stopped
broker keeps its topics), pid file, state and log. It listens on 127.0.0.1 only: the broker on a free port unless one
is given, the controller on a second free port. Start returns once the broker answers a Kafka ApiVersions request.

    python -m sparkcdc.devtools.apache_kafka start --dir /tmp/k [--port 9092]   # prints {"bootstrap": "127.0.0.1:N"}
    python -m sparkcdc.devtools.apache_kafka status --dir /tmp/k
    python -m sparkcdc.devtools.apache_kafka stop --dir /tmp/k

Figures on the 2-core machine (``../shared/ENVIRONMENT.md`` §10): the first start formats the log dirs (2.8 s) and
answers after 6.5 s more; RSS about 340 MB. The JVM runs with C1 only and the serial GC (faster start, less memory);
``SPARKCDC_KAFKA_JAVA_OPTS`` replaces those options.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

from sparkcdc.devtools.kafka import kafka_ping
from sparkcdc.devtools.ports import free_port
from sparkcdc.devtools.private_server import STATE_FILE, PrivateServer, server_main
from sparkcdc.errors import ConfigError, SparkcdcError

KAFKA_VERSION: Final = "4.4.0"
_JAVA_OPTS: Final = "-Xms128m -Xmx512m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_LOG4J: Final = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = OUT
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = info
"""


def cache_dir() -> Path:
    """Where ``scripts/setup.sh`` puts what it fetches from Maven Central."""
    return Path(os.environ.get("SPARKCDC_CACHE") or Path.home() / ".cache" / "sparkcdc")


def kafka_libs(version: str = KAFKA_VERSION) -> Path:
    """The directory of Apache Kafka's jars. Raises ConfigError when setup has not fetched them."""
    libs = cache_dir() / f"kafka-{version}" / "libs"
    if not (libs / f"kafka_2.13-{version}.jar").is_file():
        raise ConfigError(f"Apache Kafka {version} jars are not in {libs}; run scripts/setup.sh (it fetches them from "
                          "Maven Central)")  # fmt: skip
    return libs


def format_args(seed: bytes, props: Path) -> list[str]:
    """``kafka-storage format`` with a cluster id made of ``seed`` (16 bytes, base64url as Kafka's ``random-uuid``).
    The id is given as ``--cluster-id=<id>``: one in 64 begins with ``-``, which as a separate argument reads as an
    option (the format then fails)."""
    cluster_id = base64.urlsafe_b64encode(seed).decode().rstrip("=")
    return ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", f"--config={props}"]


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise ConfigError("java is not installed; run scripts/setup.sh (Apache Kafka 4 needs Java 17 or newer)")
    return java


class ApacheKafka(PrivateServer):
    """One private single-node KRaft cluster under ``directory``."""

    what = "Apache Kafka broker"
    marker = b"kafka.Kafka"
    pid_name = "kafka.pid"
    log_name = "kafka.log"

    def __init__(self, directory: str | os.PathLike[str], port: int | None = None) -> None:
        super().__init__(directory, port)
        self.controller_port: int | None = None

    @property
    def bootstrap(self) -> str:
        """``bootstrap.servers`` for clients; raises ConfigError when the broker is not started."""
        if self.port is None:
            raise ConfigError(f"Apache Kafka broker under {self.dir} is not started")
        return f"127.0.0.1:{self.port}"

    def state(self) -> dict[str, Any]:
        return {"port": self.port, "controller_port": self.controller_port}

    def restore(self, state: dict[str, Any]) -> None:
        self.port = int(state["port"])
        self.controller_port = int(state["controller_port"])

    def command(self) -> list[str]:
        libs = kafka_libs()
        java = _java()
        if self.controller_port is None:  # a restart keeps the controller's port (the quorum's address)
            self.controller_port = self._last_controller_port() or free_port()
        props = self.dir / "server.properties"
        props.write_text(self._properties())
        (self.dir / "log4j2.properties").write_text(_LOG4J)
        if not (self.dir / "data" / "meta.properties").exists():
            self._format(java, libs, props)
        opts = os.environ.get("SPARKCDC_KAFKA_JAVA_OPTS", _JAVA_OPTS).split()
        return [java, *opts, f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
                "-cp", f"{libs}/*", "kafka.Kafka", str(props)]  # fmt: skip

    def _last_controller_port(self) -> int | None:
        try:
            return int(json.loads((self.dir / STATE_FILE).read_text())["controller_port"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _properties(self) -> str:
        port, controller = self.port, self.controller_port
        return "\n".join([
            "process.roles=broker,controller", "node.id=1", f"controller.quorum.voters=1@127.0.0.1:{controller}",
            f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}", "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            f"log.dirs={self.dir / 'data'}",
            # one node: every internal topic has one replica
            "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1", "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1", "group.initial.rebalance.delay.ms=0", "num.partitions=1",
            # a group coordinator at once: the offsets topic is made on the first group's first request (50
            # partitions by default, seconds on a busy machine, and a consumer's first offset lookup waited on it)
            "offsets.topic.num.partitions=1",
            "",
        ])  # fmt: skip

    def _format(self, java: str, libs: Path, props: Path) -> None:
        """``kafka-storage format`` once per directory, with a fresh cluster id."""
        done = subprocess.run([java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{libs}/*",
                               *format_args(os.urandom(16), props)],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().replace("\n", " | ")[-800:]
            raise SparkcdcError(f"formatting the Kafka log dirs under {self.dir} failed: {tail}")

    def ready(self) -> bool:
        assert self.port is not None
        return kafka_ping("127.0.0.1", self.port)

    def address(self) -> dict[str, object]:
        return {"bootstrap": self.bootstrap}


def main(argv: list[str] | None = None) -> int:
    return server_main(argv, "python -m sparkcdc.devtools.apache_kafka", __doc__ or "", ApacheKafka)


if __name__ == "__main__":
    sys.exit(main())
