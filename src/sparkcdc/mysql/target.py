"""MySQL/MariaDB URIs (``mysql://user:pass@host:port/?params``: downstreams, and with ``upstream=True`` the
``cdc server --upstream``), connections and write sessions.

TiCDC's MySQL sink URI shape is kept: credentials in the authority, sink options as query parameters.
Only the parameters the consumer uses are accepted; an unknown one is an error naming it. The password
never appears in ``str``/``repr`` or in error messages.

Every applier writes through ``MysqlTarget.connect_for_writes`` and checks each data statement with
``check_write``/``lossy_write_error``: a value the downstream column cannot hold (a character its charset
lacks, a string too long, a number out of range, a rounded decimal) is an error that names the table and the
column, never a silent ``?`` or cut. MySQL's default non-strict mode stores such values converted and only
warns, and a table created without a charset takes its database's default (MariaDB's stock ``test``
database is latin1), so both the session and the tables an applier creates must say what they need.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.masking import MASK, mask_uri, mask_value
from sparkcdc.mysql.uri import Authority, UriProblem, split_uri, tls_problem
from sparkcdc.uri_query import parse_query, query_param

log = logging.getLogger(__name__)

# TiCDC MySQL sink parameters that are accepted and ignored (they tune TiCDC's own sink), plus ours.
_IGNORED_PARAMS = frozenset(
    {
        "safe-mode",
        "batch-dml-enable",
        "worker-count",
        "max-txn-row",
        "max-multi-update-row",
        "multi-stmt-enable",
        "cache-prep-stmts",
        "read-timeout",
        "write-timeout",
        "timeout",
        "tidb-txn-mode",
        "enable-old-value",
    }
)
_KNOWN_PARAMS = _IGNORED_PARAMS | {"time-zone", "ssl-ca", "ssl-cert", "ssl-key", "connect-timeout", "bulk-load"}
# What ``cdc server --upstream`` takes: TLS only (the sink's other parameters tune writes).
UPSTREAM_PARAMS = frozenset({"ssl-ca", "ssl-cert", "ssl-key"})
UPSTREAM_FORM = "mysql://user:password@host:port[?ssl-ca=FILE[&ssl-cert=FILE&ssl-key=FILE]] or mysql+ssl://..."

# The write session's sql_mode, replacing the server's whole mode so every downstream behaves alike.
# STRICT_ALL_TABLES: a value a column cannot hold fails the statement (transactional or not) instead of being
# stored converted with a warning. Zero dates (no NO_ZERO_DATE / NO_ZERO_IN_DATE), invalid dates
# (ALLOW_INVALID_DATES) and 0 in AUTO_INCREMENT columns (NO_AUTO_VALUE_ON_ZERO) are legal upstream values.
# Never NO_BACKSLASH_ESCAPES or ANSI_QUOTES: ``sql_values`` renders literals with backslash escapes.
WRITE_SQL_MODE = "STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION,ALLOW_INVALID_DATES"
CHARSET = "utf8mb4"
# For databases and tables an applier creates. The binary collation keeps keys that differ only in case or
# accents distinct, as they may be upstream (TiDB's default collation is utf8mb4_bin); a case-insensitive one
# would make REPLACE merge them.
COLLATION = "utf8mb4_bin"
CHARSET_CLAUSE = f"CHARACTER SET {CHARSET} COLLATE {COLLATION}"

# MySQL/MariaDB errors and warnings that mean "the stored value is not the value given" (or, for 1364, that
# the downstream table has a column the upstream's rows do not fill). Strict mode raises most as errors; a
# few stay warnings or notes even then (1265: a DECIMAL rounded, trailing spaces cut).
_CHARSET_LOSS = frozenset({1300, 1977, 3854})  # invalid character string; cannot convert character (Maria/MySQL)
_TOO_NARROW = frozenset({1264, 1265, 1406, 1916, 1917})  # out of range, truncated, too long, overflow
_WRONG_VALUE = frozenset({1048, 1263, 1292, 1299, 1364, 1366, 1367, 1918})  # NULL, bad value, no default
LOSSY_WRITE_CODES = _CHARSET_LOSS | _TOO_NARROW | _WRONG_VALUE
_COLUMN_RE = re.compile(r"for column ((?:`(?:[^`]|``)*`\.)*`(?:[^`]|``)*`|'[^']*')|(?:[Cc]olumn|Field) '([^']*)'")


@dataclass(frozen=True)
class MysqlTarget:
    """Where a MySQL-compatible server is and how to log in. The password is masked in every repr."""

    host: str
    port: int = 3306
    user: str = "root"
    password: str = field(default="", repr=False)
    database: str = ""
    params: tuple[tuple[str, str], ...] = ()
    tls: bool = False  # mysql+ssl:// or tidb+ssl://: TLS even without ssl-ca (server certificate not verified)

    @classmethod
    def parse(cls, uri: str, *, upstream: bool = False) -> MysqlTarget:
        """Parse ``mysql://user:pass@host:port/db?params`` (also ``tidb://``, ``mariadb://`` and the ``+ssl`` schemes;
        the authority and TLS parameters as ``sparkcdc.mysql.uri`` reads them for every MySQL URI).

        ``upstream``: the URI is ``cdc server --upstream``, the server whose binlog is captured. It takes only the
        TLS parameters (``UPSTREAM_PARAMS``) and no database (capture reads every database's binlog), and its
        errors carry ``CDC:ErrInvalidServerOption`` as TiCDC's server options do.

        Raises ConfigError naming the problem (never echoing the password).
        """
        if upstream:
            return cls._parse_upstream(uri)

        def invalid(problem: str) -> ConfigError:
            return ConfigError(f"invalid MySQL URI {mask_uri(uri)!r}: {problem}", code="CDC:ErrMySQLInvalidConfig")

        try:
            where = split_uri(uri)
        except UriProblem as e:
            if e.kind == "scheme":
                raise ConfigError(f"unsupported downstream scheme {e.reason!r} in {mask_uri(uri)!r}; use mysql:// or "
                                  "tidb://", code="CDC:ErrMySQLInvalidConfig") from None  # fmt: skip
            raise invalid(e.reason) from None
        params = parse_query(where.query, uri, "CDC:ErrMySQLInvalidConfig")  # a key given twice: refused, as the sink's
        for key, _ in params:
            if key not in _KNOWN_PARAMS:
                raise ConfigError(
                    f"unknown parameter {key!r} in MySQL URI; use one of: {', '.join(sorted(_KNOWN_PARAMS))}",
                    code="CDC:ErrMySQLInvalidConfig",
                )
        given = dict(params)
        zone = given.get("time-zone")
        if zone and (problem := time_zone_problem(zone)):
            raise ConfigError(f"invalid time-zone {zone!r} in MySQL URI: {problem}", code="CDC:ErrMySQLInvalidConfig")
        bulk = given.get("bulk-load", "true")
        if bulk not in ("true", "false"):
            raise ConfigError(f"invalid bulk-load {bulk!r} in MySQL URI: use true or false",
                              code="CDC:ErrMySQLInvalidConfig")  # fmt: skip
        if bad := tls_problem(given):
            key, reason = bad
            if not key:
                raise invalid(reason)
            raise ConfigError(f"invalid {key} {mask_value(key, given[key])!r} in MySQL URI: {reason}",
                              code="CDC:ErrMySQLInvalidConfig")  # fmt: skip
        return cls.at(where, params)

    @classmethod
    def _parse_upstream(cls, uri: str) -> MysqlTarget:
        def invalid(problem: str, fix: str = f"; use {UPSTREAM_FORM}") -> ConfigError:
            return ConfigError(f"invalid upstream URI {mask_uri(uri)!r}: {problem}{fix}",
                               code="CDC:ErrInvalidServerOption")  # fmt: skip

        try:
            where = split_uri(uri)
        except UriProblem as e:
            raise invalid(f"unsupported scheme {e.reason!r}" if e.kind == "scheme" else e.reason) from None
        if where.database:
            raise invalid(f"it names database {where.database!r}, but capture reads every database's binlog",
                          "; drop the path and choose tables with the changefeed's [filter] rules")  # fmt: skip
        params = tuple(parse_qsl(where.query, keep_blank_values=True))
        for i, (key, value) in enumerate(params):
            if key not in UPSTREAM_PARAMS:
                raise invalid(f"unknown parameter {key!r}", f"; use one of: {', '.join(sorted(UPSTREAM_PARAMS))}")
            if not value:
                raise invalid(f"parameter {key!r} has no value", "; give the PEM file's path")
            if any(k == key for k, _ in params[:i]):
                raise invalid(f"parameter {key!r} is given twice", "; give it once")
        given = dict(params)
        if bad := tls_problem(given):
            key, reason = bad
            if not key:
                raise invalid(reason, "")
            raise invalid(f"{key} {mask_value(key, given[key])!r}: {reason}",
                          "; give a readable PEM file (on every Spark worker too)")  # fmt: skip
        return cls.at(where, params)

    @classmethod
    def at(cls, where: Authority, params: tuple[tuple[str, str], ...]) -> MysqlTarget:
        """The server a parsed URI names, with the parameters its caller keeps."""
        return cls(host=where.host, port=where.port, user=where.user, password=where.password,
                   database=where.database, params=params, tls=where.tls)  # fmt: skip

    @property
    def bulk_load(self) -> bool:
        """``bulk-load`` (default true): appliers may load a batch's rows with ``LOAD DATA LOCAL INFILE`` where the
        downstream allows it (``sparkcdc.mysql.bulk_load``); false keeps them to statements."""
        return self.param("bulk-load", "true") != "false"

    def param(self, key: str, default: str = "") -> str:
        value = query_param(self.params, key)
        return default if value is None else value

    def _ssl(self) -> dict[str, Any] | None:
        """pymysql's ``ssl`` argument: the ``ssl-ca``/``ssl-cert``/``ssl-key`` files (the CA verifies the server),
        or TLS without verification for a ``+ssl`` scheme alone; None for a plain connection."""
        files = {k: self.param(f"ssl-{k}") for k in ("ca", "cert", "key")}
        if not any(files.values()):
            return {"check_hostname": False, "verify_mode": False} if self.tls else None
        return {k: v for k, v in files.items() if v}

    def client_args(self) -> dict[str, Any]:
        """pymysql's connect arguments for where this server is, who logs in and how (``ssl``: None for no TLS
        asked; then pymysql still uses TLS, unverified, when the server offers it)."""
        return {"host": self.host, "port": self.port, "user": self.user, "password": self.password,
                "ssl": self._ssl()}  # fmt: skip

    def __str__(self) -> str:
        auth = f"{self.user}:{MASK}@" if self.password else f"{self.user}@"
        return f"mysql://{auth}{self.host}:{self.port}/{self.database}"

    def connect(self, *, database: str | None = None, autocommit: bool = False, **extra: Any) -> Any:
        """A new pymysql connection (utf8mb4); with ``local_infile``, one that sends no local file but a bulk load's
        own (``OwnFileConnection``). Raises SparkcdcError (retryable) when the server is unreachable."""
        import pymysql  # type: ignore[import-untyped]

        from sparkcdc.mysql.local_infile import OwnFileConnection

        try:
            return (OwnFileConnection if extra.get("local_infile") else pymysql.connect)(
                **self.client_args(),
                database=(self.database if database is None else database) or None,
                charset="utf8mb4",
                autocommit=autocommit,
                connect_timeout=int(self.param("connect-timeout", "10") or 10),
                **extra,
            )
        except pymysql.MySQLError as e:
            errno = e.args[0] if e.args and isinstance(e.args[0], int) else 0
            raise SparkcdcError(
                f"cannot connect to downstream {self}: {safe_error(e, self.password)}",
                code="CDC:ErrMySQLConnectionError",
                retryable=errno >= 2000,  # client-side: refused, lost, timeout; 1045 access denied is final
            ) from None
        except OSError as e:  # the TLS files (ssl-ca, ssl-cert, ssl-key) went missing or bad since they were checked
            raise SparkcdcError(
                f"cannot connect to downstream {self}: its TLS files cannot be used ({type(e).__name__}: "
                f"{e.strerror or e}); check ssl-ca, ssl-cert and ssl-key",
                code="CDC:ErrMySQLInvalidConfig",
            ) from None

    def connect_for_writes(self, *, time_zone: str | None = None, local_infile: bool = False) -> Any:
        """A connection for applying changes (no default database, autocommit off) that cannot lose data
        silently: ``WRITE_SQL_MODE`` (strict), utf8mb4 on the wire, and ``time_zone`` (see
        ``session_time_zone``) when given. Reads the settings back, because a server or proxy that ignored
        them would bring the silent conversions back. ``local_infile``: the client may send the server a bulk
        load's own file, and no other (``sparkcdc.mysql.local_infile``).

        Raises SparkcdcError: retryable when the server is unreachable, final when it refuses the settings.
        """
        import pymysql

        conn = self.connect(database="", autocommit=False, sql_mode=WRITE_SQL_MODE, local_infile=local_infile)
        try:
            with conn.cursor() as cur:
                if time_zone is not None:
                    cur.execute("SET SESSION time_zone=%s", (time_zone,))
                cur.execute("SELECT @@SESSION.sql_mode, @@SESSION.character_set_client, "
                            "@@SESSION.character_set_connection")  # fmt: skip
                mode, client, connection = cur.fetchone()
            conn.commit()
        except pymysql.MySQLError as e:
            conn.close()
            errno = e.args[0] if e.args and isinstance(e.args[0], int) else 0
            raise SparkcdcError(
                f"downstream {self}: setting up the write session failed: {safe_error(e, self.password)}",
                code="CDC:ErrMySQLConnectionError",
                retryable=errno >= 2000,
            ) from None
        if "STRICT_ALL_TABLES" not in str(mode).split(",") or (client, connection) != (CHARSET, CHARSET):
            conn.close()
            raise SparkcdcError(
                f"downstream {self} did not keep the write session's settings (sql_mode={mode!r}, "
                f"character_set_client={client!r}, character_set_connection={connection!r}; wanted "
                f"STRICT_ALL_TABLES and {CHARSET}): writes could lose text silently; use a server that accepts them",
                code="CDC:ErrMySQLInvalidConfig",
            )
        return conn


_OFFSET = re.compile(r"([+-])(\d{1,2}):(\d{2})")
_OFFSET_RANGE = (-(13 * 60 + 59), 14 * 60)  # MySQL 8's; MariaDB's is narrower and checked by the server itself


def time_zone_problem(tz: str) -> str | None:
    """Why ``tz`` (a ``time-zone`` setting) is no zone a write session can take, or None: a name must be an IANA
    zone (as TiCDC's ``time.LoadLocation``), an offset ``±HH:MM`` within -13:59..+14:00; ``""``, ``system`` and
    ``local`` keep the server's zone."""
    if session_time_zone(tz) in (None, "+00:00"):
        return None
    m = _OFFSET.fullmatch(tz)
    if m is not None:
        hours, minutes = int(m.group(2)), int(m.group(3))
        total = (hours * 60 + minutes) * (-1 if m.group(1) == "-" else 1)
        if minutes >= 60 or not _OFFSET_RANGE[0] <= total <= _OFFSET_RANGE[1]:
            return "the offset is out of range; use one from -13:59 to +14:00"
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        return "unknown time zone; use an IANA name such as Asia/Shanghai or an offset such as +08:00"
    return None


def session_time_zone(tz: str | None) -> str | None:
    """The ``time_zone`` session value for a ``--timezone`` flag (None: leave the server's)."""
    if tz is None or tz == "" or tz.lower() in ("system", "local"):
        return None
    if tz.upper() in ("UTC", "Z", "GMT"):
        return "+00:00"
    return tz


def check_write(cursor: Any, *, target: MysqlTarget, schema: str, table: str) -> None:
    """After a data statement on ``cursor``: raise if the server reported a lossy conversion.

    Strict mode already fails most of them; this catches the notes it leaves (a DECIMAL rounded, trailing
    spaces cut) and any server that stores converted values. Other warnings (deprecated syntax, statements
    unsafe for a STATEMENT binlog) are logged at DEBUG. Free when the OK packet counts no warnings.

    Raises SparkcdcError (final) naming the table and the column.
    """
    if not cursor.warning_count:
        return
    cursor.execute("SHOW WARNINGS")
    warnings = cursor.fetchall()
    for level, code, message in warnings:
        if int(code) in LOSSY_WRITE_CODES:
            raise lossy_write_error(int(code), str(message), target=target, schema=schema, table=table)
        log.debug("downstream %s: %s %s writing %s.%s: %s", target, level, code, schema, table, message)


def lossy_write_error(code: int, message: str, *, target: MysqlTarget, schema: str, table: str) -> SparkcdcError:
    """The error for a write the downstream could not store exactly: which table and column, and what to do."""
    column = _column_of(message)
    name = quote_table(schema, table)
    where = f"{schema}.{table}" + (f" column {column}" if column else "")
    reason = " ".join(message.split())  # one line: the server may echo a value with line breaks
    if code in _CHARSET_LOSS or (code == 1366 and "string value" in message):
        fix = (f"the column's character set cannot store the text; convert the table to {CHARSET} "
               f"(ALTER TABLE {name} CONVERT TO CHARACTER SET {CHARSET} COLLATE {COLLATION})")  # fmt: skip
    elif code in _TOO_NARROW:
        fix = "the downstream column is narrower than the upstream's; widen it to the upstream's definition"
        if column:
            fix += f" (ALTER TABLE {name} MODIFY {quote_ident(column)} <upstream type>)"
    else:
        fix = f"the downstream table does not match the upstream's; make {name} match the upstream definition"
    return SparkcdcError(
        f"downstream {target}: writing {where} would lose data: {reason} (MySQL error {code}); {fix}, then restart "
        "the consumer: none of this batch was applied and the checkpoint stays before it",
        code="CDC:ErrMySQLTxnError",
        retryable=False,
    )


def as_lossy_write_error(error: BaseException, *, target: MysqlTarget, schema: str, table: str) -> SparkcdcError | None:
    """``lossy_write_error`` for a driver error that strict mode raised for a value, else None."""
    code = error.args[0] if error.args and isinstance(error.args[0], int) else 0
    if code not in LOSSY_WRITE_CODES:
        return None
    message = str(error.args[1]) if len(error.args) > 1 else str(error)
    if target.password:
        message = message.replace(target.password, MASK)
    return lossy_write_error(code, message, target=target, schema=schema, table=table)


def _column_of(message: str) -> str:
    """The column a server message names: ```db`.`t`.`c``` (MariaDB), ``'c'`` (MySQL), ``Column 'c'``."""
    m = _COLUMN_RE.search(message)
    if m is None:
        return ""
    if m.group(2) is not None:
        return m.group(2)
    text = m.group(1)
    if text.startswith("'"):
        return text[1:-1]
    last: str = re.findall(r"`((?:[^`]|``)*)`", text)[-1]
    return last.replace("``", "`")


def safe_error(error: BaseException, password: str) -> str:
    """The error text with the password removed (drivers sometimes echo connection strings)."""
    text = str(error)
    if password:
        text = text.replace(password, MASK)
    return text


def quote_ident(name: str) -> str:
    """A MySQL identifier in backquotes (backquotes inside doubled)."""
    return "`" + name.replace("`", "``") + "`"


def quote_table(schema: str, table: str) -> str:
    return f"{quote_ident(schema)}.{quote_ident(table)}"
