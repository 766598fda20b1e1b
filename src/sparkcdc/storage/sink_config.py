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

from sparkcdc.changefeed.sink_keys import SINK_KEYS
from sparkcdc.codec.csv.config import CsvConfig
from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_value
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

_CSV_KEYS = frozenset(
    {
        "delimiter",
        "quote",
        "null",
        "include-commit-ts",
        "binary-encoding-method",
        "output-old-value",
        "output-handle-key",
        "output-field-header",
    }
)
_CLOUD_KEYS = frozenset(
    {
        "worker-count",
        "flush-interval",
        "file-size",
        "output-column-id",
        "file-expiration-days",
        "file-cleanup-cron-spec",
        "flush-concurrency",
        "output-raw-change-event",
    }
)
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


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
        sink = _table(toml or {}, "sink", "changefeed config")
        _check_keys(sink, SINK_KEYS, "[sink]")
        cloud = _table(sink, "cloud-storage-config", "[sink]")
        _check_keys(cloud, _CLOUD_KEYS, "[sink.cloud-storage-config]")
        csv = _table(sink, "csv", "[sink]")
        _check_keys(csv, _CSV_KEYS, "[sink.csv]")

        allowed = _SINK_PARAMS | BACKEND_PARAMS[parsed.scheme]
        for key, _ in parsed.params:
            if key not in allowed:
                raise ConfigError(
                    f"unknown {parsed.scheme} sink URI parameter {key!r}; allowed: {', '.join(sorted(allowed))}",
                    code="CDC:ErrSinkURIInvalid",
                )
        p = dict(parsed.params)

        protocol = _protocol(p.get("protocol"), sink.get("protocol"))
        values: dict[str, Any] = {"uri": parsed, "protocol": protocol}

        worker_count = _pick_int(p, cloud, "worker-count", DEFAULT_WORKER_COUNT)
        if worker_count <= 0:
            raise ConfigError(f"invalid worker-count {worker_count}, it must be greater than 0")
        values["worker_count"] = _clamp("worker-count", worker_count, 1, MAX_WORKER_COUNT)

        interval_text = p.get("flush-interval", cloud.get("flush-interval"))
        if interval_text is None:
            interval = DEFAULT_FLUSH_INTERVAL_NS
        elif isinstance(interval_text, str):
            interval = parse_duration(interval_text, key="flush-interval")
        else:
            raise ConfigError(f"invalid flush-interval {interval_text!r}: use a Go duration string such as '5s'")
        values["flush_interval_ns"] = _clamp(
            "flush-interval", interval, MIN_FLUSH_INTERVAL_NS, MAX_FLUSH_INTERVAL_NS, render=format_duration
        )
        values["file_size"] = _clamp(
            "file-size", _pick_int(p, cloud, "file-size", DEFAULT_FILE_SIZE), MIN_FILE_SIZE, MAX_FILE_SIZE
        )

        width = _int_value("file-index-digit", sink.get("file-index-digit", 0))
        if not MIN_FILE_INDEX_WIDTH <= width <= MAX_FILE_INDEX_WIDTH:
            if "file-index-digit" in sink:
                log.warning("file-index-digit %d is out of [6, 20]; using %d", width, DEFAULT_FILE_INDEX_WIDTH)
            width = DEFAULT_FILE_INDEX_WIDTH
        values["file_index_width"] = width

        concurrency = _int_value("flush-concurrency", cloud.get("flush-concurrency", 1))
        if not 1 <= concurrency <= MAX_FLUSH_CONCURRENCY:
            log.warning("flush-concurrency %d is out of [1, 512]; using 1", concurrency)
            concurrency = 1
        values["flush_concurrency"] = concurrency

        sep = sink.get("date-separator", "day")
        if not isinstance(sep, str) or sep.lower() not in DATE_SEPARATORS:
            raise ConfigError(f"invalid date-separator {sep!r}; use one of: {', '.join(DATE_SEPARATORS)}")
        values["date_separator"] = sep

        terminator = sink.get("terminator", "\r\n")
        if not isinstance(terminator, str) or terminator == "":
            raise ConfigError(f"invalid terminator {terminator!r}; use a non-empty string such as '\\r\\n'")
        values["terminator"] = terminator

        atomicity = sink.get("transaction-atomicity", "none")
        if atomicity not in ("", "none", "table"):
            raise ConfigError(f"invalid transaction-atomicity {atomicity!r}; use one of: none, table")
        values["transaction_atomicity"] = atomicity or "none"

        values["enable_partition_separator"] = _bool_value(
            "enable-partition-separator", sink.get("enable-partition-separator", True)
        )
        values["output_column_id"] = _bool_value("output-column-id", cloud.get("output-column-id", False))
        values["output_raw_change_event"] = _bool_value(
            "output-raw-change-event", cloud.get("output-raw-change-event", False)
        )
        days = _int_value("file-expiration-days", cloud.get("file-expiration-days", 0))
        if days < 0:
            raise ConfigError(f"invalid file-expiration-days {days}; use 0 (off) or a positive number of days")
        values["file_expiration_days"] = days
        cron = cloud.get("file-cleanup-cron-spec", "0 0 2 * * *")
        if not isinstance(cron, str) or len(cron.split()) != 6:
            raise ConfigError(f"invalid file-cleanup-cron-spec {cron!r}; use 6 fields: sec min hour dom mon dow")
        values["file_cleanup_cron_spec"] = cron

        for key in ("enable-tidb-extension", "content-compatible", "only-output-updated-columns"):
            values[key.replace("-", "_")] = _bool_value(key, p.get(key, sink.get(key, False)))
        values["delete_only_output_handle_key_columns"] = _bool_value(
            "delete-only-output-handle-key-columns", sink.get("delete-only-output-handle-key-columns", False)
        )
        if protocol == "csv" and values["delete_only_output_handle_key_columns"]:
            raise ConfigError("delete-only-output-handle-key-columns is not supported by protocol csv")
        # TiCDC validates [sink.csv] for every storage sink, whatever the protocol; validating here means the
        # server refuses at create what the csv encoder would refuse when the changefeed runs.
        CsvConfig.from_options({**csv, "terminator": terminator})
        values["csv"] = MappingProxyType(dict(csv))
        values["backend"] = tuple((k, v) for k, v in parsed.params if k in BACKEND_PARAMS[parsed.scheme])
        if parsed.scheme == "s3" and "force-path-style" in p:
            _bool_value("force-path-style", p["force-path-style"])
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


