"""External storage on fsspec: local files, S3 (s3fs), GCS (gcsfs) and Azure Blob (adlfs).

Paths given to :class:`ExternalStorage` are relative to the sink root. Writes are atomic: local files go to
``<name>.tmp.<uuid>`` (fsync'd) then are renamed; object stores get one PUT. Transient failures (connection
resets, timeouts, throttling, 5xx) are retried with exponential backoff; permanent ones (bucket missing,
access denied) become a StorageError whose message names the operation and path and never a secret.

The object pickles without its filesystem: Spark executors rebuild the fsspec client lazily.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from sparkcdc.errors import StorageError
from sparkcdc.masking import MASK, is_secret_param
from sparkcdc.storage.sink_uri import SinkURI

log = logging.getLogger(__name__)
T = TypeVar("T")

_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_TRANSIENT_ERRNO = frozenset(
    {errno.EAGAIN, errno.ETIMEDOUT, errno.ECONNRESET, errno.ECONNREFUSED, errno.ECONNABORTED, errno.EPIPE}
)
_TRANSIENT_NAMES = ("timeout", "connection", "servicerequest", "throttl", "slowdown", "serverdisconnected")
_SAS_SIG = re.compile(r"(sig|signature|AccountKey|SharedAccessSignature|X-Amz-Signature|X-Amz-Credential)=[^&;\s'\"]+",
                      re.IGNORECASE)  # fmt: skip
_NOT_FOUND_NAMES = ("nosuchbucket", "containernotfound", "bucketnotfound")
_DENIED_NAMES = ("accessdenied", "authentication", "authorization", "forbidden", "invalidaccesskey")
# Temporary files of local writes: ours (``<name>.tmp.<uuid hex>``, staged data files ``CDC.tmp.<uuid hex>``) and
# other writers' of the same layout (TiCDC's, a dashed uuid); only ours are ever deleted.
_TEMPORARY = re.compile(r"\.tmp\.[0-9A-Za-z_-]+$")
_OUR_TEMPORARY = re.compile(r"\.tmp\.[0-9a-f]{32}$")


def is_temporary(path: str) -> bool:
    """Whether ``path`` names a temporary file of a local write that was never renamed into place: readers skip
    it, and only a crash leaves one behind (``remove_temporary``)."""
    return _TEMPORARY.search(path) is not None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``attempts`` tries in total; the n-th retry waits ``min(base_delay * 2**n, max_delay)`` seconds."""

    attempts: int = 6
    base_delay: float = 0.1
    max_delay: float = 2.0


