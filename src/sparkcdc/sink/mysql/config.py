"""The MySQL sink's configuration: the sink URI (``mysql://``, ``mysql+ssl://``, ``tidb://``, ``tidb+ssl://``) merged
with ``[sink.mysql-config]``, ``[sink] safe-mode``, the changefeed's sync point and bdr-mode settings and its redo log
(``[consistent]``), as TiCDC's
``pkg/sink/mysql/config.go`` merges them (URI beats TOML; out-of-range counts clamped to TiCDC's upper bounds with a
warning, non-positive ones refused). Every problem is one ConfigError line with ``CDC:ErrMySQLInvalidConfig`` naming
the key and where it came from; the password never appears in errors, ``str`` or ``repr``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from sparkcdc.changefeed import sink_keys
from sparkcdc.changefeed.consistent import ConsistentConfig
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.masking import mask_uri
from sparkcdc.mysql.target import MysqlTarget, session_time_zone, time_zone_problem
from sparkcdc.mysql.uri import TLS_PARAMS, UriProblem, split_uri, tls_problem
from sparkcdc.sink_options import INT32, Setting, Sources, as_bool, as_duration_ns, as_int, as_str, table
from sparkcdc.uri_query import parse_query

log = logging.getLogger(__name__)

ERR: Final = "CDC:ErrMySQLInvalidConfig"
SCHEMES: Final = ("mysql", "mysql+ssl", "tidb", "tidb+ssl")
SINK, MYSQL = "[sink]", "[sink.mysql-config]"
# URI parameter -> [sink.mysql-config] key (TiCDC's urlConfig and MySQLConfig tags): the same name but for these
_URI_NAMES: Final = {"enable-batch-dml": "batch-dml-enable", "enable-multi-statement": "multi-stmt-enable",
                     "enable-cache-prepared-statement": "cache-prep-stmts"}  # fmt: skip
MYSQL_CONFIG_KEYS: Final = frozenset(sink_keys.MYSQL_CONFIG)
URI_TO_TOML: Final = {_URI_NAMES.get(key, key): key for key in sink_keys.MYSQL_CONFIG}
URI_PARAMS: Final = frozenset({*URI_TO_TOML, "safe-mode", "has-vector-type", "enable-old-value", "bulk-load"})
# (default, TiCDC's upper bound, smallest allowed)
_COUNTS: Final = {
    "worker-count": (16, 1024, 1),
    "max-txn-row": (256, 2048, 1),
    "max-multi-update-row": (40, 256, 1),
    "max-multi-update-row-size": (1024, 8192, 0),
}
_DEFAULT_TIMEOUT_NS: Final = 2 * 60 * 10**9
_TXN_MODES: Final = ("optimistic", "pessimistic")


@dataclass(frozen=True, repr=False)
class MysqlSinkConfig:
    """Everything that shapes how the MySQL sink writes. Durations are nanoseconds. ``time_zone`` None: TiCDC's
    default, the server's zone (here: the downstream session keeps its own); ``""``: the downstream's."""

    target: MysqlTarget
    scheme: str = "mysql"
    workers: int = 16
    max_txn_row: int = 256
    max_multi_update_row: int = 40
    max_multi_update_row_size: int = 1024
    tidb_txn_mode: str = "optimistic"
    safe_mode: bool = False
    batch_dml_enable: bool = True
    multi_stmt_enable: bool = True
    cache_prep_stmts: bool = True
    time_zone: str | None = None
    time_zone_from: str = ""  # where time-zone was set (sink URI or [sink.mysql-config]), for the downstream's check
    read_timeout_ns: int = _DEFAULT_TIMEOUT_NS
    write_timeout_ns: int = _DEFAULT_TIMEOUT_NS
    dial_timeout_ns: int = _DEFAULT_TIMEOUT_NS
    enable_sync_point: bool = False
    sync_point_interval_ns: int = 10 * 60 * 10**9
    sync_point_retention_ns: int = 24 * 3600 * 10**9
    bdr_mode: bool = False
    redo: ConsistentConfig | None = None  # [consistent] level = "eventual": each batch goes to the redo log first

    @classmethod
    def from_uri(cls, uri: str, toml: Mapping[str, Any] | None = None) -> MysqlSinkConfig:
        """Raises ConfigError (one line, the password masked)."""
        doc = toml or {}
        try:
            where = split_uri(uri, SCHEMES)
        except UriProblem as e:
            raise ConfigError(_uri_problem(uri, e), code=ERR) from None
        params = dict(parse_query(where.query, uri, ERR))
        for key in params:
            if key not in URI_PARAMS:
                raise ConfigError(f"unknown MySQL sink URI parameter {key!r}; allowed: {', '.join(sorted(URI_PARAMS))}",
                                  code=ERR)  # fmt: skip
        sink = table(doc, "sink", "the changefeed config", sink_keys.SINK_KEYS)
        src = Sources(params, {SINK: sink, MYSQL: table(sink, "mysql-config", SINK, MYSQL_CONFIG_KEYS)})
        v: dict[str, Any] = {"scheme": where.scheme}
        for key, (default, upper, lower) in _COUNTS.items():
            v[key.replace("-", "_")] = _count(_pick(src, key), default, upper, lower)
        v["workers"] = v.pop("worker_count")
        mode = as_str(_pick(src, "tidb-txn-mode"), "", ERR).strip().lower()
        if mode and mode not in _TXN_MODES:
            log.warning("invalid tidb-txn-mode %r, should be pessimistic or optimistic; using optimistic", mode)
        v["tidb_txn_mode"] = mode if mode in _TXN_MODES else "optimistic"
        v["safe_mode"] = as_bool(src.pick("safe-mode", SINK), False, ERR)
        as_bool(src.pick("has-vector-type"), False, ERR)  # a boolean for TiCDC too; no effect here
        v["batch_dml_enable"] = as_bool(_pick(src, "batch-dml-enable"), True, ERR)
        v["multi_stmt_enable"] = as_bool(_pick(src, "multi-stmt-enable"), True, ERR)
        v["cache_prep_stmts"] = as_bool(_pick(src, "cache-prep-stmts"), True, ERR)
        tz = _pick(src, "time-zone")
        v["time_zone"] = None if tz is None else as_str(tz, "", ERR)
        if tz is not None and (problem := time_zone_problem(v["time_zone"])):
            raise tz.fail(problem, ERR)
        v["time_zone_from"] = tz.where if tz is not None else ""
        for key in ("read-timeout", "write-timeout", "timeout"):
            field = "dial_timeout_ns" if key == "timeout" else key.replace("-", "_") + "_ns"
            v[field] = as_duration_ns(_pick(src, key), _DEFAULT_TIMEOUT_NS, ERR)
        ssl = {k: as_str(_pick(src, k), "", ERR) for k in TLS_PARAMS}
        if bad := tls_problem(ssl):  # TiCDC loads them here too (ToTLSConfig): refused at create, not at connect
            key, reason = bad
            if not key:
                raise ConfigError(reason, code=ERR)
            raise _pick(src, key).fail(reason, ERR)  # type: ignore[union-attr]
        _replica(doc, v)
        target_params = [("connect-timeout", str(max(1, v["dial_timeout_ns"] // 10**9)))]
        target_params += [(k, path) for k, path in ssl.items() if path]
        if v["time_zone"]:
            target_params.append(("time-zone", v["time_zone"]))
        if not as_bool(src.pick("bulk-load"), True, ERR):  # ours, URI only: MysqlTarget.bulk_load
            target_params.append(("bulk-load", "false"))
        # TiCDC's MySQL sink reads no database from the path: the changefeed's tables name theirs
        target = MysqlTarget.at(replace(where, database=""), tuple(target_params))
        return cls(target=target, **v)

    # -- what the pipeline needs ------------------------------------------------------------------------
    @property
    def flush_interval(self) -> float:
        """Seconds between micro-batches while caught up: a database replica is for low latency; with a redo log,
        TiCDC's ``[consistent] flush-interval`` (the log is written, then applied, once per micro-batch)."""
        return max(0.5, self.redo.flush_interval_ms / 1000) if self.redo is not None else 0.5

    @property
    def worker_count(self) -> int:
        """Writer tasks; each owns whole tables (bounded further by the cluster's task slots)."""
        return self.workers

    def __repr__(self) -> str:
        return f"MysqlSinkConfig({self.target}, workers={self.workers}, max_txn_row={self.max_txn_row})"


