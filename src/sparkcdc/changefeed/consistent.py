"""``[consistent]``: TiCDC's eventually consistent replication settings (the redo log of a MySQL-sink changefeed).

TiCDC's keys, types, defaults and rules (``pkg/config/consistent.go``, ``pkg/redo/config.go``): ``level`` is
``"none"`` (default) or ``"eventual"``; with ``"eventual"``, ``storage`` names where the redo log goes (any storage
URI: ``file://`` on NFS, ``s3://``, ``gcs://``/``gs://``, ``azure://``/``azblob://``; TiCDC's ``local://`` and
``nfs://`` are local directories, ``blackhole://`` discards), ``flush-interval`` and ``meta-flush-interval`` are
milliseconds (0: the default; at least 50), ``max-log-size`` is MiB per log file (0: 64), ``compression`` is ``""``,
``"none"`` or ``"lz4"``. The worker and memory keys are checked and have no effect here (see the README). A value
TiCDC refuses is one ConfigError line naming the key; unlike TiCDC, an unknown ``level`` is refused too (TiCDC
treats it as ``"none"``, which would silently drop the redo log a user asked for).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sparkcdc.changefeed import toml_types
from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri

ERR: Final = "CDC:ErrInvalidReplicaConfig"
ERR_STORAGE: Final = "CDC:ErrConsistentStorage"
LEVELS: Final = ("none", "eventual")
COMPRESSIONS: Final = ("", "none", "lz4")
MIN_FLUSH_INTERVAL_MS: Final = 50
# TiCDC's storage schemes -> ours (``sparkcdc.storage.sink_uri.SCHEMES`` takes the rest as they are)
_LOCAL_SCHEMES: Final = {"local": "file", "nfs": "file", "blackhole": "noop"}
_WHERE: Final = "[consistent] of the changefeed config"


@dataclass(frozen=True)
class ConsistentConfig:
    """The validated ``[consistent]`` table (TiCDC's defaults). ``storage`` is the redo log's storage URI with
    TiCDC's local schemes spelled as ours (``nfs:///d`` -> ``file:///d``); it is masked in ``repr``."""

    level: str = "none"
    max_log_size_mb: int = 64
    flush_interval_ms: int = 2000
    meta_flush_interval_ms: int = 200
    encoding_worker_num: int = 16
    flush_worker_num: int = 8
    storage: str = ""
    use_file_backend: bool = False
    compression: str = ""
    flush_concurrency: int = 1

    @property
    def enabled(self) -> bool:
        """``level = "eventual"``: the redo log is written."""
        return self.level == "eventual"

    @property
    def lz4(self) -> bool:
        return self.compression == "lz4"

    def __repr__(self) -> str:
        return (f"ConsistentConfig(level={self.level!r}, storage={mask_uri(self.storage)!r}, "
                f"flush_interval_ms={self.flush_interval_ms}, compression={self.compression!r})")  # fmt: skip

    @classmethod
    def from_toml(cls, table: Mapping[str, Any] | None) -> ConsistentConfig:
        """Validate ``[consistent]`` (its TOML table, kebab-case keys; None: absent). Raises ConfigError
        (``CDC:ErrInvalidReplicaConfig``, ``CDC:ErrConsistentStorage`` for a storage scheme TiCDC has not) naming
        the key. With ``level = "none"`` only the types and the level are checked, as in TiCDC."""
        doc = dict(table or {})
        toml_types.check_types(doc, toml_types.SECTIONS["consistent"], "consistent")
        level = doc.get("level", "none")
        if level not in LEVELS:
            raise _wrong("level", level, 'use "none" or "eventual" (TiCDC\'s consistency levels)')
        if level == "none":
            return cls()
        values: dict[str, Any] = {"level": level}
        for key, field, default in (("max-log-size", "max_log_size_mb", cls.max_log_size_mb),
                                    ("encoding-worker-num", "encoding_worker_num", cls.encoding_worker_num),
                                    ("flush-worker-num", "flush_worker_num", cls.flush_worker_num),
                                    ("flush-concurrency", "flush_concurrency", cls.flush_concurrency)):  # fmt: skip
            value = doc.get(key) or default
            if value < 0:
                raise _wrong(key, value, "must not be negative (0 takes the default)")
            values[field] = value
        intervals = (("flush-interval", "flush_interval_ms", cls.flush_interval_ms),
                     ("meta-flush-interval", "meta_flush_interval_ms", cls.meta_flush_interval_ms))  # fmt: skip
        for key, field, default in intervals:
            value = doc.get(key) or default
            if value < MIN_FLUSH_INTERVAL_MS:
                raise ConfigError(f"invalid replica config, The consistent.{key}:{value} must be equal or greater "
                                  f"than {MIN_FLUSH_INTERVAL_MS} (milliseconds; 0 takes the default {default})",
                                  code=ERR)  # fmt: skip
            values[field] = value
        compression = doc.get("compression", "")
        if compression not in COMPRESSIONS:
            raise ConfigError(f"invalid replica config, The consistent.compression:{compression} must be 'none' or "
                              "'lz4'", code=ERR)  # fmt: skip
        values["compression"] = "" if compression == "none" else compression
        values["use_file_backend"] = bool(doc.get("use-file-backend", False))
        for key, percent in dict(doc.get("memory-usage") or {}).items():
            if percent > 100:
                raise _wrong(f"memory-usage.{key}", percent, "is a percentage: use 0 to 100")
        values["storage"] = storage_uri(doc.get("storage", ""))
        return cls(**values)


def storage_uri(uri: str) -> str:
    """The redo log's storage URI checked as the storage sink checks its own (scheme, bucket, parameters), without
    connecting; TiCDC's ``local``/``nfs`` become ``file``, ``blackhole`` becomes ``noop``. Raises ConfigError."""
    from sparkcdc.storage.sink_config import BACKEND_PARAMS
    from sparkcdc.storage.sink_uri import SCHEMES, SinkURI

    if not uri:
        raise ConfigError('[consistent] storage is empty, but level = "eventual" needs one: set it to the redo '
                          "log's storage URI (s3://bucket/prefix, file:///nfs/dir, gcs://..., azure://...)",
                          code=ERR)  # fmt: skip
    scheme, sep, rest = uri.partition("://")
    if sep and scheme.lower() in _LOCAL_SCHEMES:
        uri = f"{_LOCAL_SCHEMES[scheme.lower()]}://{rest}"
    elif sep and scheme.lower() not in SCHEMES:
        raise ConfigError(f"consistent storage ({scheme}) not support: invalid storage {mask_uri(uri)!r} in "
                          f"{_WHERE}; use one of: azblob, azure, blackhole, file, gcs, gs, local, nfs, s3",
                          code=ERR_STORAGE)  # fmt: skip
    try:
        parsed = SinkURI.parse(uri)
    except ConfigError as e:
        raise ConfigError(f"invalid storage in {_WHERE}: {e.message.replace('sink URI', 'storage URI')}",
                          code=ERR) from None  # fmt: skip
    allowed = BACKEND_PARAMS[parsed.scheme]
    for key, _ in parsed.params:
        if key not in allowed:
            hint = f"allowed: {', '.join(sorted(allowed))}" if allowed else f"a {parsed.raw_scheme}:// URI takes none"
            raise ConfigError(f"invalid storage {parsed.masked()!r} in {_WHERE}: unknown parameter {key!r}; {hint}",
                              code=ERR)  # fmt: skip
    return uri


def _wrong(key: str, value: Any, reason: str) -> ConfigError:
    shown = repr(value) if isinstance(value, str) else str(value)
    return ConfigError(f"invalid {key} {shown} in {_WHERE}: {reason}", code=ERR)
