"""Executors that do not share the driver's disk (``spark://`` masters): with ``ship_relay`` the relay source's
tasks carry the chunk bytes and the schema history, so decoding opens no local path. A real MariaDB and puller;
the tasks are pickled as Spark ships them, and the capture dir is gone before they run."""

from __future__ import annotations

import pickle
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.capture import Puller, PullerConfig
from sparkcdc.errors import StorageError
from sparkcdc.pipeline.relay_source import ChunkPartition, RelayStreamReader
from sparkcdc.pipeline.spec import FeedSpec
from sparkcdc.pipeline.stage_row import Ddl, Dml, from_batches
from tests.fixtures.mariadb import FreshDatabase

pytestmark = pytest.mark.integration


def _reader(tmp_path: Path, capture: Path, ship: bool, start_ts: int) -> RelayStreamReader:
    state = tmp_path / f"state-{ship}"
    state.mkdir()
    spec = FeedSpec(changefeed="default/ship", capture_dir=str(capture), state_dir=str(state),
                    sink_uri=f"file://{tmp_path / 'sink'}?protocol=canal-json", start_ts=start_ts,
                    chunk_bytes=512, ship_relay=ship)  # fmt: skip
    return RelayStreamReader(spec)


def _run(reader: RelayStreamReader, parts: list[Any]) -> list[tuple[Any, ...]]:
    """The tasks' decoded rows (the batch mark left out): canal-json's encode time (``"ts"``, the clock at encoding)
    blanked, pickled table infos and DDL events loaded (their bytes depend on object sharing)."""
    out: list[tuple[Any, ...]] = []
    for p in parts:
        for row in from_batches(reader.read(pickle.loads(pickle.dumps(p)))):
            if isinstance(row, Ddl):
                out.append(row._replace(event=pickle.loads(row.event)))
            elif isinstance(row, Dml):
                body = re.sub(rb'"ts":[0-9]+', b'"ts":0', row.payload)
                out.append(row._replace(payload=body, info=row.info and pickle.loads(row.info)))
    return out


def test_shipped_chunks_decode_without_the_capture_dir(fresh_db: FreshDatabase, tmp_path: Path) -> None:
    db = fresh_db
    db.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))")
    capture = tmp_path / "capture"
    puller = Puller(PullerConfig(data_dir=str(capture), **db.puller_kwargs()))
    try:
        start = puller.catch_up(30).resolved_ts
        db.execute(*(f"INSERT INTO t VALUES ({i}, 'row {i} {'x' * 30}')" for i in range(40)))
        db.execute("ALTER TABLE t ADD COLUMN w INT DEFAULT 7", "UPDATE t SET v = 'after' WHERE id < 5")
        end = puller.catch_up(30).resolved_ts
    finally:
        puller.close()
    by_path = _reader(tmp_path, capture, False, start)
    shipped = _reader(tmp_path, capture, True, start)
    offsets = ({"resolved_ts": start}, {"resolved_ts": end})
    path_parts = by_path.partitions(*offsets)
    ship_parts = shipped.partitions(*offsets)
    chunks = [p for p in ship_parts if isinstance(p, ChunkPartition)]
    assert len(chunks) > 1  # small chunk_bytes: several tasks, each with its own bytes
    assert all(len(p.data) == p.ref.length and p.history is not None for p in chunks)
    assert all(not p.data and p.history is None for p in path_parts if isinstance(p, ChunkPartition))
    expected = _run(by_path, path_parts)
    assert len(expected) >= 40

    moved = tmp_path / "elsewhere"
    shutil.move(capture, moved)  # an executor on another machine: the driver's capture dir is not there
    assert _run(shipped, ship_parts) == expected
    with pytest.raises(StorageError):
        _run(by_path, path_parts)
