"""The storage probe of changefeed create and update: written and deleted, or one line saying why, within 10 s."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.consumer.storage_reader import ReaderConfig, scan
from sparkcdc.errors import ConfigError
from sparkcdc.storage import probe
from sparkcdc.storage.external import ExternalStorage


def test_a_writable_storage_is_left_as_it_was(tmp_path: Path) -> None:
    probe.check_writable(ExternalStorage.from_uri(f"file://{tmp_path}/root"), "the sink's storage")
    assert list((tmp_path / "root").iterdir()) == []


def test_a_storage_that_refuses_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "root").write_text("a file where the directory should be")
    with pytest.raises(ConfigError) as e:
        probe.check_writable(ExternalStorage.from_uri(f"file://{tmp_path}/root"), "the sink's storage file:///x")
    assert e.value.code == "CDC:ErrStorageInitialize" and "\n" not in e.value.message
    assert e.value.message.startswith("cannot write the sink's storage file:///x: write file://")


def test_a_storage_that_does_not_answer_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    class Hanging:
        def pipe_file(self, path: str, data: bytes) -> None:
            release.wait(30)

        def __getattr__(self, name: str) -> Any:
            raise AssertionError(name)

    monkeypatch.setattr(probe, "CHECK_SECONDS", 0.2)
    storage = ExternalStorage.from_uri("s3://bkt/p?secret-access-key=TOPSECRET").with_filesystem(Hanging())
    try:
        with pytest.raises(ConfigError) as e:
            probe.check_writable(storage, f"the sink's storage {storage.uri.masked()}")
    finally:
        release.set()
    assert e.value.code == "CDC:ErrStorageInitialize" and "TOPSECRET" not in e.value.message
    assert e.value.message.endswith("did not answer within 0.2 s; check that it is reachable")


def test_a_probe_left_behind_is_skipped_by_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A create killed between the probe's write and its delete (or a consumer listing the tree meanwhile): the
    consumers and format("ticdc") skip the probe, as they skip temporary files, instead of stopping on it."""
    monkeypatch.setattr(ExternalStorage, "delete", lambda self, path: None)
    storage = ExternalStorage.from_uri(f"file://{tmp_path}")
    probe.check_writable(storage, "the sink's storage")
    (left,) = [p.name for p in tmp_path.iterdir()]
    assert left.startswith(".sparkcdc-probe")
    (tmp_path / "metadata").write_text('{"checkpoint-ts":5}')
    assert scan(storage, ReaderConfig("csv")).streams == {}
