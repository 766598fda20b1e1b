"""A class-data-sharing archive of Spark's classes for the driver JVM, so that a server's Spark session starts on
about half the CPU.

Most of what a ``cdc server`` start or restart costs is its JVM loading and verifying Spark's classes: on the 2-core
machines here the JVM used 9.6-11.5 CPU-seconds until its first job, 4.6-4.9 with a dynamic AppCDS archive of a
session that ran one changefeed-shaped query (JDK 17; the archive is about 150 MB). ``python -m
sparkcdc.pipeline.class_archive`` makes one (``scripts/setup.sh`` runs it) in ``$SPARKCDC_CACHE`` (default
``~/.cache/sparkcdc``), named after the pyspark version and the ``java`` that runs Spark, and every session
``build_session`` starts uses it from then on.

The JVM writes the archive when it exits; a JVM given a truncated archive dies at start with SIGBUS (seen with
and without ``-XX:+VerifySharedSpaces``). So the archive is written under a temporary name and renamed only once
the dumping JVM exited, a sidecar records its size and mtime, and a session uses it only while both still match.
Making one deletes the archives of other pyspark versions or ``java``s in the cache, which nothing uses again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

DUMP_TIMEOUT_S = 900.0
_MAKE_TIMEOUT_S = DUMP_TIMEOUT_S + 300


def cache_dir() -> Path:
    return Path(os.environ.get("SPARKCDC_CACHE") or Path.home() / ".cache" / "sparkcdc")


def _java() -> Path | None:
    """The ``java`` spark-submit runs: ``$JAVA_HOME/bin/java``, else the first on PATH (resolved)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_path() -> Path | None:
    """Where the archive for this pyspark and this ``java`` lives (None without a ``java``)."""
    import pyspark

    java = _java()
    if java is None:
        return None
    st = java.stat()
    key = hashlib.sha256(f"{java}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]
    return cache_dir() / f"spark-{pyspark.__version__}-java-{key}.jsa"


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def java_options() -> str:
    """``-XX:SharedArchiveFile=...`` when a complete archive for this pyspark and ``java`` exists, else ''."""
    path = archive_path()
    if path is None:
        return ""
    try:
        recorded = json.loads(_sidecar(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return ""
    if recorded != {"size": st.st_size, "mtime_ns": st.st_mtime_ns}:
        log.warning("ignoring the class archive %s: it changed since it was made", path)
        return ""
    return f"-XX:SharedArchiveFile={path}"


def make(path: Path) -> None:
    """Run a session with one warm-up query in a child process whose JVM dumps its classes to ``path`` at exit;
    complete or nothing. Raises RuntimeError when the dump did not happen."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    _sidecar(path).unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "sparkcdc.pipeline.class_archive", "--dump", str(tmp)],
                          capture_output=True, text=True, timeout=_MAKE_TIMEOUT_S)  # fmt: skip
    if done.returncode != 0 or not tmp.exists() or tmp.stat().st_size == 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"the JVM wrote no class archive (exit {done.returncode}): {done.stderr[-2000:]}")
    tmp.replace(path)
    st = path.stat()
    _sidecar(path).write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    _remove_stale(path)


def _remove_stale(keep: Path) -> None:
    """Delete every other archive in ``keep``'s directory (another pyspark or ``java``'s, ~150 MB each), its sidecar,
    and a temporary one older than a dump may take (a killed dump's). A JVM running from a deleted archive keeps its
    mapping; a dump another process is still making is younger and stays."""
    now = time.time()
    for old in keep.parent.glob("spark-*-java-*.jsa*"):
        if old.name in (keep.name, _sidecar(keep).name):
            continue
        try:
            if old.name.endswith(".tmp") and now - old.stat().st_mtime < _MAKE_TIMEOUT_S:
                continue
            old.unlink()
        except FileNotFoundError:  # another process's make deleted or renamed it meanwhile
            continue
        log.info("deleted the class archive file %s: it is for another pyspark or java", old)


def _dump(tmp: Path) -> None:
    """In the child: a session whose JVM archives the classes it loaded when it exits, one warm-up query, and
    the JVM's exit waited for (so the archive is complete when this returns)."""
    from sparkcdc.pipeline.gateway import stop_gateway
    from sparkcdc.pipeline.query import build_session
    from sparkcdc.pipeline.warmup import warm_up

    with tempfile.TemporaryDirectory(prefix="sparkcdc-class-archive-") as work:
        spark = build_session("local[2]", "sparkcdc-class-archive", extra={
            "spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={tmp} -Xlog:cds=off"})  # fmt: skip
        warm_up(spark, Path(work) / "warmup")
        spark.stop()
        stop_gateway(timeout=DUMP_TIMEOUT_S)


def main() -> None:
    if sys.argv[1:2] == ["--dump"]:
        _dump(Path(sys.argv[2]))
        return
    path = archive_path()
    if path is None:
        sys.exit("no java found (JAVA_HOME or PATH): no class archive made")
    if java_options():
        print(f"class archive: {path} (exists)")
        return
    make(path)
    print(f"class archive: {path} ({path.stat().st_size // 2**20} MiB)")


if __name__ == "__main__":
    main()
