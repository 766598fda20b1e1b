"""A Spark standalone cluster on 127.0.0.1 (a master and workers, from the pyspark package's own ``spark-class``:
the pip package has no ``sbin/start-master.sh``) for ``cdc server --spark-master spark://...``, tests and demos.

Each worker has its own work dir, where its executors run (their own processes and working directories).

    python -m sparkcdc.devtools.spark_cluster start --dir /tmp/sc [--workers 2]   # prints {"master": "spark://..."}
    python -m sparkcdc.devtools.spark_cluster stop --dir /tmp/sc
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from sparkcdc.devtools.ports import free_port
from sparkcdc.devtools.private_server import PrivateServer
from sparkcdc.errors import SparkcdcError


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


class _SparkDaemon(PrivateServer):
    """A ``spark-class`` daemon whose log says when it is up."""

    ready_line = ""
    ui_port: int | None = None

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                   SPARK_LOG_DIR=str(self.dir))  # fmt: skip
        return env

    def ready(self) -> bool:
        try:
            return self.ready_line in self.log_file.read_text(errors="replace")
        except OSError:
            return False

    def state(self) -> dict[str, Any]:
        return {"port": self.port, "ui_port": self.ui_port}

    def restore(self, state: dict[str, Any]) -> None:
        self.port, self.ui_port = int(state["port"]), state.get("ui_port")


class SparkMaster(_SparkDaemon):
    what = "Spark master"
    marker = b"org.apache.spark.deploy.master.Master"
    pid_name = "master.pid"
    log_name = "master.log"
    ready_line = "I have been elected leader"

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        self.ui_port = self.ui_port or free_port()
        return [str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master", "--host",
                "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port)]  # fmt: skip

    def address(self) -> dict[str, object]:
        return {"master": self.url}


class SparkWorker(_SparkDaemon):
    what = "Spark worker"
    marker = b"org.apache.spark.deploy.worker.Worker"
    pid_name = "worker.pid"
    log_name = "worker.log"
    ready_line = "Successfully registered with master"

    def __init__(self, directory: Path, master: str, cores: int = 1, memory: str = "2g") -> None:
        super().__init__(directory)
        self.master, self.cores, self.memory = master, cores, memory

    def command(self) -> list[str]:
        self.ui_port = self.ui_port or free_port()
        return [str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", self.master,
                "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port), "--cores",
                str(self.cores), "--memory", self.memory, "--work-dir", str(self.dir / "work")]  # fmt: skip

    def address(self) -> dict[str, object]:
        return {"worker": f"127.0.0.1:{self.port}"}


class SparkCluster:
    """A master and ``workers`` workers under ``directory`` (one subdirectory each)."""

    def __init__(self, directory: str | os.PathLike[str], workers: int = 2, cores: int = 1) -> None:
        self.dir = Path(directory).resolve()
        self.master = SparkMaster(self.dir / "master")
        self.workers = [SparkWorker(self.dir / f"worker{i}", "", cores) for i in range(workers)]

    @property
    def url(self) -> str:
        return self.master.url

    def start(self, timeout: float = 90.0) -> SparkCluster:
        """Start the master, then the workers; returns once every worker registered. Raises SparkcdcError."""
        self.master.start(timeout)
        for w in self.workers:
            w.master = self.master.url
            w.start(timeout)
        return self

    def stop(self) -> None:
        for w in self.workers:
            w.stop()
        self.master.stop()

    def __enter__(self) -> SparkCluster:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkcdc.devtools.spark_cluster",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_start = sub.add_parser("start", help="start a master and workers on 127.0.0.1")
    p_start.add_argument("--dir", required=True, help="directory holding their logs, pid files and work dirs")
    p_start.add_argument("--workers", type=int, default=2, help="number of workers (default 2)")
    p_start.add_argument("--cores", type=int, default=1, help="cores per worker (default 1)")
    sub.add_parser("stop", help="stop the cluster under --dir").add_argument("--dir", required=True)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "start":
            if not 1 <= args.workers <= 16 or not 1 <= args.cores <= 64:
                raise SparkcdcError("--workers must be 1-16 and --cores 1-64")
            cluster = SparkCluster(args.dir, args.workers, args.cores).start()
            print(json.dumps({"master": cluster.url, "dir": str(cluster.dir)}))
        else:
            workers = sorted(p for p in Path(args.dir).glob("worker*") if p.is_dir())
            cluster = SparkCluster(args.dir, len(workers))
            cluster.stop()
    except SparkcdcError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
