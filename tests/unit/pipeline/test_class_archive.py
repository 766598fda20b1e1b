"""When a session uses the class archive: only a complete one for this pyspark and this ``java`` (a JVM given a
truncated archive dies at start with SIGBUS)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkcdc.pipeline import class_archive


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPARKCDC_CACHE", str(tmp_path))
    return tmp_path


def made(size: int = 4096) -> Path:
    """An archive as ``make`` leaves it: the file, then its sidecar."""
    path = class_archive.archive_path()
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0" * size)
    st = path.stat()
    path.with_name(path.name + ".json").write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    return path


def test_no_archive_no_option(cache: Path) -> None:
    assert class_archive.java_options() == ""


def test_a_complete_archive_is_used(cache: Path) -> None:
    path = made()
    assert path.parent == cache
    assert class_archive.java_options() == f"-XX:SharedArchiveFile={path}"


def test_an_archive_without_its_sidecar_is_not_used(cache: Path) -> None:
    path = made()
    path.with_name(path.name + ".json").unlink()  # a dump that never finished leaves no sidecar
    assert class_archive.java_options() == ""


def test_a_truncated_archive_is_not_used(cache: Path) -> None:
    path = made()
    with path.open("r+b") as f:
        f.truncate(1000)
    assert class_archive.java_options() == ""


def test_another_java_has_another_archive(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = made()
    other = tmp_path / "jdk" / "bin" / "java"
    other.parent.mkdir(parents=True)
    other.write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert class_archive.archive_path() != first
    assert class_archive.java_options() == ""


def test_without_java_there_is_none(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    assert class_archive.archive_path() is None
    assert class_archive.java_options() == ""


def test_making_an_archive_deletes_those_of_other_versions(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another pyspark's or java's archive and sidecar, and a killed dump's temporary file, go once a new archive
    is made; a dump another process is still making, and the cache's other contents, stay."""
    import os
    import subprocess
    import time

    stale = [cache / "spark-4.2.0-java-0123456789ab.jsa", cache / "spark-4.2.0-java-0123456789ab.jsa.json",
             cache / "spark-4.3.0-java-ba9876543210.jsa", cache / "spark-4.3.0-java-ba9876543210.jsa.json",
             cache / "spark-4.1.0-java-0123456789ab.jsa.tmp"]  # fmt: skip
    running = cache / "spark-4.4.0-java-0123456789ab.jsa.tmp"
    other = cache / "kafka-4.4.0" / "libs" / "kafka.jar"
    for path in [*stale, running, other]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0")
    hours_ago = time.time() - 3 * 3600
    os.utime(stale[-1], (hours_ago, hours_ago))

    def dump(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        Path(cmd[-1]).write_bytes(b"\0" * 4096)  # the child JVM's archive, at its temporary name
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(class_archive.subprocess, "run", dump)
    path = class_archive.archive_path()
    assert path is not None
    class_archive.make(path)
    assert class_archive.java_options() == f"-XX:SharedArchiveFile={path}"
    assert not any(p.exists() for p in stale)
    assert running.exists() and other.exists()
    assert sorted(p.name for p in cache.iterdir()) == sorted([path.name, path.name + ".json", running.name,
                                                              "kafka-4.4.0"])  # fmt: skip
