"""The changefeed configuration file (``cdc cli changefeed create --config cf.toml``): TiCDC's ReplicaConfig.

The canonical form is the TOML document with TiCDC's kebab-case keys (``case-sensitive``, ``[filter] rules``,
``[sink] date-separator`` …). :meth:`ReplicaConfig.from_toml` checks the form: every key we know, types, and
unknown keys rejected by name. :meth:`ReplicaConfig.validate` applies TiCDC's Go types to the keys of ``[sink]``
and of the kept sections (``toml_types``) and TiCDC's ``ValidateAndAdjust`` rules
between values (durations, sync point); the changefeed manager calls it on create and update, not on reading
the metadata store, so a rule added later never makes a stored changefeed unreadable. The ``[sink]`` table is
validated together with the sink URI by the sink's own config (``sparkcdc.sink.base.sink_config``). The Open API
carries the same data as TiCDC's snake_case JSON
(``replica_config``); :meth:`ReplicaConfig.to_api` / :meth:`ReplicaConfig.from_api` convert, and
``from_api(to_api(c)) == c`` and ``from_toml(to_toml(c)) == c`` hold for every config ``from_toml`` accepts
(what a GET returns, a PUT takes back unchanged).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from sparkcdc.changefeed import sink_keys, toml_types
from sparkcdc.changefeed.consistent import ConsistentConfig
from sparkcdc.changefeed.snapshot import SnapshotConfig
from sparkcdc.errors import ConfigError
from sparkcdc.filter.event_filter import EventFilter, EventFilterRule
from sparkcdc.filter.system_schemas import is_system_schema
from sparkcdc.filter.table_filter import TableFilter
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.events import DDLEvent
from sparkcdc.model.table import TableInfo
from sparkcdc.storage import duration as go_duration

ERR_REPLICA_CONFIG = "CDC:ErrInvalidReplicaConfig"
# TiCDC fails a changefeed whose replicated table loses its only key with a plain error: its owner shows this code.
ERR_INELIGIBLE_AFTER_DDL = "CDC:ErrOwnerUnknown"

DEFAULT_MEMORY_QUOTA = 1024 * 1024 * 1024
# TiCDC's lower bounds (pkg/config/replica_config.go); the sync point ones apply when enable-sync-point is on.
MIN_SYNC_POINT_INTERVAL_NS = 30 * 10**9
MIN_SYNC_POINT_RETENTION_NS = 3600 * 10**9
MIN_CHANGEFEED_ERROR_STUCK_DURATION_NS = 30 * 60 * 10**9
_INT64 = 1 << 63
_UINT64 = 1 << 64

# Top-level keys: name -> (kind, default). Tables are handled separately.
_SCALARS: dict[str, tuple[type, Any]] = {
    "memory-quota": (int, DEFAULT_MEMORY_QUOTA),
    "case-sensitive": (bool, False),
    "force-replicate": (bool, False),
    "ignore-ineligible-table": (bool, False),
    "check-gc-safe-point": (bool, True),
    "enable-sync-point": (bool, False),
    "enable-table-monitor": (bool, False),
    "bdr-mode": (bool, False),
    "sql-mode": (str, ""),
}
_DURATIONS: dict[str, int] = {
    "sync-point-interval": 10 * 60 * 10**9,
    "sync-point-retention": 24 * 3600 * 10**9,
    "changefeed-error-stuck-duration": 30 * 60 * 10**9,
}
# Sections TiCDC has and we accept but do not act on: kept and shown, keys (and their types) checked.
_PASSTHROUGH: dict[str, frozenset[str]] = {name: frozenset(schema) for name, schema in toml_types.SECTIONS.items()}
_FILTER_KEYS = frozenset({"rules", "ignore-txn-start-ts", "event-filters"})
_MOUNTER_KEYS = frozenset({"worker-num"})
_TOP_KEYS = frozenset({*_SCALARS, *_DURATIONS, *_PASSTHROUGH, "filter", "mounter", "sink", "snapshot"})

# TOML key <-> Open API JSON key where TiCDC does not just swap '-' for '_'.
_TO_API_RENAMES = {"file-index-digit": "file_index_width", "advance-timeout-in-sec": "advance_timeout"}
_FROM_API_RENAMES = {v: k for k, v in _TO_API_RENAMES.items()}


def parse_duration(text: str, where: str) -> int:
    """Go ``time.ParseDuration`` (``10m``, ``1h30m``, ``1.5s``, ``-5s``, ``0``) in nanoseconds.

    Raises ConfigError (``CDC:ErrInvalidReplicaConfig``) naming ``where``.
    """
    try:
        return go_duration.parse_duration(text, key=where)
    except ConfigError as e:
        problem = "overflows a Go duration (int64)" if "overflows" in e.message else "is not a Go duration"
        raise ConfigError(
            f"{where}: invalid duration {text!r}: {problem}; use Go syntax such as 10m or 1h30m",
            code=ERR_REPLICA_CONFIG,
        ) from e


def format_duration(ns: int) -> str:
    """Go ``Duration.String`` (``10m0s``, ``1.5s``, ``250ms``, ``-10m0s``): exact, so it parses back to ``ns``."""
    return go_duration.format_duration(ns)


def read_toml_file(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; raises ConfigError naming the file and, for syntax errors, the line and column."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read changefeed config {p}: {e.strerror or e}", code=ERR_REPLICA_CONFIG) from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"changefeed config {p} is not UTF-8 text", code=ERR_REPLICA_CONFIG) from e
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: invalid TOML: {e}", code=ERR_REPLICA_CONFIG) from e


def merge_documents(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """``overlay`` on top of ``base``, table by table (how TiCDC decodes an update's TOML onto the old config)."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_documents(out[key], value)
        else:
            out[key] = value
    return out


def _check_type(value: Any, kind: type, where: str) -> Any:
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        raise ConfigError(
            f"{where}: expected {kind.__name__}, got {type(value).__name__} {value!r}", code=ERR_REPLICA_CONFIG
        )
    return value


def _check_keys(table: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"unknown configuration option {where}{key!r}; allowed: {', '.join(sorted(allowed))}",
                code=ERR_REPLICA_CONFIG,
            )


def _check_portable(value: Any, where: str) -> None:
    """Refuse what would not come back the same from a GET: a key with ``_`` (TiCDC's TOML keys are
    kebab-case and the Open API spells every ``-`` as ``_``, so it would return under another name), and a
    value JSON cannot carry (TOML dates and times, NaN, infinity)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if "_" in str(key):
                raise ConfigError(
                    f"unknown configuration option {where}.{key!r}; TiCDC's keys are kebab-case "
                    f"({str(key).replace('_', '-')!r})",
                    code=ERR_REPLICA_CONFIG,
                )
            _check_portable(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check_portable(item, f"{where}[{i}]")
    elif not isinstance(value, str | int | float) or (isinstance(value, float) and not math.isfinite(value)):
        raise ConfigError(
            f"{where}: {value!r} is not a configuration value; use a string, number, boolean, array or table",
            code=ERR_REPLICA_CONFIG,
        )


def _table(doc: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = doc.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}{key}: must be a table, got {type(value).__name__}", code=ERR_REPLICA_CONFIG)
    return value


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain dicts/lists of a frozen mapping (for JSON and TOML writers)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class FilterConfig:
    rules: tuple[str, ...] = ("*.*",)
    ignore_txn_start_ts: tuple[int, ...] = ()
    event_filters: tuple[EventFilterRule, ...] = ()


@dataclass(frozen=True)
class ReplicaConfig:
    """A changefeed's configuration. Build with :meth:`from_toml`, :meth:`load` or :meth:`from_api`.

    ``sink`` is the ``[sink]`` table as written (kebab-case keys, nested ``csv`` / ``cloud-storage-config``),
    read-only; the storage sink turns it into its own config. ``sections`` holds the accepted-but-unused
    TiCDC sections (``consistent``, ``scheduler``, ``integrity``, ``synced-status``) verbatim.
    """

    memory_quota: int = DEFAULT_MEMORY_QUOTA
    case_sensitive: bool = False
    force_replicate: bool = False
    ignore_ineligible_table: bool = False
    check_gc_safe_point: bool = True
    enable_sync_point: bool = False
    enable_table_monitor: bool = False
    bdr_mode: bool = False
    sql_mode: str = ""
    sync_point_interval_ns: int = _DURATIONS["sync-point-interval"]
    sync_point_retention_ns: int = _DURATIONS["sync-point-retention"]
    changefeed_error_stuck_duration_ns: int = _DURATIONS["changefeed-error-stuck-duration"]
    filter: FilterConfig = field(default_factory=FilterConfig)
    mounter_worker_num: int = 16
    snapshot: SnapshotConfig = field(default_factory=SnapshotConfig)
    sink: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    sections: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path) -> ReplicaConfig:
        """Read and validate a changefeed TOML file. Raises ConfigError naming the file, line or key."""
        return cls.from_document(read_toml_file(path), source=str(path))

    @classmethod
    def from_toml_text(cls, text: str, source: str = "<config>") -> ReplicaConfig:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{source}: invalid TOML: {e}", code=ERR_REPLICA_CONFIG) from e
        return cls.from_document(doc, source)

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], source: str) -> ReplicaConfig:
        """:meth:`from_toml` with errors prefixed by ``source`` (the file name)."""
        try:
            return cls.from_toml(doc)
        except ConfigError as e:
            raise ConfigError(f"{source}: {e.message}", code=e.code) from e

    @classmethod
    def from_toml(cls, doc: Mapping[str, Any]) -> ReplicaConfig:
        """Validate a parsed TOML document (kebab-case keys). Raises ConfigError naming the key."""
        if not isinstance(doc, Mapping):
            raise ConfigError("changefeed config must be a table", code=ERR_REPLICA_CONFIG)
        _check_keys(doc, _TOP_KEYS, "")
        values: dict[str, Any] = {}
        for key, (kind, _) in _SCALARS.items():
            if key in doc:
                values[key.replace("-", "_")] = _check_type(doc[key], kind, key)
        if not 0 < values.get("memory_quota", 1) < _UINT64:
            raise ConfigError("memory-quota: must be greater than 0 and fit in 64 bits", code=ERR_REPLICA_CONFIG)
        for key in _DURATIONS:
            if key in doc:
                raw = doc[key]
                ns = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
                if ns is None:
                    ns = parse_duration(_check_type(raw, str, key), key)
                elif not abs(ns) < _INT64:
                    raise ConfigError(f"{key}: {ns} ns overflows a Go duration (int64)", code=ERR_REPLICA_CONFIG)
                values[key.replace("-", "_") + "_ns"] = ns

        flt = _table(doc, "filter", "")
        _check_keys(flt, _FILTER_KEYS, "filter.")
        rules = flt.get("rules", ["*.*"])
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise ConfigError("filter.rules: must be a list of strings", code=ERR_REPLICA_CONFIG)
        case_sensitive = bool(values.get("case_sensitive", False))
        TableFilter.parse(rules, case_sensitive=case_sensitive)  # raises CDC:ErrFilterRuleInvalid
        start_ts = flt.get("ignore-txn-start-ts", [])
        if not isinstance(start_ts, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) and 0 <= t < _UINT64 for t in start_ts
        ):
            raise ConfigError(
                "filter.ignore-txn-start-ts: must be a list of non-negative integers (TSOs)", code=ERR_REPLICA_CONFIG
            )
        raw_events = flt.get("event-filters", [])
        if not isinstance(raw_events, list):
            raise ConfigError("filter.event-filters: must be an array of tables", code=ERR_REPLICA_CONFIG)
        events = tuple(EventFilterRule.from_toml(r, f"filter.event-filters[{i}]") for i, r in enumerate(raw_events))
        values["filter"] = FilterConfig(tuple(rules) or ("*.*",), tuple(start_ts), events)

        mounter = _table(doc, "mounter", "")
        _check_keys(mounter, _MOUNTER_KEYS, "mounter.")
        if "worker-num" in mounter:
            values["mounter_worker_num"] = _check_type(mounter["worker-num"], int, "mounter.worker-num")

        values["snapshot"] = SnapshotConfig.from_toml(_table(doc, "snapshot", ""))
        sink = _table(doc, "sink", "")
        _check_portable(sink, "sink")
        values["sink"] = _freeze(sink)
        sections: dict[str, Any] = {}
        for name, allowed in _PASSTHROUGH.items():
            table = _table(doc, name, "")
            _check_keys(table, allowed, f"{name}.")
            _check_portable(table, name)
            if table:
                sections[name] = table
        values["sections"] = _freeze(sections)
        return cls(**values)

    def validate(self) -> None:
        """TiCDC's ``ReplicaConfig.ValidateAndAdjust`` rules between values, run on create and update, after the
        Go types of the ``[sink]`` keys and the kept sections (what TiCDC's strict decoding refuses).

        A negative duration is refused always (Go would take it; it means nothing). ``[consistent]`` follows
        TiCDC's rules (``changefeed.consistent``), and the redo log cannot go with ``[snapshot]``. With
        enable-sync-point, sync-point-interval must be at least 30s and sync-point-retention at least 1h;
        changefeed-error-stuck-duration must be at least 30m. Raises ConfigError (``CDC:ErrInvalidReplicaConfig``,
        TiCDC's wording).
        """
        toml_types.check_types(self.sink, sink_keys.SINK, "sink")
        for name, table in self.sections.items():
            toml_types.check_types(table, toml_types.SECTIONS[name], name)
        if self.consistent().enabled and self.snapshot.enabled:
            raise ConfigError(
                f'[consistent] level = "eventual" with [snapshot] mode = "{self.snapshot.mode}" is not supported: '
                "the redo log holds only what the changefeed streams, not the copied rows; copy the tables first, "
                'then create the changefeed with the redo log (mode = "never")',
                code=ERR_REPLICA_CONFIG,
            )
        for key in _DURATIONS:
            ns = getattr(self, key.replace("-", "_") + "_ns")
            if ns < 0:
                raise ConfigError(
                    f"invalid replica config, {key} {format_duration(ns)} is negative; "
                    "use a positive Go duration such as 10m",
                    code=ERR_REPLICA_CONFIG,
                )
        if self.enable_sync_point:
            if self.sync_point_interval_ns < MIN_SYNC_POINT_INTERVAL_NS:
                raise ConfigError(
                    f"invalid replica config, The SyncPointInterval:{format_duration(self.sync_point_interval_ns)} "
                    f"must be larger than {format_duration(MIN_SYNC_POINT_INTERVAL_NS)}",
                    code=ERR_REPLICA_CONFIG,
                )
            if self.sync_point_retention_ns < MIN_SYNC_POINT_RETENTION_NS:
                raise ConfigError(
                    "invalid replica config, The SyncPointRetention:"
                    f"{format_duration(self.sync_point_retention_ns)} must be larger than "
                    f"{format_duration(MIN_SYNC_POINT_RETENTION_NS)}",
                    code=ERR_REPLICA_CONFIG,
                )
        if self.changefeed_error_stuck_duration_ns < MIN_CHANGEFEED_ERROR_STUCK_DURATION_NS:
            raise ConfigError(
                "invalid replica config, The ChangefeedErrorStuckDuration:"
                f"{self.changefeed_error_stuck_duration_ns / 1e9:f} must be larger than "
                f"{MIN_CHANGEFEED_ERROR_STUCK_DURATION_NS / 1e9:f} Seconds",
                code=ERR_REPLICA_CONFIG,
            )

    # -- derived objects ----------------------------------------------------------------------------------
    def consistent(self) -> ConsistentConfig:
        """The ``[consistent]`` table, validated (TiCDC's rules; see ``changefeed.consistent``). Raises
        ConfigError."""
        return ConsistentConfig.from_toml(self.sections.get("consistent"))

    def table_filter(self) -> TableFilter:
        return TableFilter.parse(self.filter.rules, case_sensitive=self.case_sensitive)

    def event_filter(self) -> EventFilter:
        return EventFilter(self.filter.event_filters)

    def replicated(self, tables: Iterable[TableInfo]) -> list[TableInfo]:
        """The tables of ``tables`` whose rows this changefeed replicates: matched by the filter rules, outside the
        system schemas, and with a handle key unless ``force-replicate`` (TiCDC's eligible tables; their DDLs:
        :func:`replicated_ddl`)."""
        return [t for t in self._matched(tables) if t.is_eligible or self.force_replicate]

    def ineligible(self, tables: Iterable[TableInfo]) -> list[TableInfo]:
        """The tables of ``tables`` the filter rules match but that have no handle key (no primary key, no NOT NULL
        unique key): left out unless ``force-replicate``, and named by ``changefeed create`` either way."""
        return [t for t in self._matched(tables) if not t.is_eligible]

    def _matched(self, tables: Iterable[TableInfo]) -> list[TableInfo]:
        wanted = self.table_filter()
        return [t for t in tables if not is_system_schema(t.schema) and wanted.match_table(t.schema, t.table)]

    def with_sink(self, sink: Mapping[str, Any]) -> ReplicaConfig:
        return _replace(self, sink=_freeze(sink))

    def with_uri_protocol(self, sink_uri: str) -> ReplicaConfig:
        """This config with ``[sink] protocol`` set from the sink URI's ``protocol`` (the URI wins, as in TiCDC)."""
        try:
            protocol = dict(parse_qsl(urlsplit(sink_uri).query)).get("protocol")
        except ValueError:
            return self
        if not protocol or self.sink.get("protocol") == protocol:
            return self
        return self.with_sink({**thaw(self.sink), "protocol": protocol})

    # -- serialisation ------------------------------------------------------------------------------------
    def to_toml(self) -> dict[str, Any]:
        """The canonical document (kebab-case keys, every known key present; durations as Go strings)."""
        doc: dict[str, Any] = {}
        for key in _SCALARS:
            doc[key] = getattr(self, key.replace("-", "_"))
        for key in _DURATIONS:
            doc[key] = format_duration(getattr(self, key.replace("-", "_") + "_ns"))
        doc["filter"] = {
            "rules": list(self.filter.rules),
            "ignore-txn-start-ts": list(self.filter.ignore_txn_start_ts),
            "event-filters": [r.to_toml() for r in self.filter.event_filters],
        }
        doc["mounter"] = {"worker-num": self.mounter_worker_num}
        doc["snapshot"] = self.snapshot.to_toml()
        doc["sink"] = thaw(self.sink)
        doc.update(thaw(self.sections))
        return doc

    def to_api(self) -> dict[str, Any]:
        """TiCDC's Open API v2 ``ReplicaConfig`` JSON (snake_case keys, durations in nanoseconds)."""
        api: dict[str, Any] = {
            "memory_quota": self.memory_quota,
            "case_sensitive": self.case_sensitive,
            "force_replicate": self.force_replicate,
            "ignore_ineligible_table": self.ignore_ineligible_table,
            "check_gc_safe_point": self.check_gc_safe_point,
            "enable_sync_point": self.enable_sync_point,
            "enable_table_monitor": self.enable_table_monitor,
            "bdr_mode": self.bdr_mode,
            "sync_point_interval": self.sync_point_interval_ns,
            "sync_point_retention": self.sync_point_retention_ns,
            "filter": {
                "rules": list(self.filter.rules),
                "ignore_txn_start_ts": list(self.filter.ignore_txn_start_ts),
                "event_filters": [_keys_to_api(r.to_toml()) for r in self.filter.event_filters],
            },
            "mounter": {"worker_num": self.mounter_worker_num},
            "snapshot": _keys_to_api(self.snapshot.to_toml()),
            "sink": _keys_to_api(thaw(self.sink)),
        }
        for name, table in thaw(self.sections).items():
            api[name.replace("-", "_")] = _keys_to_api(table)
        api["changefeed_error_stuck_duration"] = self.changefeed_error_stuck_duration_ns
        api["sql_mode"] = self.sql_mode
        return api

    @classmethod
    def from_api(cls, api: Mapping[str, Any] | None) -> ReplicaConfig:
        """Inverse of :meth:`to_api`; ``None`` or ``{}`` gives the defaults. Raises ConfigError naming the key."""
        if not api:
            return cls()
        if not isinstance(api, Mapping):
            raise ConfigError("replica_config must be a JSON object", code=ERR_REPLICA_CONFIG)
        # JSON null means "not set" in TiCDC's API (Go nil pointers), at any depth
        return cls.from_toml(_drop_nulls(_keys_from_api(dict(api))))


def replicated_ddl(ddl: DDLEvent, force_replicate: bool) -> DDLEvent | None:
    """A table's DDL (one the filter rules matched) as a sink must see it under TiCDC's eligibility rule (tiflow's DDL
    puller, ``checkIneligibleTableDDL``): without ``force-replicate`` a table without a handle key is not replicated,
    and neither are its DDLs. None for a DDL of a table without a key after it that had none before it (or did not
    exist: its CREATE TABLE, TRUNCATE, RENAME, ALTER); a table that gains a key is replicated from that DDL on, which
    a sink then sees without the table before it (a CREATE TABLE: nothing of the table was replicated before). DROP
    TABLE and database DDLs are passed on as they are. Raises ConfigError for a replicated table losing its only key
    (TiCDC fails the changefeed there, with its unknown-error code: its rows would stop being replicated)."""
    info, pre = ddl.table_info, ddl.pre_table_info
    if force_replicate or info is None or ddl.action is DDLAction.DROP_TABLE:
        return ddl
    was = pre is not None and pre.is_eligible
    if not info.is_eligible:
        if was:
            raise ConfigError(
                f"DDL {ddl.query!r} on {ddl.schema}.{ddl.table} at commit-ts {ddl.commit_ts} leaves a replicated "
                "table without a primary key or NOT NULL unique key, so its changes would no longer be replicated; "
                "to replicate the table on without a key, pause the changefeed, set force-replicate = true, and "
                "resume it",
                code=ERR_INELIGIBLE_AFTER_DDL,
            )
        return None
    return ddl if was or pre is None else replace(ddl, pre_table_info=None)


def _replace(cfg: ReplicaConfig, **changes: Any) -> ReplicaConfig:
    from dataclasses import replace

    return replace(cfg, **changes)


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _keys_to_api(value: Any) -> Any:
    if isinstance(value, dict):
        return {_TO_API_RENAMES.get(k, k.replace("-", "_")): _keys_to_api(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys_to_api(v) for v in value]
    return value


def _keys_from_api(value: Any) -> Any:
    if isinstance(value, dict):
        return {_FROM_API_RENAMES.get(k, k.replace("_", "-")): _keys_from_api(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys_from_api(v) for v in value]
    return value
