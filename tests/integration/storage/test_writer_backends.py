"""One writer behaviour suite over local files, S3 (moto), GCS (emulator) and Azure Blob (azurite):
rotation, a real codec, crashes at every step of a flush, and transient faults."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sparkcdc.codec.base import file_decoder
from sparkcdc.errors import StorageError
from sparkcdc.model import TableInfo
from sparkcdc.sink.storage.layout_writer import StorageWriter
from sparkcdc.storage.external import ExternalStorage, RetryPolicy
from sparkcdc.storage.layout import DataFilePath, IndexFilePath, MetadataPath, SchemaFilePath, parse_path
from sparkcdc.storage.metadata import read_checkpoint, write_checkpoint
from sparkcdc.storage.schema_file import TableDefinition
from sparkcdc.storage.sink_config import StorageSinkConfig
from tests.fixtures.object_stores import FlakyFilesystem, SimulatedCrash, add_params, backend_uri
from tests.unit.storage.fakes import FakeEncoder, make_table, rows_in, txn

pytestmark = pytest.mark.integration
FIXED = datetime(2024, 6, 5, 10, 0, tzinfo=UTC)
FAST = RetryPolicy(attempts=5, base_delay=0.0)


def _writer(uri: str, storage: ExternalStorage | None = None, **kw: object) -> StorageWriter:
    cfg = StorageSinkConfig.from_uri(uri)
    st = storage or ExternalStorage.from_config(cfg, retry=FAST)
    return StorageWriter(cfg, st, encoder=FakeEncoder(), clock=lambda: FIXED, **kw)  # type: ignore[arg-type]


def _check_layout(st: ExternalStorage) -> dict[str, bytes]:
    """Every file is ours (or a local temp leftover); every index names a durable non-empty data file."""
    files = {}
    for path in st.list():
        if ".tmp." in path.rsplit("/", 1)[-1]:
            continue
        parsed = parse_path(path, date_separator="day", extension=".csv")
        assert parsed is not None, path
        data = st.read(path)
        assert data is not None
        files[path] = data
        if isinstance(parsed, IndexFilePath):
            named = path.replace("meta/CDC.index", data.decode().strip())
            assert st.size(named), f"{path} names {named}, which is missing or empty"
        if isinstance(parsed, DataFilePath):
            assert data, f"empty data file {path}"
        assert isinstance(parsed, DataFilePath | IndexFilePath | SchemaFilePath | MetadataPath)
    return files


def _data_rows(files: dict[str, bytes]) -> list[tuple[int, int]]:
    return [r for p, d in sorted(files.items()) if p.endswith(".csv") for r in rows_in(d)]


def test_rotation_and_round_trip(sink_root: str) -> None:
    w = _writer(add_params(sink_root, protocol="csv", file_size=1048576))
    w._encoder = FakeEncoder(payload=400_000)
    table = make_table()
    made = []
    for n in range(6):
        made += w.write_txn(table, txn(table, 100 + n, [n])).data_files
    made += w.flush().data_files
    assert [d.file_index for d in made] == [1, 2]
    files = _check_layout(w.storage)
    assert sorted(i for _, i in _data_rows(files)) == list(range(6))
    assert files["test/table1/5/2024-06-05/meta/CDC.index"] == b"CDC00000000000000000002.csv\n"
    schema = TableDefinition.from_table(table, 5)
    assert files[schema.path()] == schema.to_json()


def test_real_csv_codec_output_decodes(sink_root: str) -> None:
    cfg = StorageSinkConfig.from_uri(add_params(sink_root, protocol="csv"), {"sink": {"date-separator": "none"}})
    w = StorageWriter(cfg, ExternalStorage.from_config(cfg, retry=FAST))
    table = make_table()
    w.write_txn(table, txn(table, 10, [1, 2]))
    [d] = w.flush().data_files
    assert d.path == "test/table1/5/CDC00000000000000000001.csv"
    data = w.storage.read(d.path)
    assert data is not None
    decoded = list(file_decoder("csv").decode_file(data, table))
    assert [r.values for r in decoded] == [(1, "v1"), (2, "v2")]


# Each scenario step that makes a write visible (a PUT or a local rename) is a crash point.
SCENARIO_COMMITS = 7  # flush 1: schema, data, index; metadata; flush 2: data, index; metadata


def _scenario(w: StorageWriter, table: TableInfo, after: int) -> None:
    """Two flushed batches with a checkpoint after each; replays batches with commit-ts > ``after``."""
    for ts, ids in ((10, [1, 2]), (20, [3])):
        if ts <= after:
            continue
        w.write_txn(table, txn(table, ts, ids))
        w.flush()
        write_checkpoint(w.storage, ts)


@pytest.mark.parametrize("crash_at", range(1, SCENARIO_COMMITS + 1))
def test_crash_at_each_step_then_restart(sink_root: str, crash_at: int) -> None:
    uri = add_params(sink_root, protocol="csv")
    table = make_table()
    base = ExternalStorage.from_uri(uri, retry=FAST)
    crashing = FlakyFilesystem(base.filesystem, {crash_at}, counted=FlakyFilesystem.COMMITS, error=SimulatedCrash)
    with pytest.raises(SimulatedCrash):
        _scenario(_writer(uri, base.with_filesystem(crashing)), table, 0)
    before = _check_layout(base)
    # restart: a new writer (new process state) replays everything after the durable checkpoint
    checkpoint = read_checkpoint(base) or 0
    _scenario(_writer(uri), table, checkpoint)
    after = _check_layout(base)
    for path, data in before.items():
        if path.endswith(".csv") and data:
            assert after[path] == data, f"{path} was overwritten"
    assert read_checkpoint(base) == 20
    assert {i for _, i in _data_rows(after)} == {1, 2, 3}  # nothing lost; duplicates are allowed


def test_transient_faults_lose_nothing(sink_root: str) -> None:
    uri = add_params(sink_root, protocol="csv")
    base = ExternalStorage.from_uri(uri, retry=FAST)
    flaky = FlakyFilesystem(base.filesystem, lambda n, _name: n % 4 == 0)
    w = _writer(uri, base.with_filesystem(flaky))
    table, other = make_table(), make_table(table="t2")
    for n in range(5):
        w.write_txn(table, txn(table, 10 + n, [n]))
        w.write_txn(other, txn(other, 10 + n, [100 + n]))
        w.flush()
        write_checkpoint(w.storage, 10 + n)
    assert flaky.injected >= 5
    files = _check_layout(base)
    assert sorted(i for _, i in _data_rows(files)) == [0, 1, 2, 3, 4, 100, 101, 102, 103, 104]
    assert read_checkpoint(base) == 14


@pytest.mark.parametrize("backend", ["s3", "gcs", "azure"])
def test_missing_bucket_is_a_clear_permanent_error(backend: str, request: pytest.FixtureRequest) -> None:
    scheme, rest = backend_uri(backend, request, "p").split("://", 1)
    uri = f"{scheme}://no-such-bucket-x{rest[rest.index('/') :]}"
    st = ExternalStorage.from_uri(uri, retry=RetryPolicy(attempts=2, base_delay=0.0))
    with pytest.raises(StorageError) as info:
        st.write("a/b", b"x")
    text = str(info.value)
    assert "no-such-bucket-x" in text and "does not exist" in text
    assert "testing" not in text and "Eby8vdM02" not in text
    assert "\n" not in text


def test_wrong_azure_key_is_access_denied(request: pytest.FixtureRequest) -> None:
    bad_key = "QmFkS2V5QmFkS2V5QmFkS2V5QmFkS2V5QmFkS2V5QmFkS2V5"
    uri = backend_uri("azure", request, "p").split("account-key=")[0] + f"account-key={bad_key}"
    st = ExternalStorage.from_uri(uri, retry=RetryPolicy(attempts=2, base_delay=0.0))
    with pytest.raises(StorageError) as info:
        st.write("a/b", b"x")
    text = str(info.value)
    assert "access denied" in text
    assert bad_key not in text and "Eby8vdM02" not in text
    assert "\n" not in text
