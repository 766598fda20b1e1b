"""A private Confluent-compatible schema registry for the avro protocol's tests, benchmarks and demos.

It runs AxonOps Schema Registry (Go, Apache-2.0; the Confluent REST API that confluent-kafka's
``SchemaRegistryClient``, ``AvroSerializer`` and ``AvroDeserializer`` use, compatibility rules included), which
``scripts/setup.sh`` builds once from the Go module proxy into ``$SPARKCDC_CACHE/schema-registry-<version>/``
(``~/.cache/sparkcdc`` by default); nothing is downloaded here. No Confluent-compatible registry can be had from
Maven Central on these machines (``../shared/ENVIRONMENT.md`` §10.1 says why Apicurio cannot). It listens on
127.0.0.1 only, on a free port unless one is given; its config, pid file, state and log live under ``--dir``.
Schemas are kept in memory (a stopped registry forgets them; ``pause``/``resume`` keep them), or, from Python, in a
MySQL/MariaDB database (``MySQLStorage``) so that a restart keeps every subject and id, as a real registry does.

    python -m sparkcdc.devtools.schema_registry start --dir /tmp/r [--port 8081]   # prints {"url": "http://127.0.0.1:N"}
    python -m sparkcdc.devtools.schema_registry status --dir /tmp/r
    python -m sparkcdc.devtools.schema_registry stop --dir /tmp/r

It answers 30 ms after it is spawned, in about 20 MB of memory (``../shared/ENVIRONMENT.md`` §10.4).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from sparkcdc.devtools.apache_kafka import cache_dir
from sparkcdc.devtools.private_server import PrivateServer, server_main
from sparkcdc.errors import ConfigError

REGISTRY_VERSION: Final = "v0.2.1"  # github.com/axonops/axonops-schema-registry, as scripts/setup.sh builds it
BINARY_NAME: Final = "axonops-schema-registry"


def registry_binary(version: str = REGISTRY_VERSION) -> Path:
    """The registry's executable. Raises ConfigError when setup has not built it."""
    path = cache_dir() / f"schema-registry-{version}" / BINARY_NAME
    if not os.access(path, os.X_OK):
        raise ConfigError(f"the schema registry ({BINARY_NAME} {version}) is not in {path.parent}; run "
                          "scripts/setup.sh (it builds it from the Go module proxy)")  # fmt: skip
    return path


@dataclass(frozen=True, repr=False)
class MySQLStorage:
    """A MySQL/MariaDB database the registry keeps its schemas in (it must exist; the registry creates its
    tables)."""

    host: str
    port: int
    user: str
    password: str
    database: str

    def __repr__(self) -> str:
        return f"MySQLStorage({self.user}@{self.host}:{self.port}/{self.database})"


class SchemaRegistry(PrivateServer):
    """One private registry under ``directory``: in memory, or in ``mysql`` when one is given."""

    what = "schema registry"
    marker = BINARY_NAME.encode()
    pid_name = "registry.pid"
    log_name = "registry.log"

    def __init__(self, directory: str | os.PathLike[str], port: int | None = None,
                 mysql: MySQLStorage | None = None) -> None:  # fmt: skip
        super().__init__(directory, port)
        self.mysql = mysql

    @property
    def url(self) -> str:
        """The registry's base URL (``--schema-registry``); raises ConfigError when it is not started."""
        if self.port is None:
            raise ConfigError(f"the schema registry under {self.dir} is not started")
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        binary = registry_binary()
        config = self.dir / "registry.json"  # YAML is a superset of JSON: the registry reads this as its YAML
        config.write_text(json.dumps(self._config(), indent=2))
        return [str(binary), "-config", str(config)]

    def _config(self) -> dict[str, object]:
        storage: dict[str, object] = {"type": "memory"}
        if self.mysql is not None:
            m = self.mysql
            # the password goes in the environment: the registry expands $VARS in its config file
            storage = {"type": "mysql", "mysql": {"host": m.host, "port": m.port, "user": m.user,
                                                  "database": m.database, "tls": "false"}}  # fmt: skip
        return {
            "server": {"host": "127.0.0.1", "port": self.port},
            "storage": storage,
            "compatibility": {"default_level": "BACKWARD"},  # Confluent's default
        }  # it logs every request (JSON, level info) to stdout whatever its config's logging says

    def environment(self) -> dict[str, str]:
        # its SCHEMA_REGISTRY_* variables override the config file: a user's must not reach a private registry
        env = {k: v for k, v in super().environment().items() if not k.startswith(("SCHEMA_REGISTRY_", "VAULT_",
                                                                                   "BAO_"))}  # fmt: skip
        if self.mysql is not None:
            env["SCHEMA_REGISTRY_MYSQL_PASSWORD"] = self.mysql.password
        return env

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/subjects", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def address(self) -> dict[str, object]:
        return {"url": self.url}


def main(argv: list[str] | None = None) -> int:
    return server_main(argv, "python -m sparkcdc.devtools.schema_registry", __doc__ or "", SchemaRegistry)


if __name__ == "__main__":
    sys.exit(main())
