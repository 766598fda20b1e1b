"""MySQL/MariaDB downstream URIs (``mysql://user:pass@host:port/?params``) and connections.

TiCDC's MySQL sink URI shape is kept: credentials in the authority, sink options as query parameters.
Only the parameters the consumer uses are accepted; an unknown one is an error naming it. The password
never appears in ``str``/``repr`` or in error messages.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from sparkcdc.errors import ConfigError, SparkcdcError

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
_KNOWN_PARAMS = _IGNORED_PARAMS | {"time-zone", "ssl-ca", "ssl-cert", "ssl-key", "connect-timeout"}


@dataclass(frozen=True)
class MysqlTarget:
    """Where a MySQL-compatible server is and how to log in. The password is masked in every repr."""

    host: str
    port: int = 3306
    user: str = "root"
    password: str = field(default="", repr=False)
    database: str = ""
    params: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, uri: str) -> MysqlTarget:
        """Parse ``mysql://user:pass@host:port/db?params`` (also ``tidb://``, ``mariadb://``).

        Raises ConfigError naming the problem (never echoing the password).
        """
        try:
            parts = urlsplit(uri.strip())
            port = parts.port
        except ValueError as e:
            raise ConfigError(f"invalid MySQL URI {mask_uri(uri)!r}: {e}", code="CDC:ErrMySQLInvalidConfig") from e
        if parts.scheme.lower() not in ("mysql", "tidb", "mariadb", "mysql+ssl", "tidb+ssl"):
            raise ConfigError(
                f"unsupported downstream scheme {parts.scheme!r} in {mask_uri(uri)!r}; use mysql:// or tidb://",
                code="CDC:ErrMySQLInvalidConfig",
            )
        if not parts.hostname:
            raise ConfigError(f"MySQL URI {mask_uri(uri)!r} has no host", code="CDC:ErrMySQLInvalidConfig")
        params = tuple(parse_qsl(parts.query, keep_blank_values=True))
        for key, _ in params:
            if key not in _KNOWN_PARAMS:
                raise ConfigError(
                    f"unknown parameter {key!r} in MySQL URI; use one of: {', '.join(sorted(_KNOWN_PARAMS))}",
                    code="CDC:ErrMySQLInvalidConfig",
                )
        return cls(
            host=parts.hostname,
            port=port or 3306,
            user=unquote(parts.username) if parts.username else "root",
            password=unquote(parts.password) if parts.password else "",
            database=unquote(parts.path.lstrip("/")),
            params=params,
        )

    def param(self, key: str, default: str = "") -> str:
        for k, v in self.params:
            if k == key:
                return v
        return default

    def __str__(self) -> str:
        auth = f"{self.user}:******@" if self.password else f"{self.user}@"
        return f"mysql://{auth}{self.host}:{self.port}/{self.database}"

    def connect(self, *, database: str | None = None, autocommit: bool = False, **extra: Any) -> Any:
        """A new pymysql connection (utf8mb4). Raises SparkcdcError (retryable) when the server is unreachable."""
        import pymysql  # type: ignore[import-untyped]

        try:
            return pymysql.connect(
                host=self.host,
                port=self.port,
                user=self.user,
                password=self.password,
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


def mask_uri(uri: str) -> str:
    """The URI with any password replaced by ``******`` (works on malformed input too)."""
    try:
        parts = urlsplit(uri)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":******@", 1)
            return parts._replace(netloc=netloc).geturl()
    except ValueError:
        pass
    if "@" in uri and "://" in uri:
        scheme, rest = uri.split("://", 1)
        auth, _, tail = rest.rpartition("@")
        return f"{scheme}://{auth.split(':', 1)[0]}:******@{tail}"
    return uri


def safe_error(error: BaseException, password: str) -> str:
    """The error text with the password removed (drivers sometimes echo connection strings)."""
    text = str(error)
    if password:
        text = text.replace(password, "******")
    return text


def quote_ident(name: str) -> str:
    """A MySQL identifier in backquotes (backquotes inside doubled)."""
    return "`" + name.replace("`", "``") + "`"


def quote_table(schema: str, table: str) -> str:
    return f"{quote_ident(schema)}.{quote_ident(table)}"
