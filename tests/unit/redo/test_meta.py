"""A removed changefeed's redo log goes with it (``redo.meta.remove_all``, called by ``ChangefeedManager.remove``),
as TiCDC's owner deletes it; other changefeeds' files in the same storage stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.changefeed.consistent import ConsistentConfig
from sparkcdc.redo import meta
from sparkcdc.redo.names import LogName, file_key, meta_name
from sparkcdc.server import changefeed as manager_module
from sparkcdc.server.changefeed import ChangefeedManager, CreateRequest
from sparkcdc.server.store import MetaStore
from sparkcdc.storage.external import ExternalStorage
from tests.unit.server.fakes import FakeRunner


def _fill(storage: ExternalStorage, changefeed: str) -> set[str]:
    key = file_key(changefeed)
    names = {LogName(key, 10, 20, 0, 1, 0, True).format(), LogName(key, 20, 30, 0, 2, 0, False).format(),
             LogName(key, 20, 30, 1, 2, 0, True).format(), meta_name(key)}  # fmt: skip
    for name in names:
        storage.write(name, b"x")
    return names


def test_remove_all_deletes_one_changefeeds_meta_and_logs_and_keeps_the_others(tmp_path: Path) -> None:
    config = ConsistentConfig.from_toml({"level": "eventual", "storage": f"file://{tmp_path}"})
    storage = ExternalStorage.from_uri(config.storage)
    _fill(storage, "default/cf1")
    kept = _fill(storage, "default/cf2") | {"notes.txt"}
    storage.write("notes.txt", b"a user's file")
    assert meta.remove_all(config, "default/cf1") == 4
    assert set(storage.list()) == kept
    assert meta.remove_all(config, "default/cf1") == 0


def test_removing_a_changefeed_deletes_its_redo_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manager_module, "check_sink", lambda *_: None)  # a MySQL sink's check connects to it
    redo = tmp_path / "redo"
    storage = ExternalStorage.from_uri(f"file://{redo}")
    mgr = ChangefeedManager(MetaStore(tmp_path / "meta"), FakeRunner(), addr="127.0.0.1:1")
    mgr.start(poll=False)
    config = ReplicaConfig.from_toml({"consistent": {"level": "eventual", "storage": f"file://{redo}"}})
    for cf in ("cf1", "cf2"):
        mgr.create(CreateRequest(changefeed_id=cf, sink_uri="mysql://root@127.0.0.1:3306/", config=config))
    _fill(storage, "default/cf1")
    kept = _fill(storage, "default/cf2")
    assert mgr.remove("default", "cf1") is True
    assert set(storage.list()) == kept
