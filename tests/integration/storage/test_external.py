"""ExternalStorage behaviour, identical on local files, S3 (moto), GCS (emulator) and Azure (azurite)."""

from __future__ import annotations

import pickle

import pytest

from sparkcdc.errors import StorageError
from sparkcdc.masking import is_secret_param
from sparkcdc.storage.external import ExternalStorage, RetryPolicy
from tests.fixtures.object_stores import FlakyFilesystem

pytestmark = pytest.mark.integration


def test_write_read_list_delete(sink_root: str) -> None:
    st = ExternalStorage.from_uri(sink_root)
    assert st.list() == []
    assert st.read("a/b.txt") is None
    assert st.size("a/b.txt") is None
    st.write("a/b.txt", b"hello")
    st.write("a/c/d.txt", b"")
    st.write("metadata", b"{}")
    assert st.read("a/b.txt") == b"hello"
    assert st.size("a/b.txt") == 5
    assert st.size("a/c/d.txt") == 0
    assert st.exists("a/c/d.txt")
    assert st.list() == ["a/b.txt", "a/c/d.txt", "metadata"]
    assert st.list("a/c") == ["a/c/d.txt"]
    st.write("a/b.txt", b"replaced")
    assert st.read("a/b.txt") == b"replaced"
    st.delete("a/b.txt")
    st.delete("a/b.txt")  # missing is fine
    assert st.list() == ["a/c/d.txt", "metadata"]


def test_pickled_storage_rebuilds_its_client(sink_root: str) -> None:
    st = ExternalStorage.from_uri(sink_root)
    st.write("x", b"1")
    clone = pickle.loads(pickle.dumps(st))
    assert clone.read("x") == b"1"
    secrets = [v for k, v in st.uri.params if v and is_secret_param(k)]
    assert not [v for v in secrets if v in repr(clone)]


def test_transient_faults_are_retried(sink_root: str) -> None:
    st = ExternalStorage.from_uri(sink_root, retry=RetryPolicy(attempts=4, base_delay=0.0))
    flaky = FlakyFilesystem(st.filesystem, {1, 2, 4})
    st = st.with_filesystem(flaky)
    st.write("f", b"data")
    assert st.read("f") == b"data"
    assert flaky.injected == 3


def test_persistent_transient_fault_becomes_retryable_error(sink_root: str) -> None:
    st = ExternalStorage.from_uri(sink_root, retry=RetryPolicy(attempts=3, base_delay=0.0))
    st = st.with_filesystem(FlakyFilesystem(st.filesystem, lambda n, name: True))
    with pytest.raises(StorageError, match="failed after 3 attempts") as info:
        st.write("f", b"data")
    assert info.value.retryable
