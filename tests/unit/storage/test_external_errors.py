"""ExternalStorage error mapping, retry classification, secret scrubbing and the noop scheme (fake filesystems)."""

from __future__ import annotations

import errno
import pickle
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.errors import StorageError
from sparkcdc.sink.storage.layout_writer import StorageWriter
from sparkcdc.storage.external import ExternalStorage, RetryPolicy, classify_permanent, is_transient
from sparkcdc.storage.sink_config import StorageSinkConfig
from tests.unit.storage.fakes import FakeEncoder, make_table, txn

SECRET = "wJalrXUtnFEMI-K7MDENG"
URI = f"s3://bkt/pre?access-key=AKIDEXAMPLE&secret-access-key={SECRET}&endpoint=http://127.0.0.1:1"


class RaisingFS:
    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def pipe_file(self, path: str, data: bytes) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


class HttpError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (ConnectionResetError(), True),
        (TimeoutError(), True),
        (OSError(errno.ETIMEDOUT, "timed out"), True),
        (HttpError(503), True),
        (HttpError(429), True),
        (HttpError(404), False),
        (FileNotFoundError("NoSuchBucket"), False),
        (PermissionError("AccessDenied"), False),
        (OSError(errno.ENOSPC, "no space"), False),
        (ValueError("bad"), False),
    ],
)
def test_transient_classification(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


def test_permanent_kinds() -> None:
    assert classify_permanent(FileNotFoundError("The specified bucket does not exist")) == "not-found"
    assert classify_permanent(PermissionError("x")) == "denied"
    assert classify_permanent(Exception("ClientAuthenticationError: Server failed to authenticate")) == "denied"
    assert classify_permanent(ValueError("x")) == "other"


def test_retries_then_succeeds() -> None:
    fs = RaisingFS(ConnectionResetError(), HttpError(500))
    st = ExternalStorage.from_uri(URI, retry=RetryPolicy(attempts=3, base_delay=0.0)).with_filesystem(fs)
    st.write("a", b"x")
    assert fs.calls == 3


def test_permanent_error_is_not_retried_and_hides_secrets() -> None:
    fs = RaisingFS(PermissionError(f"AccessDenied for {SECRET} url=https://x/?sig=abcdef&se=1"))
    st = ExternalStorage.from_uri(URI, retry=RetryPolicy(attempts=5, base_delay=0.0)).with_filesystem(fs)
    with pytest.raises(StorageError) as info:
        st.write("db/t/meta/x", b"x")
    text = str(info.value)
    assert fs.calls == 1
    assert "access denied" in text and "db/t/meta/x" in text
    assert SECRET not in text and "abcdef" not in text
    assert info.value.retryable is False
    assert SECRET not in repr(st)
    assert SECRET not in str(pickle.loads(pickle.dumps(info.value)))


def test_pickle_drops_the_client() -> None:
    st = ExternalStorage.from_uri(URI).with_filesystem(RaisingFS())
    clone = pickle.loads(pickle.dumps(st))
    assert clone.uri == st.uri
    assert clone._fs is None  # rebuilt lazily on first use


def test_noop_sink_writes_nothing(tmp_path: Path) -> None:
    cfg = StorageSinkConfig.from_uri("noop://?protocol=csv")
    w = StorageWriter(cfg, encoder=FakeEncoder())
    table = make_table()
    w.write_txn(table, txn(table, 1, [1]))
    result = w.flush()
    assert len(result.data_files) == 1
    assert w.storage.list() == []
    assert w.storage.read(result.data_files[0].path) is None


def test_local_write_is_atomic_and_leaves_no_temp_on_error(tmp_path: Path) -> None:
    st = ExternalStorage.from_uri(f"file://{tmp_path}")
    st.write("d/f", b"one")
    real = st.filesystem

    class FailingMove:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def mv(self, *args: Any, **kwargs: Any) -> None:
            raise OSError(errno.EIO, "disk error")

    broken = st.with_filesystem(FailingMove())
    with pytest.raises(StorageError, match="disk error"):
        broken.write("d/f", b"two")
    assert st.read("d/f") == b"one"
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["f"]


class FindFS:
    """``find`` raises FileNotFoundError (as s3fs does for a missing bucket, and some stores for a missing
    prefix); ``exists`` answers for the bucket."""

    def __init__(self, bucket_exists: bool) -> None:
        self.bucket_exists = bucket_exists
        self.asked: list[str] = []

    def invalidate_cache(self) -> None:
        pass

    def find(self, path: str, detail: bool = False) -> list[str]:
        raise FileNotFoundError("The specified bucket does not exist")

    def exists(self, path: str) -> bool:
        self.asked.append(path)
        return self.bucket_exists


def test_list_of_a_missing_bucket_raises_naming_it_with_secrets_masked() -> None:
    fs = FindFS(bucket_exists=False)
    st = ExternalStorage.from_uri(URI, retry=RetryPolicy(attempts=1)).with_filesystem(fs)
    with pytest.raises(StorageError) as e:
        st.list()
    assert fs.asked == ["bkt"]
    assert e.value.code == "CDC:ErrExternalStorageAPI"
    assert "list s3://bkt/pre failed: bucket or container does not exist" in e.value.message
    assert "create it or fix the sink URI" in e.value.message
    assert SECRET not in e.value.message


def test_list_of_a_missing_prefix_in_an_existing_bucket_is_empty() -> None:
    st = ExternalStorage.from_uri(URI, retry=RetryPolicy(attempts=1)).with_filesystem(FindFS(bucket_exists=True))
    assert st.list("a/b") == []


def test_list_of_a_missing_local_directory_is_empty(tmp_path: Path) -> None:
    assert ExternalStorage.from_uri(f"file://{tmp_path}/not/yet").list() == []