_CHECK_TIMEOUT_S: Final = 10


def check_reachable(config: MysqlSinkConfig) -> None:
    """Log in to the downstream once, as TiCDC does when a changefeed is created (at most 10 s). Raises ConfigError
    (``CDC:ErrMySQLConnectionError``) naming the reason, the password masked."""
    params = tuple(p for p in config.target.params if p[0] != "connect-timeout")
    timeout = min(_CHECK_TIMEOUT_S, max(1, config.dial_timeout_ns // 10**9))
    target = replace(config.target, params=(*params, ("connect-timeout", str(timeout))))
    try:
        conn = target.connect(database="")
    except SparkcdcError as e:
        raise ConfigError(f"{e.message}; check the sink URI's host, port, user and password and that the "
                          "downstream is running", code="CDC:ErrMySQLConnectionError") from None
    try:
        _check_time_zone(conn, config)
    finally:
        conn.close()


def _check_time_zone(conn: Any, config: MysqlSinkConfig) -> None:
    """The downstream takes the write sessions' time-zone: a zone name needs its time zone tables, and MariaDB's
    offsets stop at -12:59..+13:00. Raises ConfigError naming the setting and where it came from."""
    import pymysql  # type: ignore[import-untyped]

    zone = session_time_zone(config.time_zone)
    if zone is None:
        return
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION time_zone=%s", (zone,))
    except pymysql.MySQLError as e:
        reason = e.args[1] if len(e.args) > 1 else str(e)
        raise ConfigError(f"invalid time-zone {config.time_zone!r} in {config.time_zone_from}: the downstream refuses "
                          f"it ({reason}); use an offset such as +08:00, or load the downstream's time zone tables "
                          "(mariadb-tzinfo-to-sql)", code=ERR) from None


def _uri_problem(uri: str, problem: UriProblem) -> str:
    """TiCDC's words for a sink URI naming no server; the URI is not shown when urllib misread its password."""
    if problem.kind == "scheme":
        return f"can't create MySQL sink with unsupported scheme: {problem.reason}"
    if problem.kind == "unencoded":
        return f"sink uri invalid: {problem.reason}: mysql://user:pass@host:port/"
    fix = "; use mysql://user:pass@host:port/" if problem.kind == "host" else ""
    return f"sink uri invalid '{mask_uri(uri)}': {problem.reason}{fix}"


def _pick(src: Sources, key: str) -> Setting | None:
    return src.pick(key, MYSQL, toml_key=URI_TO_TOML[key])


def _count(setting: Setting | None, default: int, upper: int, lower: int) -> int:
    value = as_int(setting, default, INT32, ERR)
    if setting is None:
        return value
    if value < lower:
        which = "greater than 0" if lower == 1 else "greater than or equal to 0"
        raise setting.fail(f"must be {which}", ERR)
    if value > upper:
        log.warning("%s %d is too large; using %d", setting.key, value, upper)
        return upper
    return value


def _replica(doc: Mapping[str, Any], v: dict[str, Any]) -> None:
    """The changefeed-level settings the sink acts on (validated by the replica config, read here)."""
    from sparkcdc.changefeed.config import ReplicaConfig

    replica = ReplicaConfig.from_toml(doc) if doc else ReplicaConfig()
    v["enable_sync_point"] = replica.enable_sync_point
    v["sync_point_interval_ns"] = replica.sync_point_interval_ns
    v["sync_point_retention_ns"] = replica.sync_point_retention_ns
    v["bdr_mode"] = replica.bdr_mode
    consistent = replica.consistent()
    v["redo"] = consistent if consistent.enabled else None
