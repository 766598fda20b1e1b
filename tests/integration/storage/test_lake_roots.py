"""Lake tables on object stores (moto S3, gcp-storage-emulator, azurite): the sinks' URI form
``delta://s3://bucket/prefix?endpoint=...``, a MERGE and a replay, the as-of read, the sink's check, the consumer's
positions file beside the tables, and no credential in any error.

Not run, for the emulators' sake (README, "Lake tables"): Delta on GCS (delta-rs speaks GCS's XML API, which
gcp-storage-emulator does not serve: 501) and Delta on Azure (azurite answers delta-rs's listing of the log from a
version with the versions before it too, and every commit after the first fails "Invalid table version: 1").
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from sparkcdc.consumer.lake_target import LakeTarget
from sparkcdc.consumer.target import TargetOptions
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.lake.as_of import read_as_of
from sparkcdc.lake.changes import net_change
from sparkcdc.lake.location import LakeLocation
from sparkcdc.lake.target import open_tables
from sparkcdc.model.steps import Checkpoint
from sparkcdc.sink.base import check_sink
from tests.fixtures.object_stores import backend_uri
from tests.unit.lake.support import T, dele, ins, upd

CASES = [("delta", "s3"), ("iceberg", "s3"), ("iceberg", "gcs"), ("iceberg", "azure")]


def lake_uri(fmt: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    uri = f"{fmt}://{backend_uri(backend, request, f'lake-{uuid.uuid4().hex[:12]}')}"
    if fmt == "iceberg":  # the catalog's database stays local: a SQLite file cannot live in a bucket
        uri += f"&catalog-uri=sqlite:///{tmp_path}/catalog.db"
    return uri


@pytest.mark.parametrize(("fmt", "backend"), CASES)
def test_merge_replay_and_as_of_on_an_object_store(fmt: str, backend: str, request: pytest.FixtureRequest,
                                                   tmp_path: Path) -> None:  # fmt: skip
    uri = lake_uri(fmt, backend, request, tmp_path)
    check_sink(uri)
    where, _ = LakeLocation.from_uri(uri)
    tables = open_tables(where, "cf")
    tables.ensure(T)
    for batch in ([ins(10, 1, "a"), ins(10, 2, "b")], [upd(20, (1, "a"), (3, "a")), dele(20, 2, "b")]):
        for _replay in range(2):  # the second time, the table's recorded commit-ts skips the whole batch
            applied = tables.applied_ts("db", "t")
            tables.merge(T, net_change(batch, T.handle_key_positions, applied), applied)
    assert tables.applied_ts("db", "t") == 20
    assert sorted(tuple(r.values()) for r in read_as_of(uri, "db.t", 20).to_pylist()) == [(3, "a")]
    assert sorted(tuple(r.values()) for r in read_as_of(uri, "db.t", 15).to_pylist()) == [(1, "a"), (2, "b")]


def test_consumer_positions_live_beside_the_tables(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    uri = lake_uri("delta", "s3", request, tmp_path)
    where, _ = LakeLocation.from_uri(uri)
    target = LakeTarget(where, TargetOptions(consumer="c1"))
    cp = Checkpoint("db", "t", 0, 7, "2026-11-26", 3, 10, 42)
    target.checkpoints[cp.key] = cp
    target._save()
    again = LakeTarget(where, TargetOptions(consumer="c1"))
    assert again.checkpoints == target.checkpoints
    assert again.reset_checkpoints() == 1
    assert LakeTarget(where, TargetOptions(consumer="c1")).checkpoints == {}


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_missing_bucket_fails_in_one_line_without_the_secret(fmt: str, request: pytest.FixtureRequest,
                                                              tmp_path: Path) -> None:  # fmt: skip
    moto = request.getfixturevalue("moto_server")
    uri = (f"{fmt}://s3://no-such-bucket-x/p?endpoint={moto.endpoint}&access-key=testing"
           f"&secret-access-key=hunter2secret&catalog-uri=sqlite:///{tmp_path}/c.db")  # fmt: skip
    if fmt == "delta":
        uri = uri.split("&catalog-uri")[0]
    with pytest.raises(SparkcdcError) as e:
        check_sink(uri)
    assert isinstance(e.value, ConfigError)
    assert "no-such-bucket-x" in e.value.message and "does not exist" in e.value.message
    assert "hunter2secret" not in str(e.value) and "\n" not in e.value.message
