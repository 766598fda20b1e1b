"""The storage sink's configuration: the sink URI merged with the changefeed config's ``[sink]`` table.

One validating constructor, :meth:`StorageSinkConfig.from_uri`, applies TiCDC's rules
(``spec/storage-layout.md`` §9): URI parameters beat ``[sink.cloud-storage-config]``; numeric settings out of
range are clamped with a WARNING naming the old and new value; malformed values and unknown keys are
ConfigErrors naming the key and what is allowed; ``[sink.csv]`` is checked by the csv codec's own config
(``CsvConfig``, TiCDC's ``CSVConfig.validateAndAdjust``) for every protocol, as TiCDC does. Secrets never appear
in ``repr`` or errors.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sparkcdc.changefeed import sink_keys
from sparkcdc.codec.csv.config import CsvConfig
from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_value
from sparkcdc.sink_options import Setting, Sources, as_bool, as_int, as_str, table
from sparkcdc.storage.duration import MINUTE, SECOND, format_duration, parse_duration
from sparkcdc.storage.sink_uri import SinkURI

log = logging.getLogger(__name__)

PROTOCOLS: dict[str, str] = {"csv": ".csv", "canal-json": ".json"}
DATE_SEPARATORS = ("none", "year", "month", "day")

DEFAULT_WORKER_COUNT = 16
MAX_WORKER_COUNT = 512
DEFAULT_FLUSH_INTERVAL_NS = 5 * SECOND
MIN_FLUSH_INTERVAL_NS = 2 * SECOND
MAX_FLUSH_INTERVAL_NS = 10 * MINUTE
DEFAULT_FILE_SIZE = 64 * 1024 * 1024
MIN_FILE_SIZE = 1024 * 1024
MAX_FILE_SIZE = 512 * 1024 * 1024
DEFAULT_FILE_INDEX_WIDTH = 20
MIN_FILE_INDEX_WIDTH = 6
MAX_FILE_INDEX_WIDTH = 20
MAX_FLUSH_CONCURRENCY = 512

# Sink parameters every scheme accepts in the URI.
_SINK_PARAMS = frozenset(
    {
        "protocol",
        "worker-count",
        "flush-interval",
        "file-size",
        "enable-tidb-extension",
        "content-compatible",
        "only-output-updated-columns",
    }
)
# Backend parameters per canonical scheme (names as TiCDC/BR spell them).
BACKEND_PARAMS: dict[str, frozenset[str]] = {
    "file": frozenset(),
    "noop": frozenset(),
    "s3": frozenset(
        {
            "endpoint",
            "region",
            "access-key",
            "secret-access-key",
            "session-token",
            "force-path-style",
            "provider",
            "storage-class",
            "sse",
            "sse-kms-key-id",
            "acl",
        }
    ),
    "gcs": frozenset({"endpoint", "credentials-file", "storage-class", "predefined-acl", "project"}),
    "azure": frozenset({"endpoint", "account-name", "account-key", "sas-token", "access-tier", "encryption-scope"}),
}

_CSV_KEYS = frozenset(sink_keys.CSV)
_CLOUD_KEYS = frozenset(sink_keys.CLOUD_STORAGE_CONFIG)
ERR_STORAGE = "CDC:ErrStorageSinkInvalidConfig"
ERR_SINK = "CDC:ErrSinkInvalidConfig"
SINK, CLOUD = "[sink]", "[sink.cloud-storage-config]"


@dataclass(frozen=True)
class StorageSinkConfig:
    """Everything that shapes what the storage sink writes and where.

    ``flush_interval_ns`` is Go-duration nanoseconds (``flush_interval`` gives seconds). ``date_separator``
    keeps the configured spelling: TiCDC validates it case-insensitively but only the exact lower-case
    values produce a date directory (§4), so ``"DAY"`` means no date level. ``csv`` is the ``[sink.csv]``
    table passed through for the csv codec. ``backend`` holds the external-storage parameters from the URI.
    """

    uri: SinkURI
    protocol: str
    worker_count: int = DEFAULT_WORKER_COUNT
    flush_interval_ns: int = DEFAULT_FLUSH_INTERVAL_NS
    file_size: int = DEFAULT_FILE_SIZE
    file_index_width: int = DEFAULT_FILE_INDEX_WIDTH
    date_separator: str = "day"
    enable_partition_separator: bool = True
    terminator: str = "\r\n"
    flush_concurrency: int = 1
    output_column_id: bool = False
    output_raw_change_event: bool = False
    file_expiration_days: int = 0
    file_cleanup_cron_spec: str = "0 0 2 * * *"
    enable_tidb_extension: bool = False
    content_compatible: bool = False
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False
    transaction_atomicity: str = "none"
    csv: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    backend: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_uri(cls, uri: str | SinkURI, toml: Mapping[str, Any] | None = None) -> StorageSinkConfig:
        """Build the config from a sink URI and the parsed changefeed config (the whole TOML document, whose
        ``sink`` table is read; ``None`` for defaults).

        Raises ConfigError (one line, secrets masked) for a malformed URI, an unknown scheme, protocol or key,
        or a malformed value.
        """
        parsed = uri if isinstance(uri, SinkURI) else SinkURI.parse(uri)
        sink = table(toml or {}, "sink", "the changefeed config", sink_keys.SINK_KEYS)
        cloud = table(sink, "cloud-storage-config", SINK, _CLOUD_KEYS)
        csv = table(sink, "csv", SINK, _CSV_KEYS)

        allowed = _SINK_PARAMS | BACKEND_PARAMS[parsed.scheme]
        for key, _ in parsed.params:
            if key not in allowed:
                raise ConfigError(
                    f"unknown {parsed.scheme} sink URI parameter {key!r}; allowed: {', '.join(sorted(allowed))}",
                    code="CDC:ErrSinkURIInvalid",
                )
        src = Sources(dict(parsed.params), {SINK: sink, CLOUD: cloud})
        values: dict[str, Any] = {"uri": parsed, "protocol": _protocol(src)}

        count = src.pick("worker-count", CLOUD)
        worker_count = as_int(count, DEFAULT_WORKER_COUNT, code=ERR_STORAGE)
        if count is not None and worker_count <= 0:  # TiCDC's wording
            raise ConfigError(f"invalid worker-count {worker_count}, it must be greater than 0 (in {count.where})",
                              code=ERR_STORAGE)  # fmt: skip
        values["worker_count"] = _clamp("worker-count", worker_count, 1, MAX_WORKER_COUNT)
        interval = _interval(src.pick("flush-interval", CLOUD))
        values["flush_interval_ns"] = _clamp("flush-interval", interval, MIN_FLUSH_INTERVAL_NS, MAX_FLUSH_INTERVAL_NS,
                                             render=format_duration)  # fmt: skip
        file_size = as_int(src.pick("file-size", CLOUD), DEFAULT_FILE_SIZE, code=ERR_STORAGE)
        values["file_size"] = _clamp("file-size", file_size, MIN_FILE_SIZE, MAX_FILE_SIZE)

        digits = src.toml(SINK, "file-index-digit")
        width = as_int(digits, 0, code=ERR_SINK)
        if not MIN_FILE_INDEX_WIDTH <= width <= MAX_FILE_INDEX_WIDTH:
            if digits is not None:
                log.warning("file-index-digit %d is out of [6, 20]; using %d", width, DEFAULT_FILE_INDEX_WIDTH)
            width = DEFAULT_FILE_INDEX_WIDTH
        values["file_index_width"] = width

        concurrency = as_int(src.toml(CLOUD, "flush-concurrency"), 1, code=ERR_STORAGE)
        if not 1 <= concurrency <= MAX_FLUSH_CONCURRENCY:
            log.warning("flush-concurrency %d is out of [1, 512]; using 1", concurrency)
            concurrency = 1
        values["flush_concurrency"] = concurrency

        separator = src.toml(SINK, "date-separator")
        values["date_separator"] = as_str(separator, "day", code=ERR_SINK)
        if separator is not None and values["date_separator"].lower() not in DATE_SEPARATORS:
            raise separator.fail(f"use one of: {', '.join(DATE_SEPARATORS)}", ERR_SINK)

        terminator = src.toml(SINK, "terminator")
        values["terminator"] = as_str(terminator, "\r\n", code=ERR_SINK)
        if terminator is not None and values["terminator"] == "":
            raise terminator.fail("use a non-empty string such as '\\r\\n'", ERR_SINK)

        atomicity = src.toml(SINK, "transaction-atomicity")
        values["transaction_atomicity"] = as_str(atomicity, "none", code="CDC:ErrSinkURIInvalid") or "none"
        if atomicity is not None and values["transaction_atomicity"] not in ("none", "table"):
            raise atomicity.fail("use one of: none, table", "CDC:ErrSinkURIInvalid")

        values["enable_partition_separator"] = as_bool(src.toml(SINK, "enable-partition-separator"), True, ERR_SINK)
        values["output_column_id"] = as_bool(src.toml(CLOUD, "output-column-id"), False, ERR_STORAGE)
        values["output_raw_change_event"] = as_bool(src.toml(CLOUD, "output-raw-change-event"), False, ERR_STORAGE)
        expiration = src.toml(CLOUD, "file-expiration-days")
        values["file_expiration_days"] = as_int(expiration, 0, code=ERR_STORAGE)
        if expiration is not None and values["file_expiration_days"] < 0:
            raise expiration.fail("use 0 (off) or a positive number of days", ERR_STORAGE)
        cron = src.toml(CLOUD, "file-cleanup-cron-spec")
        values["file_cleanup_cron_spec"] = as_str(cron, "0 0 2 * * *", code=ERR_STORAGE)
        if cron is not None and len(values["file_cleanup_cron_spec"].split()) != 6:
            raise cron.fail("use 6 fields: sec min hour dom mon dow", ERR_STORAGE)

        for key in ("enable-tidb-extension", "content-compatible", "only-output-updated-columns"):
            values[key.replace("-", "_")] = as_bool(src.pick(key, SINK), False, ERR_SINK)
        delete_keys = src.toml(SINK, "delete-only-output-handle-key-columns")
        values["delete_only_output_handle_key_columns"] = as_bool(delete_keys, False, ERR_SINK)
        if values["protocol"] == "csv" and values["delete_only_output_handle_key_columns"]:
            raise ConfigError("delete-only-output-handle-key-columns is not supported by protocol csv: CSV "
                              "always outputs every column of a deleted row; remove it from [sink]",
                              code=ERR_SINK)  # fmt: skip
        # TiCDC validates [sink.csv] for every storage sink, whatever the protocol; validating here means the
        # server refuses at create what the csv encoder would refuse when the changefeed runs.
        CsvConfig.from_options({**csv, "terminator": values["terminator"]})
        values["csv"] = MappingProxyType(dict(csv))
        values["backend"] = tuple((k, v) for k, v in parsed.params if k in BACKEND_PARAMS[parsed.scheme])
        if parsed.scheme == "s3":
            as_bool(src.pick("force-path-style"), False, ERR_STORAGE)
        return cls(**values)

    @property
    def extension(self) -> str:
        """Data file extension: ``.csv`` or ``.json``."""
        return PROTOCOLS[self.protocol]

    @property
    def flush_interval(self) -> float:
        """Flush interval in seconds."""
        return self.flush_interval_ns / SECOND

    def backend_param(self, key: str) -> str | None:
        for k, v in self.backend:
            if k == key:
                return v
        return None

    def encoder_options(self) -> dict[str, Any]:
        """The option mapping for ``sparkcdc.codec.base.txn_encoder(self.protocol, options)``, with TiCDC's key
        names: for ``csv`` the ``[sink.csv]`` table plus ``terminator``; for ``canal-json`` ``terminator``,
        ``enable-tidb-extension``, ``content-compatible``, ``only-output-updated-columns`` and
        ``delete-only-output-handle-key-columns``."""
        if self.protocol == "csv":
            return {**self.csv, "terminator": self.terminator}
        return {
            "terminator": self.terminator,
            "enable-tidb-extension": self.enable_tidb_extension,
            "content-compatible": self.content_compatible,
            "only-output-updated-columns": self.only_output_updated_columns,
            "delete-only-output-handle-key-columns": self.delete_only_output_handle_key_columns,
        }

    def __repr__(self) -> str:
        backend = ", ".join(f"{k}={mask_value(k, v)}" for k, v in self.backend)
        return (
            f"StorageSinkConfig(uri={self.uri.masked()!r}, protocol={self.protocol!r}, "
            f"worker_count={self.worker_count}, flush_interval={format_duration(self.flush_interval_ns)!r}, "
            f"file_size={self.file_size}, file_index_width={self.file_index_width}, "
            f"date_separator={self.date_separator!r}, enable_partition_separator={self.enable_partition_separator}, "
            f"backend=[{backend}])"
        )

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        # MappingProxyType does not pickle; rebuild it from a dict.
        state = {k: getattr(self, k) for k in self.__dataclass_fields__}
        state["csv"] = dict(self.csv)
        return (_rebuild, (state,))


def _rebuild(state: dict[str, Any]) -> StorageSinkConfig:
    state["csv"] = MappingProxyType(state["csv"])
    return StorageSinkConfig(**state)


def _protocol(src: Sources) -> str:
    setting = src.pick("protocol", SINK)
    toml = src.toml(SINK, "protocol")
    if toml is not None:
        as_str(toml, "", code="CDC:ErrSinkUnknownProtocol")
    if setting is not None and toml is not None and toml.value and setting.value != toml.value:
        log.warning("sink URI protocol %r overrides [sink] protocol %r", setting.value, toml.value)
    protocol = as_str(setting, "", code="CDC:ErrSinkUnknownProtocol")
    if not protocol:
        raise ConfigError(f"protocol is required for a storage sink; use one of: {', '.join(PROTOCOLS)}",
                          code="CDC:ErrSinkUnknownProtocol")  # fmt: skip
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unsupported protocol {protocol!r} for a storage sink; use one of: {', '.join(PROTOCOLS)}",
                          code="CDC:ErrSinkUnknownProtocol")  # fmt: skip
    return protocol


def _interval(setting: Setting | None) -> int:
    """flush-interval in nanoseconds: a Go duration, clamped by the caller (so ``-10s`` is not an error)."""
    if setting is None:
        return DEFAULT_FLUSH_INTERVAL_NS
    if not isinstance(setting.value, str):
        raise setting.fail("use a Go duration string such as '5s'", ERR_STORAGE)
    try:
        return parse_duration(setting.value, key=setting.key)
    except ConfigError:
        raise setting.fail("not a Go duration (use e.g. 5s, 1m30s)", ERR_STORAGE) from None


def _clamp(key: str, value: int, low: int, high: int, render: Any = str) -> int:
    new = min(max(value, low), high)
    if new != value:
        log.warning("%s %s is out of range [%s, %s]; using %s", key, render(value), render(low), render(high),
                    render(new))  # fmt: skip
    return new
