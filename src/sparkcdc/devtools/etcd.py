"""A private etcd (Debian's ``etcd``, installed by ``scripts/setup.sh``) for ``cdc server --pd``, tests and demos.

One member on 127.0.0.1, client and peer ports free unless given, data under ``--dir``; start returns once
``/health`` answers. ``pause``/``resume`` (SIGSTOP/SIGCONT) make it unreachable for a while without losing data.

    python -m sparkcdc.devtools.etcd start --dir /tmp/e [--port 2379]   # prints {"endpoint": "http://127.0.0.1:N"}
    python -m sparkcdc.devtools.etcd status --dir /tmp/e
    python -m sparkcdc.devtools.etcd stop --dir /tmp/e
"""

from __future__ import annotations

import shutil
import sys
from typing import Any

import httpx

from sparkcdc.devtools.ports import free_port
from sparkcdc.devtools.private_server import PrivateServer, server_main
from sparkcdc.errors import ConfigError


def etcd_binary() -> str:
    path = shutil.which("etcd")
    if path is None:
        raise ConfigError("etcd is not installed; run scripts/setup.sh (Debian package etcd-server)")
    return path


class EtcdServer(PrivateServer):
    what = "etcd"
    marker = b"etcd"
    pid_name = "etcd.pid"
    log_name = "etcd.log"
    peer_port: int | None = None

    @property
    def endpoint(self) -> str:
        """The client URL (``--pd``); raises ConfigError when etcd is not started."""
        if self.port is None:
            raise ConfigError(f"etcd under {self.dir} is not started")
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        self.peer_port = self.peer_port or free_port()
        client, peer = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{self.peer_port}"
        return [etcd_binary(), "--name", "node1", "--data-dir", str(self.dir / "data"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"node1={peer}", "--listen-metrics-urls", "http://127.0.0.1:0"]  # fmt: skip

    def environment(self) -> dict[str, str]:
        return {k: v for k, v in super().environment().items() if not k.startswith("ETCD_")}

    def ready(self) -> bool:
        try:
            return bool(httpx.get(f"{self.endpoint}/health", timeout=1.0).json().get("health") == "true")
        except (httpx.HTTPError, ValueError):
            return False

    def address(self) -> dict[str, object]:
        return {"endpoint": self.endpoint}

    def state(self) -> dict[str, Any]:
        return {"port": self.port, "peer_port": self.peer_port}

    def restore(self, state: dict[str, Any]) -> None:
        self.port, self.peer_port = int(state["port"]), int(state["peer_port"])


def main(argv: list[str] | None = None) -> int:
    return server_main(argv, "python -m sparkcdc.devtools.etcd", __doc__ or "", EtcdServer)


if __name__ == "__main__":
    sys.exit(main())