class ExternalStorage:
    """Atomic whole-file I/O under a sink root. Build with :meth:`from_uri` or :meth:`from_config`."""

    def __init__(self, uri: SinkURI, *, retry: RetryPolicy | None = None, filesystem: Any = None) -> None:
        self.uri = uri
        self.retry = retry or RetryPolicy()
        self._fs = filesystem
        self._secrets = tuple(v for k, v in uri.params if is_secret_param(k) and len(v) >= 4)

    @classmethod
    def from_uri(cls, uri: str | SinkURI, *, retry: RetryPolicy | None = None) -> ExternalStorage:
        """Raises ConfigError for a malformed URI."""
        return cls(uri if isinstance(uri, SinkURI) else SinkURI.parse(uri), retry=retry)

    @classmethod
    def from_config(cls, config: Any, *, retry: RetryPolicy | None = None) -> ExternalStorage:
        """From a ``StorageSinkConfig`` (its URI carries the backend parameters)."""
        return cls(config.uri, retry=retry)

    def with_filesystem(self, filesystem: Any) -> ExternalStorage:
        """A copy that uses ``filesystem`` (tests wrap the real one to inject faults)."""
        return ExternalStorage(self.uri, retry=self.retry, filesystem=filesystem)

    # -- pickling: drop the client, rebuild lazily on first use
    def __getstate__(self) -> dict[str, Any]:
        return {"uri": self.uri, "retry": self.retry}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["uri"], retry=state["retry"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"ExternalStorage({self.uri.masked()!r})"

    @property
    def filesystem(self) -> Any:
        if self._fs is None:
            self._fs = _build_filesystem(self.uri)
        return self._fs

    @property
    def is_local(self) -> bool:
        return self.uri.scheme == "file"

    def full_path(self, path: str) -> str:
        root = self.uri.root
        return f"{root}/{path}" if path else root

    # -- operations
    def write(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` atomically (replacing an existing file)."""
        full = self.full_path(path)
        if self.is_local:
            self._retry("write", path, lambda: self._write_local(full, data))
        else:
            self._retry("write", path, lambda: self.filesystem.pipe_file(full, data))

    def _write_local(self, full: str, data: bytes) -> None:
        fs = self.filesystem
        tmp = f"{full}.tmp.{uuid.uuid4().hex}"
        try:
            with fs.open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            fs.mv(tmp, full)
        except Exception:
            try:
                fs.rm_file(tmp)
            except Exception:
                pass
            raise

    def stage(self, directory: str, pieces: Iterable[bytes]) -> str:
        """Write ``pieces`` to a new temporary file in ``directory`` (local storage only) and return its name, for
        ``append``, ``publish`` (durable under its final name) or ``discard``. A temporary name is never a data
        file's (``*.tmp.<uuid>``: readers skip it). Raises StorageError."""
        name = f"{directory}/CDC.tmp.{uuid.uuid4().hex}"
        self.append(name, pieces)
        return name

    def append(self, staged: str, pieces: Iterable[bytes]) -> None:
        """Append ``pieces`` to the temporary file ``staged``. Not retried (an append is not idempotent); raises
        StorageError."""
        try:
            with self.filesystem.open(self.full_path(staged), "ab") as f:
                for piece in pieces:
                    f.write(piece)
        except Exception as e:
            raise self._error("write", staged, e, False, 1) from None

    def publish(self, staged: str, path: str) -> None:
        """Make the temporary file ``staged`` durable (fsync) and then visible as ``path`` (a rename, atomic on
        local storage: a reader sees all of it or nothing). Raises StorageError."""
        fs = self.filesystem
        tmp, full = self.full_path(staged), self.full_path(path)

        def op() -> None:
            with fs.open(tmp, "ab") as f:
                f.flush()
                os.fsync(f.fileno())
            fs.mv(tmp, full)  # the local filesystem makes the directory (auto_mkdir)

        self._retry("write", path, op)

    def discard(self, staged: str) -> None:
        """Delete a temporary file of ``stage`` (a failed task's: its data is written again by the retry)."""
        self.delete(staged)

    def remove_temporary(self) -> int:
        """Delete the temporary files a killed writer left under the root (local storage only: object stores get
        whole PUTs) and return how many; files of other names are left alone. Call it only when no writer of this root
        is running."""
        if not self.is_local:
            return 0
        leftover = self._retry("list", "", self._local_temporaries)
        for path in leftover:
            self.delete(path)
        return len(leftover)

    def _local_temporaries(self) -> list[str]:
        """Our temporary files under a local root, relative to it. Reads directory entries only (``os.walk``): the
        writers make them beside any file of the tree, and ``list`` (fsspec) stats every file, an order of magnitude
        slower on a large tree. Raises OSError (a directory that cannot be read)."""
        root = self.full_path("")

        def unreadable(e: OSError) -> None:
            if not isinstance(e, FileNotFoundError):  # no root yet, or a directory deleted meanwhile: nothing there
                raise e

        found = []
        for directory, _dirs, files in os.walk(root, onerror=unreadable):
            rel = os.path.relpath(directory, root)
            found += [name if rel == "." else f"{rel}/{name}" for name in files if _OUR_TEMPORARY.search(name)]
        return found

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None when it does not exist."""
        full = self.full_path(path)

        def op() -> bytes | None:
            try:
                data: bytes = self.filesystem.cat_file(full)
            except FileNotFoundError:
                return None
            return data

        return self._retry("read", path, op)

    def size(self, path: str) -> int | None:
        """Size in bytes, or None when the file does not exist. Unlike ``fs.exists`` this never turns a
        transient error into "missing" (which could make a writer overwrite a file)."""
        full = self.full_path(path)

        def op() -> int | None:
            try:
                info = self.filesystem.info(full)
            except FileNotFoundError:
                return None
            if info.get("type") == "directory":
                return None
            return int(info.get("size") or 0)

        return self._retry("stat", path, op)

    def exists(self, path: str) -> bool:
        return self.size(path) is not None

    def list(self, prefix: str = "") -> list[str]:
        """Every file under directory ``prefix`` (recursively), as sorted paths relative to the root.

        A directory or prefix not created yet lists as empty (a writer creates it with its first file), but a
        missing bucket or container raises StorageError: it is not an empty tree, nothing will ever appear in it,
        and the caller (``cdc redo meta``, a consumer) must say so instead of "nothing found"."""
        full = self.full_path(prefix.strip("/"))
        root = self.full_path("")
        fs = self.filesystem

        def op() -> list[str]:
            fs.invalidate_cache()
            try:
                found = fs.find(full, detail=False)
            except FileNotFoundError:
                if self.is_local or self._bucket_exists():
                    return []
                raise
            out = []
            for name in found:
                name = name.lstrip("/") if not self.is_local else name
                base = root.lstrip("/") if not self.is_local else root
                if name.startswith(base + "/"):
                    out.append(name[len(base) + 1 :])
            return sorted(out)

        return self._retry("list", prefix, op)

    def _bucket_exists(self) -> bool:
        """Whether an object store's bucket or container (the root's first segment) exists: object stores list a
        missing prefix as empty, but some raise FileNotFoundError for it as for a missing bucket."""
        bucket = self.uri.root.lstrip("/").split("/", 1)[0]
        return bool(self.filesystem.exists(bucket))

    def delete(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""
        full = self.full_path(path)

        def op() -> None:
            try:
                self.filesystem.rm_file(full)
            except FileNotFoundError:
                pass

        self._retry("delete", path, op)

    # -- retries and error mapping
    def _retry(self, op: str, path: str, fn: Callable[[], T]) -> T:
        attempt = 0
        while True:
            try:
                return fn()
            except StorageError:
                raise
            except Exception as e:
                attempt += 1
                transient = is_transient(e)
                if not transient or attempt >= self.retry.attempts:
                    raise self._error(op, path, e, transient, attempt) from None
                delay = min(self.retry.base_delay * (2 ** (attempt - 1)), self.retry.max_delay)
                log.debug("storage %s %s failed (%s), retry %d in %.2fs", op, path, type(e).__name__, attempt, delay)
                if delay > 0:
                    time.sleep(delay)

    def _error(self, op: str, path: str, e: BaseException, transient: bool, attempts: int) -> StorageError:
        where = f"{self.uri.masked().split('?', 1)[0]}/{path}".rstrip("/")
        detail = self._scrub(f"{type(e).__name__}: {e}")[:300].replace("\n", " ")
        kind = classify_permanent(e)
        if transient:
            return StorageError(
                f"{op} {where} failed after {attempts} attempts: {detail}; check that the storage is reachable",
                retryable=True,
            )
        if kind == "not-found":
            return StorageError(
                f"{op} {where} failed: bucket or container does not exist ({detail}); create it or fix the sink URI"
            )
        if kind == "denied":
            return StorageError(f"{op} {where} failed: access denied ({detail}); check the credentials in the URI")
        return StorageError(f"{op} {where} failed: {detail}")

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return _SAS_SIG.sub(lambda m: f"{m.group(1)}={MASK}", text)


def is_transient(e: BaseException) -> bool:
    """Whether retrying the same storage operation may succeed."""
    if isinstance(e, FileNotFoundError | PermissionError | IsADirectoryError | NotADirectoryError | FileExistsError):
        return False
    if isinstance(e, ConnectionError | TimeoutError):
        return True
    for attr in ("status_code", "status", "code"):
        status = getattr(e, attr, None)
        if isinstance(status, int) and status in _TRANSIENT_STATUS:
            return True
    if isinstance(e, OSError) and e.errno in _TRANSIENT_ERRNO:
        return True
    name = type(e).__name__.lower()
    return any(word in name for word in _TRANSIENT_NAMES)


def classify_permanent(e: BaseException) -> str:
    """``not-found`` (bucket/container missing), ``denied`` or ``other``."""
    text = f"{type(e).__name__} {e}".lower().replace(" ", "")
    if isinstance(e, PermissionError) or any(w in text for w in _DENIED_NAMES):
        return "denied"
    if isinstance(e, FileNotFoundError) or any(w in text for w in _NOT_FOUND_NAMES):
        return "not-found"
    return "other"


def _build_filesystem(uri: SinkURI) -> Any:
    """The fsspec filesystem for a URI's scheme (``_FILESYSTEMS``)."""
    build = _FILESYSTEMS.get(uri.scheme)
    if build is None:
        raise StorageError(f"scheme {uri.scheme!r} has no filesystem")
    return build(dict(uri.params))


# Backends are imported by their builder so that importing this module stays cheap.
def _local(p: dict[str, str]) -> Any:
    from fsspec.implementations.local import LocalFileSystem

    return LocalFileSystem(auto_mkdir=True)


def _noop(p: dict[str, str]) -> Any:
    return _NoopFileSystem()


def _s3(p: dict[str, str]) -> Any:
    import s3fs

    extra: dict[str, str] = {}
    for key, arg in (("storage-class", "StorageClass"), ("sse", "ServerSideEncryption"),
                     ("sse-kms-key-id", "SSEKMSKeyId"), ("acl", "ACL")):  # fmt: skip
        if p.get(key):
            extra[arg] = p[key]
    path_style = p.get("force-path-style", "true").lower() in ("1", "t", "true")
    client_kwargs: dict[str, Any] = {}
    if p.get("region"):
        client_kwargs["region_name"] = p["region"]
    return s3fs.S3FileSystem(
        key=p.get("access-key") or None,
        secret=p.get("secret-access-key") or None,
        token=p.get("session-token") or None,
        endpoint_url=p.get("endpoint") or None,
        client_kwargs=client_kwargs,
        config_kwargs={"s3": {"addressing_style": "path" if path_style else "auto"}},
        s3_additional_kwargs=extra or None,
        use_listings_cache=False,
    )


def _gcs(p: dict[str, str]) -> Any:
    # gcsfs.core.GCSFileSystem, not the package default ExtendedGcsFileSystem, which probes a gRPC control
    # API per bucket (60 s stall against emulators; see shared/ENVIRONMENT.md §6).
    from gcsfs.core import GCSFileSystem

    token: Any = p.get("credentials-file") or ("anon" if p.get("endpoint") else None)
    return GCSFileSystem(
        token=token,
        endpoint_url=p.get("endpoint") or None,
        # the project only matters for listing or creating buckets, which the sink never does
        project=p.get("project") or os.environ.get("GOOGLE_CLOUD_PROJECT") or "default",
        use_listings_cache=False,
    )


def _azure(p: dict[str, str]) -> Any:
    import adlfs

    account = p.get("account-name") or os.environ.get("AZURE_STORAGE_ACCOUNT", "")
    endpoint = p.get("endpoint")
    if endpoint:
        conn = f"BlobEndpoint={endpoint.rstrip('/')};"
        if account:
            conn = f"AccountName={account};" + conn
        if p.get("account-key"):
            conn += f"AccountKey={p['account-key']};"
        if p.get("sas-token"):
            conn += f"SharedAccessSignature={p['sas-token'].lstrip('?')};"
        return adlfs.AzureBlobFileSystem(connection_string=conn, use_listings_cache=False)
    return adlfs.AzureBlobFileSystem(
        account_name=account or None,
        account_key=p.get("account-key") or None,
        sas_token=p.get("sas-token") or None,
        use_listings_cache=False,
    )


class _NoopFileSystem:
    """TiCDC's ``noop``/``blackhole`` storage: writes are dropped and nothing is ever found. Only the fsspec calls
    ``ExternalStorage`` makes."""

    def pipe_file(self, path: str, data: bytes) -> None:
        return None

    def cat_file(self, path: str) -> bytes:
        raise FileNotFoundError(path)

    def info(self, path: str) -> dict[str, Any]:
        raise FileNotFoundError(path)

    def find(self, path: str, detail: bool = False) -> list[str]:
        return []

    def rm_file(self, path: str) -> None:
        return None

    def invalidate_cache(self) -> None:
        return None


_FILESYSTEMS: dict[str, Callable[[dict[str, str]], Any]] = {
    "file": _local, "noop": _noop, "s3": _s3, "gcs": _gcs, "azure": _azure,
}  # fmt: skip
