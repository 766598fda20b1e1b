"""The lake sinks' config: where the tables live (:class:`~sparkcdc.lake.location.LakeLocation`) and the pacing."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Final

from sparkcdc.errors import ConfigError, StorageError
from sparkcdc.lake.location import ERR_SINK_URI_INVALID, META_DIR, LakeLocation
from sparkcdc.masking import mask_uri
from sparkcdc.storage.duration import parse_duration

DEFAULT_FLUSH_INTERVAL: Final = 2.0  # seconds: each batch is one commit per table, so fewer, larger batches
DEFAULT_WORKER_COUNT: Final = 4
MAX_WORKER_COUNT: Final = 512


@dataclass(frozen=True, slots=True)
class LakeSinkConfig:
    where: LakeLocation
    flush_interval: float = DEFAULT_FLUSH_INTERVAL
    worker_count: int = DEFAULT_WORKER_COUNT

    @classmethod
    def from_uri(cls, uri: str) -> LakeSinkConfig:
        """Raises ConfigError (one line, secrets masked)."""
        where, params = LakeLocation.from_uri(uri)
        flush = DEFAULT_FLUSH_INTERVAL
        if "flush-interval" in params:
            ns = parse_duration(params["flush-interval"], key="flush-interval")
            if ns <= 0:
                raise ConfigError(f"sink uri invalid '{mask_uri(uri)}': flush-interval must be positive",
                                  code=ERR_SINK_URI_INVALID)  # fmt: skip
            flush = ns / 1e9
        workers = DEFAULT_WORKER_COUNT
        if "worker-count" in params:
            text = params["worker-count"]
            if not text.isdigit() or not 1 <= int(text) <= MAX_WORKER_COUNT:
                raise ConfigError(f"sink uri invalid '{mask_uri(uri)}': worker-count must be an integer in "
                                  f"[1, {MAX_WORKER_COUNT}], not {text!r}", code=ERR_SINK_URI_INVALID)  # fmt: skip
            workers = int(text)
        return cls(where, flush, workers)


def check_writable(config: LakeSinkConfig) -> None:
    """At changefeed create: the root can be made and written, and an Iceberg catalog answers. Raises
    ConfigError saying what to fix."""
    library = {"delta": "deltalake", "iceberg": "pyiceberg"}[config.where.fmt]
    if importlib.util.find_spec(library) is None:
        raise ConfigError(f"{config.where.fmt}:// needs the {library} library: pip install 'sparkcdc[lake]'",
                          code=ERR_SINK_URI_INVALID)  # fmt: skip
    if config.where.store is not None:
        _check_store(config)
    else:
        _check_local(config)
    if config.where.fmt == "iceberg":
        from sparkcdc.lake.iceberg import check_catalog

        check_catalog(config.where)


def _check_local(config: LakeSinkConfig) -> None:
    root = config.where.root
    try:
        os.makedirs(root, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"{config.where.fmt} sink root {root}: {e.strerror or e}; give a writable directory",
                          code=ERR_SINK_URI_INVALID) from e  # fmt: skip
    if not os.access(root, os.W_OK):
        raise ConfigError(f"{config.where.fmt} sink root {root} is not writable", code=ERR_SINK_URI_INVALID)


def _check_store(config: LakeSinkConfig) -> None:
    """Writes and deletes a probe object under the root's ``.sparkcdc/``: the bucket exists and the credentials
    may write (the storage layer's errors name the bucket, never a secret)."""
    from sparkcdc.storage.external import ExternalStorage

    storage = ExternalStorage(config.where.storage_uri)
    try:
        storage.write(f"{META_DIR}/probe", b"")
        storage.delete(f"{META_DIR}/probe")
    except StorageError as e:
        raise ConfigError(f"{config.where.fmt} sink root: {e.message}", code=ERR_SINK_URI_INVALID) from e
