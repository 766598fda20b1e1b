"""What a redo log holds is told from its storage alone (issue 28): from the meta's checkpoint through the complete
batches that follow each other; an incomplete batch ends it, a missing file the meta vouches for is an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.errors import ConfigError, CorruptDataError
from sparkcdc.redo.log_file import LogEncoder
from sparkcdc.redo.meta import RedoMeta, collect
from sparkcdc.redo.names import LogName, meta_name
from sparkcdc.redo.reader import RedoLog, stage
from sparkcdc.storage.external import ExternalStorage


def storage(tmp_path: Path) -> ExternalStorage:
    (tmp_path / "redo").mkdir(exist_ok=True)
    return ExternalStorage.from_uri(f"file://{tmp_path}/redo")


def put(s: ExternalStorage, *names: LogName) -> None:
    for n in names:
        s.write(n.format(), LogEncoder().finish())


def batch(begin: int, end: int, count: int, *, parts: int = 1, cf: str = "default.cf") -> list[LogName]:
    return [LogName(cf, begin, end, i, count, p, p == parts - 1) for i in range(max(count, 1)) for p in range(parts)]


def test_complete_batches_chain_from_the_meta_checkpoint(tmp_path: Path) -> None:
    s = storage(tmp_path)
    put(s, *batch(5, 10, 1))  # before the checkpoint: not collected yet, left out
    put(s, *batch(10, 20, 2, parts=2), *batch(20, 30, 0), *batch(30, 40, 3))
    put(s, *[n for n in batch(40, 50, 2) if n.index == 0])  # cut short by a crash: never applied, ends the log
    put(s, *batch(50, 60, 1))  # after the gap: unreachable
    s.write(meta_name("default.cf"), RedoMeta("default/cf", 10, 10, "+08:00").to_json())
    log = RedoLog.read(s)
    assert (log.changefeed, log.checkpoint_ts, log.resolved_ts, log.time_zone) == ("default/cf", 10, 40, "+08:00")
    assert [(n.begin, n.index, n.part) for n in log.files] == [(10, 0, 0), (10, 0, 1), (10, 1, 0), (10, 1, 1),
                                                                (20, 0, 0), (30, 0, 0), (30, 1, 0), (30, 2, 0)]


def test_without_a_meta_the_log_starts_at_its_first_batch(tmp_path: Path) -> None:
    s = storage(tmp_path)
    put(s, *batch(10, 20, 1), *batch(20, 30, 1))
    log = RedoLog.read(s)
    assert (log.checkpoint_ts, log.resolved_ts, log.meta) == (10, 30, None)


def test_a_batch_cut_two_ways_uses_one_complete_set(tmp_path: Path) -> None:
    s = storage(tmp_path)
    put(s, *batch(10, 20, 2), *batch(10, 20, 3)[:2], *batch(20, 30, 1))
    log = RedoLog.read(s)
    assert log.resolved_ts == 30 and [(n.count, n.index) for n in log.files] == [(2, 0), (2, 1), (1, 0)]


def test_a_missing_last_part_is_no_complete_chunk(tmp_path: Path) -> None:
    s = storage(tmp_path)
    put(s, *batch(10, 20, 1, parts=3)[:2])
    assert RedoLog.read(s).resolved_ts == 10


def test_a_hole_the_meta_vouches_for_is_an_error_naming_the_batch(tmp_path: Path) -> None:
    s = storage(tmp_path)
    put(s, *batch(10, 20, 2)[:1])
    s.write(meta_name("default.cf"), RedoMeta("default/cf", 10, 20).to_json())
    with pytest.raises(CorruptDataError) as e:
        RedoLog.read(s)
    assert "says everything up to 20 is logged, but the complete batches end at 10" in e.value.message
    assert batch(10, 20, 2)[0].format() in e.value.message


def test_which_changefeed(tmp_path: Path) -> None:
    s = storage(tmp_path)
    with pytest.raises(ConfigError, match="no redo meta file found") as e:
        RedoLog.read(s)
    assert e.value.code == "CDC:ErrRedoMetaFileNotFound"
    put(s, *batch(10, 20, 1, cf="default.a"), *batch(10, 20, 1, cf="ns2.b"))
    with pytest.raises(ConfigError, match="holds the redo logs of changefeeds default/a, ns2/b: choose one with"):
        RedoLog.read(s)
    assert RedoLog.read(s, "ns2/b").changefeed == "ns2/b" and RedoLog.read(s, "a").changefeed == "default/a"
    with pytest.raises(ConfigError, match="no redo log of changefeed 'c'"):
        RedoLog.read(s, "c")


def test_a_damaged_meta_is_refused_naming_it(tmp_path: Path) -> None:
    s = storage(tmp_path)
    s.write(meta_name("default.cf"), b"{not json")
    with pytest.raises(CorruptDataError, match=r"redo meta default\.cf\.meta: malformed"):
        RedoLog.read(s)


def test_gc_deletes_only_this_changefeeds_batches_up_to_the_checkpoint(tmp_path: Path) -> None:
    s = storage(tmp_path)
    put(s, *batch(10, 20, 1), *batch(20, 30, 1), *batch(10, 20, 1, cf="default.other"))
    s.write("notes.txt", b"")
    assert collect(s, "default.cf", 20) == 1
    assert sorted(s.list()) == sorted([batch(20, 30, 1)[0].format(), batch(10, 20, 1, cf="default.other")[0].format(),
                                       "notes.txt"])  # fmt: skip


def test_stage_checks_every_file_first_and_names_the_bad_one(tmp_path: Path) -> None:
    s = storage(tmp_path)
    put(s, *batch(10, 20, 1), *batch(20, 30, 1))
    bad = batch(20, 30, 1)[0].format()
    s.write(bad, LogEncoder().finish()[:-3])
    log = RedoLog.read(s)
    with pytest.raises(CorruptDataError, match=f"redo log {bad}"):
        stage(s, log, tmp_path / "tmp")
