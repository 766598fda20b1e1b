"""Storage writer throughput on local files and on S3 (a private moto server), as a ratio to a plain
sequential write of the same bytes in the same run.

    .venv/bin/python benchmarks/storage_writer.py [--mb 64] [--file-size-mb 8] [--txn-kb 64]

Three figures per backend:
* ``plain``: the same file bodies written one after another with the bare client (local: open/write/close,
  no fsync; S3: one s3fs ``pipe_file`` each) — the baseline (local also shows ``plain + fsync``, since the
  writer fsyncs every file before renaming it);
* ``writer (pre-encoded)``: StorageWriter with a pass-through encoder (storage-layer overhead only: batching,
  schema check, index probe, atomic write + fsync locally, index file per flush);
* ``writer (csv codec)``: StorageWriter with the real csv encoder on generated rows (encode + write).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from sparkcdc.devtools.ports import free_port
from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo
from sparkcdc.sink.storage.layout_writer import StorageWriter
from sparkcdc.storage.external import ExternalStorage
from sparkcdc.storage.sink_config import StorageSinkConfig

TABLE = TableInfo(
    "bench",
    "t",
    1,
    (ColumnInfo("id", "bigint", nullable=False, primary_key=True, handle_key=True), ColumnInfo("v", "varchar")),
    version=1,
)


class PassThrough:
    """Returns the transaction's pre-encoded payload (carried in the first row's ``v``)."""

    file_extension = ".csv"

    def file_header(self, table: TableInfo) -> bytes:
        return b""

    def encode_txn(self, rows: Sequence[RowChange]) -> bytes:
        payload: bytes = rows[0].values[1]
        return payload


def _start_moto(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = (workdir / "moto.log").open("wb")
    exe = Path(sys.executable).parent / "moto_server"
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("moto did not start") from None
            time.sleep(0.05)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/bench", method="PUT"), timeout=10).close()
    return proc, endpoint


def _timed(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    nbytes = fn()
    return time.perf_counter() - start, nbytes


def run(uri: str, total: int, file_size: int, txn_size: int) -> dict[str, tuple[float, int]]:
    cfg = StorageSinkConfig.from_uri(f"{uri}{'&' if '?' in uri else '?'}protocol=csv&file-size={file_size}",
                                     {"sink": {"date-separator": "none"}})  # fmt: skip
    storage = ExternalStorage.from_config(cfg)
    n_txns = total // txn_size
    line = (b"x" * 99) + b"\n"
    payload = line * (txn_size // len(line))
    pre = [[RowChange(1000 + i, TABLE, RowOp.INSERT, None, (i, payload))] for i in range(n_txns)]

    def writer(encoded: bool, subdir: str) -> int:
        cfg_sub = StorageSinkConfig.from_uri(
            _sub(uri, subdir) + f"protocol=csv&file-size={file_size}",
            {"sink": {"date-separator": "none"}},
        )
        w = StorageWriter(cfg_sub, ExternalStorage.from_config(cfg_sub), encoder=None if encoded else PassThrough())
        written = 0
        if encoded:
            rows_per_txn = max(1, txn_size // 40)
            for i in range(n_txns):
                rows = [RowChange(1000 + i, TABLE, RowOp.INSERT, None, (i * rows_per_txn + j, f"value-{j:024d}"))
                        for j in range(rows_per_txn)]  # fmt: skip
                written += sum(d.size for d in w.write_txn(TABLE, rows).data_files)
        else:
            for rows in pre:
                written += sum(d.size for d in w.write_txn(TABLE, rows).data_files)
        return written + sum(d.size for d in w.flush().data_files)

    # the same file bodies the pre-encoded writer produces
    bodies: list[bytes] = []
    current = b""
    for _ in range(n_txns):
        current += payload
        if len(current) >= file_size:
            bodies.append(current)
            current = b""
    if current:
        bodies.append(current)

    def plain(fsync: bool = False) -> int:
        fs = storage.filesystem
        for n, body in enumerate(bodies):
            path = storage.full_path(f"plain{int(fsync)}/CDC{n:020d}.csv")
            if storage.is_local:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(body)
                    if fsync:
                        f.flush()
                        os.fsync(f.fileno())
            else:
                fs.pipe_file(path, body)
        return sum(len(b) for b in bodies)

    storage.write("warmup", b"x")  # client construction is not part of any figure
    figures = {"plain": _timed(plain)}
    if storage.is_local:
        figures["plain + fsync"] = _timed(lambda: plain(fsync=True))
    return figures | {
        "writer (pre-encoded)": _timed(lambda: writer(False, "pre")),
        "writer (csv codec)": _timed(lambda: writer(True, "csv")),
    }


def _sub(uri: str, subdir: str) -> str:
    base, _, query = uri.partition("?")
    return f"{base}/{subdir}?" + (f"{query}&" if query else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=64, help="bytes to write per figure (MiB)")
    ap.add_argument("--file-size-mb", type=int, default=8, help="file-size of the sink (MiB)")
    ap.add_argument("--txn-kb", type=int, default=64, help="encoded size of one transaction (KiB)")
    args = ap.parse_args()
    total, file_size, txn = args.mb << 20, args.file_size_mb << 20, args.txn_kb << 10
    work = Path(tempfile.mkdtemp(prefix="bench-storage-"))
    proc, endpoint = _start_moto(work)
    try:
        results = {
            "local": run(f"file://{work}/local", total, file_size, txn),
            "s3 (moto)": run(
                f"s3://bench/run?endpoint={endpoint}&access-key=k&secret-access-key=s&region=us-east-1",
                total,
                file_size,
                txn,
            ),
        }
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.mb} MiB per figure, file-size {args.file_size_mb} MiB, transactions of {args.txn_kb} KiB")
    for backend, figures in results.items():
        base_s, base_b = figures["plain"]
        base_rate = base_b / base_s / 1e6
        for name, (secs, nbytes) in figures.items():
            rate = nbytes / secs / 1e6
            print(f"{backend:10} {name:22} {rate:8.1f} MB/s  ratio {rate / base_rate:5.2f}  ({nbytes / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
