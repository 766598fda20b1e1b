"""The SPARK_HOME the server's JVM gets: the installed pyspark's, without the zips of ``python/lib``."""

from __future__ import annotations

import os
from pathlib import Path

import pyspark
import pytest

from sparkcdc.pipeline.gateway import pyspark_home

REAL = Path(pyspark.__file__).resolve().parent


def test_every_entry_but_python_is_linked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_HOME", raising=False)
    home = pyspark_home(tmp_path / "home")
    assert home == tmp_path / "home"
    assert sorted(p.name for p in home.iterdir()) == sorted(p.name for p in REAL.iterdir() if p.name != "python")
    assert all(Path(os.readlink(p)) == REAL / p.name for p in home.iterdir())
    assert (home / "bin" / "spark-submit").exists() and (home / "jars").is_dir()
    assert not (home / "python" / "lib" / "pyspark.zip").exists()
    assert oct(home.stat().st_mode & 0o777) == oct(0o700)


def test_a_stale_home_is_repaired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_HOME", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    (home / "jars").symlink_to(tmp_path)  # an older pyspark's
    (home / "python").symlink_to(REAL / "python")
    (home / "gone").write_text("")
    pyspark_home(home)
    assert Path(os.readlink(home / "jars")) == REAL / "jars"
    assert not (home / "python").exists() and not (home / "gone").exists()


def test_a_spark_home_of_the_users_own_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_HOME", "/opt/spark")
    assert pyspark_home(tmp_path / "home") is None
    assert not (tmp_path / "home").exists()
