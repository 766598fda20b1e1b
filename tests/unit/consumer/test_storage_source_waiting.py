"""A storage consumer before its tree exists: ``--once`` stops with one line, a long-running one waits and says so
once (no downstream needed: nothing reaches the target before the tree has a metadata file)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.consumer.storage_consumer import StorageSource
from sparkcdc.consumer.storage_reader import ReaderConfig
from sparkcdc.errors import ConfigError
from sparkcdc.storage.external import ExternalStorage

NO_TARGET: Any = None  # steps() must not touch the target while there is no tree


def _source(root: Path, *, once: bool) -> StorageSource:
    return StorageSource(ExternalStorage.from_uri(f"file://{root}"), ReaderConfig("csv"), once=once)


def test_once_on_a_path_that_does_not_exist_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        list(_source(tmp_path / "no-such-tree", once=True).steps(NO_TARGET))
    assert f"no storage-sink tree at file://{tmp_path}/no-such-tree" in e.value.message
    assert "check --upstream-uri" in e.value.message
    assert not e.value.retryable


def test_without_once_a_missing_tree_is_awaited_said_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    source = _source(tmp_path / "not-yet", once=False)
    with caplog.at_level(logging.INFO, logger="sparkcdc.consumer.storage_consumer"):
        for _ in range(3):
            assert list(source.steps(NO_TARGET)) == []
    waiting = [r.getMessage() for r in caplog.records if "waiting" in r.getMessage()]
    assert len(waiting) == 1
    assert "does not exist yet" in waiting[0]
    assert not source.finished


def test_once_on_a_tree_without_metadata_yet_is_not_an_error_and_says_nothing_was_applied(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "t").mkdir()
    (tmp_path / "db" / "t" / "x.csv.tmp.0123456789abcdef0123456789abcdef").write_bytes(b"")
    source = _source(tmp_path, once=True)
    with caplog.at_level(logging.INFO, logger="sparkcdc.consumer.storage_consumer"):
        assert list(source.steps(NO_TARGET)) == []
    assert source.finished
    [said] = [r for r in caplog.records if "metadata" in r.getMessage()]
    assert said.levelno == logging.WARNING and "nothing can be applied yet" in said.getMessage()
    assert "waiting for the changefeed" not in said.getMessage()
