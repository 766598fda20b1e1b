"""Upstream probes used to validate start-ts: the current TSO and the oldest TSO the upstream still retains.

``ClockUpstream`` uses this machine's clock and retains everything (no upstream configured). ``MySQLUpstream``
asks a MySQL/MariaDB server (``--upstream mysql://user:pass@host:port``, parsed by ``MysqlTarget.parse(uri,
upstream=True)`` as every upstream connection is, TLS included): its clock for the current TSO and the first event
of its oldest binary log for the retention bound. The pipeline's runner may reuse them.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from sparkcdc.errors import UpstreamError
from sparkcdc.model import tso
from sparkcdc.mysql.target import MysqlTarget

log = logging.getLogger(__name__)


class Upstream(Protocol):
    def current_tso(self) -> int: ...

    def oldest_retained_tso(self) -> int: ...


class ClockUpstream:
    """The local wall clock as TSO; everything is retained."""

    def current_tso(self) -> int:
        return tso.compose(int(time.time() * 1000))

    def oldest_retained_tso(self) -> int:
        return 0


class MySQLUpstream:
    """Probe a MySQL-compatible server. Raises UpstreamError (retryable) when it cannot be reached."""

    def __init__(self, uri: str) -> None:
        target = MysqlTarget.parse(uri, upstream=True)
        self._conn_args = target.client_args()
        self._where = f"{target.host}:{target.port}"

    def __repr__(self) -> str:
        return f"MySQLUpstream({self._where})"

    def _query(self, sql: str) -> list[tuple[Any, ...]]:
        import pymysql  # type: ignore[import-untyped]

        try:
            conn = pymysql.connect(**self._conn_args, connect_timeout=5, read_timeout=10)
        except pymysql.MySQLError as e:
            raise UpstreamError(f"cannot connect to upstream {self._where}: {e}", retryable=True) from e
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                return list(cur.fetchall())
        except pymysql.MySQLError as e:
            raise UpstreamError(f"upstream {self._where}: {sql}: {e}", retryable=True) from e
        finally:
            conn.close()

    def current_tso(self) -> int:
        """The last TSO of the previous upstream second.

        Binlog event times are whole seconds, so a transaction committed later in the current second gets a
        commit-ts of at least ``second << 18``; a millisecond-precision "now" would be above it and a
        changefeed started at that ts would skip the transaction. Ending at the previous second can only
        include a few transactions committed just before the call (at-least-once), never lose one.
        """
        rows = self._query("SELECT UNIX_TIMESTAMP()")
        return tso.compose(int(rows[0][0]) * 1000) - 1

    def oldest_retained_tso(self) -> int:
        """The smallest start-ts that misses nothing the server still has: just below the second of the first
        event (its FORMAT_DESCRIPTION) in the oldest binlog. A changefeed replicates commits after its start-ts
        and binlog times are whole seconds, so ``second << 18`` itself would refuse the default start-ts
        (``current_tso``) of an upstream started within the current second."""
        logs = self._query("SHOW BINARY LOGS")
        if not logs:
            raise UpstreamError(f"upstream {self._where} has no binary logs; enable log_bin with binlog_format=ROW")
        first = str(logs[0][0])
        from pymysqlreplication import BinLogStreamReader

        stream = BinLogStreamReader(
            connection_settings=dict(self._conn_args),
            server_id=0x5C0C,  # any id distinct from the pipeline's
            log_file=first,
            log_pos=4,
            resume_stream=True,
            blocking=False,
            is_mariadb=False,
        )
        try:
            for event in stream:
                if event.timestamp:
                    return tso.compose(int(event.timestamp) * 1000) - 1
        except Exception as e:  # the library raises bare pymysql/struct errors
            raise UpstreamError(f"cannot read binlog {first} of upstream {self._where}: {e}", retryable=True) from e
        finally:
            stream.close()
        return 0


def open_upstream(uri: str | None) -> Upstream:
    """``MySQLUpstream`` for a URI, ``ClockUpstream`` when none is configured."""
    return MySQLUpstream(uri) if uri else ClockUpstream()