def _table(parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = parent.get(key, {})
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} key {key!r} must be a table, got {type(value).__name__}")
    return value


def _check_keys(table: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(f"unknown key {key!r} in {where}; allowed: {', '.join(sorted(allowed))}")


def _protocol(from_uri: str | None, from_toml: Any) -> str:
    if from_toml is not None and not isinstance(from_toml, str):
        raise ConfigError(f"[sink] protocol must be a string; use one of: {', '.join(PROTOCOLS)}")
    if from_uri is not None and from_toml and from_uri != from_toml:
        log.warning("sink URI protocol %r overrides [sink] protocol %r", from_uri, from_toml)
    protocol = from_uri if from_uri is not None else from_toml
    if not protocol:
        raise ConfigError(f"protocol is required for a storage sink; use one of: {', '.join(PROTOCOLS)}")
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unsupported protocol {protocol!r} for a storage sink; use one of: {', '.join(PROTOCOLS)}")
    return protocol


def _pick_int(uri_params: Mapping[str, str], cloud: Mapping[str, Any], key: str, default: int) -> int:
    if key in uri_params:
        return _int_value(key, uri_params[key])
    return _int_value(key, cloud.get(key, default))


def _int_value(key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"invalid {key} {mask_value(key, str(value))!r}: must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text[:1] in "+-" else text
        if digits.isascii() and digits.isdigit():
            return int(text)
    raise ConfigError(f"invalid {key} {mask_value(key, str(value))!r}: must be an integer")


def _bool_value(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
    raise ConfigError(f"invalid {key} {value!r}: use true or false")


def _clamp(key: str, value: int, low: int, high: int, render: Any = str) -> int:
    new = min(max(value, low), high)
    if new != value:
        log.warning("%s %s is out of range [%s, %s]; using %s", key, render(value), render(low), render(high),
                    render(new))  # fmt: skip
    return new
