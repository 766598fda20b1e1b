"""SQLite metadata store: round trips, duplicate ids, atomic writes, reopen after an abrupt end."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.changefeed.info import ChangefeedInfo, ChangefeedStatus, FeedState, RunningError
from sparkcdc.server.store import ChangefeedExists, ChangefeedNotFound, MetaStore, MetaStoreError


def info(cf: str = "cf1", **kw: object) -> ChangefeedInfo:
    cfg = ReplicaConfig.from_toml({"case-sensitive": True, "filter": {"rules": ["a.*"]}, "sink": {"protocol": "csv"}})
    args: dict[str, object] = {"start_ts": 5, **kw}
    return ChangefeedInfo(id=cf, sink_uri="s3://b/p?protocol=csv&secret-access-key=S3CR3T", config=cfg, **args)  # type: ignore[arg-type]


def test_round_trip(tmp_path: Path) -> None:
    store = MetaStore(tmp_path)
    i = info(error=RunningError("CDC:ErrX", "boom", "127.0.0.1:8300", "2026-01-01T00:00:00+00:00"))
    store.create(i, ChangefeedStatus(5, 6))
    got, st = store.get("default", "cf1")
    assert got == i
    assert st == ChangefeedStatus(5, 6)
    assert "S3CR3T" not in repr(got)


def test_duplicate_and_missing(tmp_path: Path) -> None:
    store = MetaStore(tmp_path)
    store.create(info(), ChangefeedStatus(5, 5))
    with pytest.raises(ChangefeedExists) as e:
        store.create(info(start_ts=9), ChangefeedStatus(9, 9))
    assert e.value.code == "CDC:ErrChangeFeedAlreadyExists"
    assert store.get("default", "cf1")[0].start_ts == 5
    with pytest.raises(ChangefeedNotFound):
        store.get("default", "nope")
    with pytest.raises(ChangefeedNotFound):
        store.put_status("default", "nope", ChangefeedStatus(1, 1))
    with pytest.raises(ChangefeedNotFound):
        store.put_info(info("nope"))
    assert store.delete("default", "nope") is False


def test_updates_and_list(tmp_path: Path) -> None:
    store = MetaStore(tmp_path)
    store.create(info("b"), ChangefeedStatus(5, 5))
    store.create(info("a"), ChangefeedStatus(5, 5))
    store.create(info("c", namespace="other"), ChangefeedStatus(5, 5))
    store.put_status("default", "a", ChangefeedStatus(7, 8))
    store.put_info(info("a").with_changes(state=FeedState.STOPPED))
    assert [i.id for i, _ in store.list("default")] == ["a", "b"]
    assert [i.id for i, _ in store.list(None)] == ["a", "b", "c"]
    got, st = store.get("default", "a")
    assert got.state == FeedState.STOPPED and st == ChangefeedStatus(7, 8)
    assert store.delete("default", "a") is True
    assert [i.id for i, _ in store.list("default")] == ["b"]


def test_survives_reopen_without_close(tmp_path: Path) -> None:
    store = MetaStore(tmp_path)
    store.create(info(), ChangefeedStatus(5, 5))
    store.put_status("default", "cf1", ChangefeedStatus(10, 11))
    # no close(): a second connection (a restarted process) sees every committed write
    again = MetaStore(tmp_path)
    assert again.get("default", "cf1")[1] == ChangefeedStatus(10, 11)


def test_failed_transaction_changes_nothing(tmp_path: Path) -> None:
    store = MetaStore(tmp_path)
    store.create(info(), ChangefeedStatus(5, 5))
    with pytest.raises(ChangefeedExists):
        store.create(info(), ChangefeedStatus(6, 6))
    conn = sqlite3.connect(tmp_path / "meta.sqlite3")
    rows = conn.execute("SELECT status FROM changefeed").fetchall()
    conn.close()
    assert [json.loads(r[0])["checkpoint_ts"] for r in rows] == [5]


def test_corrupt_record(tmp_path: Path) -> None:
    store = MetaStore(tmp_path)
    store.create(info(), ChangefeedStatus(5, 5))
    conn = sqlite3.connect(tmp_path / "meta.sqlite3")
    conn.execute("UPDATE changefeed SET info='{not json'")
    conn.commit()
    conn.close()
    with pytest.raises(MetaStoreError, match="corrupt changefeed record"):
        store.get("default", "cf1")


def test_unusable_data_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(MetaStoreError, match="check --data-dir"):
        MetaStore(blocker / "sub")


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_store_holding_secrets_is_private(tmp_path: Path) -> None:
    """The sink URIs' passwords are in here: the file and its WAL files 0600 in a 0700 directory, whatever the
    umask (issue 26, item 6)."""
    data = tmp_path / "new" / "data"
    store = MetaStore(data)
    store.create(info(), ChangefeedStatus(5, 5))
    assert _mode(data) == 0o700 and _mode(data.parent) == 0o700  # created by the store: both its own
    files = sorted(p.name for p in data.iterdir())
    assert "meta.sqlite3" in files and "meta.sqlite3-wal" in files
    assert {name: _mode(data / name) for name in files} == {name: 0o600 for name in files}
    store.close()


def test_store_made_before_is_tightened_on_open(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "old"
    MetaStore(data).close()
    for path in (data, *data.iterdir()):  # as an older version left them
        path.chmod(0o755 if path.is_dir() else 0o644)
    (data / "meta.sqlite3-wal").write_bytes(b"")
    (data / "meta.sqlite3-wal").chmod(0o644)
    with caplog.at_level("WARNING", logger="sparkcdc.local_file"):
        MetaStore(data).close()
    assert _mode(data) == 0o700
    assert {p.name: _mode(p) for p in data.iterdir()} == {p.name: 0o600 for p in data.iterdir()}
    assert "was readable by other users (mode 0o644); now 0o600" in caplog.text


def test_a_shared_sticky_directory_is_left_alone(tmp_path: Path) -> None:
    """A store in a directory such as /tmp (sticky, shared by every user): the file is private, the directory
    keeps its mode."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    MetaStore(shared).close()
    assert shared.stat().st_mode & 0o7777 == 0o1777
    assert _mode(shared / "meta.sqlite3") == 0o600
