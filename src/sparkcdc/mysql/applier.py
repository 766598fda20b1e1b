"""Apply ordered batches of row changes and DDLs to a MySQL/MariaDB downstream, effectively once.

Every row batch runs in ONE downstream transaction together with its checkpoint row, so after a crash the
checkpoint says exactly which rows are in the downstream. The checkpoint table is ``sparkcdc_consumer.checkpoint``
for the consumers and ``tidb_cdc.checkpoint`` for the MySQL sink (and ``cdc redo apply``, which continues the
sink's); one row per ``(changefeed, schema, table, partition)`` stream, holding a
:class:`~sparkcdc.model.steps.Checkpoint` (what each kind of stream records is said there). The DDL stream's row is
written twice around its DDL: DDL commits implicitly, so it cannot share a transaction with the checkpoint; a
pending DDL is re-run tolerating "already done" errors.

Statements are idempotent (see ``sparkcdc.mysql.statements``), so even a lost checkpoint would only replay. Where
the downstream allows it (and the URI does not say ``bulk-load=false``), the REPLACE of a batch's final images
(``bulk_load.MIN_ROWS`` or more) runs as ``LOAD DATA LOCAL INFILE … REPLACE`` in the same transaction
(``sparkcdc.mysql.bulk_load``); a load the applier cannot vouch for is rolled back and the batch applied with
statements, and the connection keeps to statements from then on.
"""

from __future__ import annotations

import logging
import select
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.filter.system_schemas import CONSUMER_SCHEMA
from sparkcdc.model import DDLAction
from sparkcdc.model.steps import AppliedRow, Checkpoint
from sparkcdc.mysql import bulk_load
from sparkcdc.mysql.bulk_load import BulkLoader, BulkRefused
from sparkcdc.mysql.statements import BatchPlan, plan_batch
from sparkcdc.mysql.target import (
    CHARSET_CLAUSE,
    MysqlTarget,
    as_lossy_write_error,
    check_write,
    quote_ident,
    safe_error,
    session_time_zone,
)

log = logging.getLogger(__name__)

CHECKPOINT_TABLE = "checkpoint"

# MySQL errors that mean "the DDL's effect is already there" (TiCDC's pkg/errorutil list).
IGNORABLE_DDL_ERRORS = frozenset({1007, 1008, 1050, 1051, 1060, 1061, 1176, 1091, 1054, 1517, 1507, 1068})
# Extra errors tolerated when re-running a DDL that may have completed before a crash (RENAME, DROP …).
REPLAYED_DDL_ERRORS = frozenset({1146, 1049, 1025})
# The code of a statement the downstream refuses for good (a missing table, a duplicate key): a changefeed fails.
ERR_QUERY = "CDC:ErrMySQLQueryError"
# Connection-level failures worth a retry.
RETRYABLE_ERRORS = frozenset({1205, 1213, 2003, 2006, 2013, 2055})

_CHECKPOINT_DDL = """CREATE TABLE IF NOT EXISTS {table} (
  changefeed VARCHAR(128) NOT NULL,
  db VARCHAR(64) NOT NULL,
  tbl VARCHAR(64) NOT NULL,
  part BIGINT NOT NULL,
  table_version BIGINT UNSIGNED NOT NULL DEFAULT 0,
  date VARCHAR(16) NOT NULL DEFAULT '',
  file_index BIGINT UNSIGNED NOT NULL DEFAULT 0,
  row_offset BIGINT UNSIGNED NOT NULL DEFAULT 0,
  commit_ts BIGINT UNSIGNED NOT NULL DEFAULT 0,
  pending_version BIGINT UNSIGNED NOT NULL DEFAULT 0,
  updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (changefeed, db, tbl, part)
) """ + CHARSET_CLAUSE

# ``updated_at`` is set on every write, also one that changes nothing else (a DDL without commit-ts run again), so
# it says when the stream was last applied (``mysql.downstream_guard``).
_UPSERT_CHECKPOINT = (
    "INSERT INTO {table} "
    "(changefeed, db, tbl, part, table_version, date, file_index, row_offset, commit_ts, pending_version) "
    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON DUPLICATE KEY UPDATE table_version=VALUES(table_version), "
    "date=VALUES(date), file_index=VALUES(file_index), row_offset=VALUES(row_offset), "
    "commit_ts=VALUES(commit_ts), pending_version=VALUES(pending_version), updated_at=CURRENT_TIMESTAMP(6)"
)


@dataclass(frozen=True, slots=True)
class ApplyStats:
    rows_in: int
    upserts: int
    deletes: int
    statements: int
    seconds: float


class MysqlApplier:
    """One downstream connection applying batches of ONE stream at a time (use one per worker thread).

    Raises SparkcdcError (``retryable`` for connection loss, deadlock, lock wait) from every method; on
    error the open transaction is rolled back, so the checkpoint never runs ahead of the data.
    """

    def __init__(self, target: MysqlTarget, *, changefeed: str = "default", time_zone: str | None = None,
                 checkpoint_schema: str = CONSUMER_SCHEMA, session: Sequence[str] = ()) -> None:  # fmt: skip
        if not changefeed or len(changefeed) > 128:
            raise ConfigError(f"changefeed id {changefeed!r} must be 1..128 characters")
        self.target = target
        self.checkpoint_schema = checkpoint_schema
        self.session = tuple(session)
        self._table = f"{quote_ident(checkpoint_schema)}.{quote_ident(CHECKPOINT_TABLE)}"
        self._upsert = _UPSERT_CHECKPOINT.format(table=self._table)
        self.changefeed = changefeed
        self.time_zone = session_time_zone(time_zone or target.param("time-zone") or None)
        self._conn: Any = None
        self._loader: BulkLoader | None = None  # this connection bulk-loads final images

    def __repr__(self) -> str:
        return f"MysqlApplier({self.target}, changefeed={self.changefeed!r})"

    # -- connection ---------------------------------------------------------------------------------
    def _connection(self) -> Any:
        if self._conn is not None and not still_open(self._conn):
            log.info("downstream %s closed an idle connection (restarted, or its wait_timeout); connecting again",
                     self.target)  # fmt: skip
            self.close()
        if self._conn is None:
            # strict: no silent '?' or cut
            conn = self.target.connect_for_writes(time_zone=self.time_zone, local_infile=self.target.bulk_load)
            try:
                with conn.cursor() as cur:
                    cur.execute("SET SESSION foreign_key_checks=0")
                    for sql in self.session:
                        cur.execute(sql)
                    cur.execute(f"CREATE DATABASE IF NOT EXISTS {quote_ident(self.checkpoint_schema)} {CHARSET_CLAUSE}")
                    cur.execute(_CHECKPOINT_DDL.format(table=self._table))
                bulk = self.target.bulk_load and bulk_load.usable(conn)
                conn.commit()
            except Exception as e:
                conn.close()
                raise self._error("setting up the session", e) from None
            self._conn = conn
            self._loader = BulkLoader() if bulk else None  # close() dropped the last connection's
        return self._conn

    def _no_bulk(self) -> None:
        if self._loader is not None:
            self._loader.close()
            self._loader = None

    def close(self) -> None:
        self._no_bulk()
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
            self._conn = None

    def _error(self, what: str, e: BaseException) -> SparkcdcError:
        if isinstance(e, SparkcdcError):
            return e
        code = e.args[0] if e.args and isinstance(e.args[0], int) else 0
        retryable = code in RETRYABLE_ERRORS or code >= 2000
        return SparkcdcError(
            f"downstream {self.target}: {what} failed: {safe_error(e, self.target.password)}",
            code="CDC:ErrMySQLTxnError" if retryable else ERR_QUERY,  # a statement the downstream refuses
            retryable=retryable,
        )

    def _rollback(self) -> None:
        if self._conn is None:
            return
        try:
            self._conn.rollback()
        except Exception:
            self.close()

    # -- checkpoints --------------------------------------------------------------------------------
    def load_checkpoints(self) -> dict[tuple[str, str, int], Checkpoint]:
        """Every stream's checkpoint of this changefeed."""
        conn = self._connection()
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT db, tbl, part, table_version, date, file_index, row_offset, commit_ts, pending_version "
                    f"FROM {self._table} WHERE changefeed=%s",
                    (self.changefeed,),
                )
                rows = cur.fetchall()
            conn.commit()
        except Exception as e:
            self._rollback()
            raise self._error("reading checkpoints", e) from None
        out = {}
        for r in rows:
            cp = Checkpoint(r[0], r[1], int(r[2]), int(r[3]), r[4], int(r[5]), int(r[6]), int(r[7]), int(r[8]))
            out[cp.key] = cp
        return out

    def stream_times(self) -> list[tuple[str, str, int, float]]:
        """``(db, tbl, part, when it was last written)`` of every stream of this changefeed, the time in seconds
        since the epoch (the downstream's clock). Raises SparkcdcError."""
        rows = self.transaction([(f"SELECT db, tbl, part, UNIX_TIMESTAMP(updated_at) FROM {self._table} "
                                  "WHERE changefeed=%s", (self.changefeed,))])[0]  # fmt: skip
        return [(r[0], r[1], int(r[2]), float(r[3])) for r in rows]

    def table_times(self, schemas: Sequence[str]) -> dict[tuple[str, str], float | None]:
        """The tables of ``schemas`` that exist downstream, with when each was created (seconds since the epoch;
        None when the server does not say). Raises SparkcdcError."""
        if not schemas:
            return {}
        sql = ("SELECT table_schema, table_name, UNIX_TIMESTAMP(create_time) FROM information_schema.tables "
               f"WHERE table_schema IN ({','.join(['%s'] * len(schemas))})")  # fmt: skip
        rows = self.transaction([(sql, schemas)])[0]
        return {(r[0], r[1]): None if r[2] is None else float(r[2]) for r in rows}

    def is_empty(self, schema: str, table: str) -> bool:
        """Whether ``schema.table`` holds no row. Raises SparkcdcError."""
        rows = self.transaction([(f"SELECT 1 FROM {quote_ident(schema)}.{quote_ident(table)} LIMIT 1", ())])[0]
        return not rows

    def delete_checkpoints(self) -> int:
        """Forget every stream of this changefeed (start over); returns how many there were. Raises SparkcdcError."""
        conn = self._connection()
        try:
            with conn.cursor() as cur:
                deleted = cur.execute(f"DELETE FROM {self._table} WHERE changefeed=%s", (self.changefeed,))
            conn.commit()
        except Exception as e:
            self._rollback()
            raise self._error("deleting checkpoints", e) from None
        return int(deleted)

    def _write_checkpoint(self, cur: Any, cp: Checkpoint) -> None:
        cur.execute(
            self._upsert,
            (
                self.changefeed,
                cp.schema,
                cp.table,
                cp.partition,
                cp.table_version,
                cp.date,
                cp.file_index,
                cp.row_offset,
                cp.commit_ts,
                cp.pending_version,
            ),
        )

    def save_checkpoint(self, cp: Checkpoint) -> None:
        """Write a checkpoint alone (e.g. skipped duplicate rows moved the position)."""
        self.apply([], cp)

    # -- rows ---------------------------------------------------------------------------------------
    def apply(self, rows: Sequence[AppliedRow], checkpoint: Checkpoint) -> ApplyStats:
        """Apply ``rows`` (one table, in commit order) and store ``checkpoint`` in the same transaction.

        A value the downstream cannot store exactly fails the whole transaction (``check_write``), so the
        checkpoint stays before it.
        """
        started = time.perf_counter()
        conn = self._connection()
        plan: BatchPlan = plan_batch(rows, load_from=bulk_load.MIN_ROWS if self._loader is not None else 0)
        try:
            self._run(conn, plan, checkpoint)
        except BulkRefused as e:
            log.warning("downstream %s: %s; rolled back, the batch and what follows on this connection go as "
                        "statements", self.target, e)  # fmt: skip
            self._rollback()
            self._no_bulk()
            conn = self._connection()
            plan = plan_batch(rows)
            self._run(conn, plan, checkpoint)
        return ApplyStats(plan.rows_in, plan.upserts, plan.deletes, len(plan.statements), time.perf_counter() - started)

    def _run(self, conn: Any, plan: BatchPlan, checkpoint: Checkpoint) -> None:
        """The plan and the checkpoint in one transaction. Raises SparkcdcError; BulkRefused with the transaction
        still open."""
        schema, table = checkpoint.schema, checkpoint.table
        try:
            with conn.cursor() as cur:
                for sql in plan.statements:
                    if isinstance(sql, str):
                        cur.execute(sql)
                        check_write(cur, target=self.target, schema=schema, table=table)
                    else:
                        assert self._loader is not None  # plan_batch makes loads only for a loader
                        self._loader.load(conn, cur, sql, target=self.target, schema=schema, table=table)
                self._write_checkpoint(cur, checkpoint)
            conn.commit()
        except BulkRefused:
            raise
        except Exception as e:
            self._rollback()
            lossy = as_lossy_write_error(e, target=self.target, schema=schema, table=table)
            if lossy is not None:
                raise lossy from None
            raise self._error(f"applying {plan.rows_in} rows to {schema}.{table}", e) from None

    # -- DDL ----------------------------------------------------------------------------------------
    def execute_ddl(self, schema: str, query: str, action: int, checkpoint: Checkpoint, *, replay: bool) -> bool:
        """Run one DDL, then store ``checkpoint`` (the table's DDL stream). Returns False when ignored.

        ``replay`` is True when a previous run may already have executed it (a pending version).
        """
        conn = self._connection()
        pending = checkpoint.advanced(pending_version=checkpoint.table_version)
        try:
            with conn.cursor() as cur:
                self._write_checkpoint(cur, replace(pending, table_version=self._ddl_base(checkpoint)))
            conn.commit()
        except Exception as e:
            self._rollback()
            raise self._error("marking a DDL as pending", e) from None
        executed = True
        try:
            with conn.cursor() as cur:
                if schema and action not in (DDLAction.CREATE_SCHEMA, DDLAction.DROP_SCHEMA):
                    try:
                        cur.execute(f"USE {quote_ident(schema)}")
                    except Exception as e:
                        if _errno(e) != 1049 or checkpoint.table:
                            raise
                cur.execute(query)
        except Exception as e:
            errno = _errno(e)
            if errno in IGNORABLE_DDL_ERRORS or (replay and errno in REPLAYED_DDL_ERRORS):
                log.warning("ignored DDL error %s on %s: %s (%s)", errno, schema, query, safe_error(e, ""))
                executed = False
            else:
                self._rollback()
                raise self._error(f"executing DDL {query!r} on schema {schema!r}", e) from None
        try:
            with conn.cursor() as cur:
                self._write_checkpoint(cur, checkpoint.advanced(pending_version=0))
            conn.commit()
        except Exception as e:
            self._rollback()
            raise self._error("recording an executed DDL", e) from None
        return executed

    def _ddl_base(self, cp: Checkpoint) -> int:
        """The DDL stream's previous version (kept while a DDL is pending)."""
        current = self.load_checkpoint(cp.key)
        return current.table_version if current is not None else 0

    def load_checkpoint(self, key: tuple[str, str, int]) -> Checkpoint | None:
        conn = self._connection()
        with conn.cursor() as cur:
            cur.execute(
                "SELECT db, tbl, part, table_version, date, file_index, row_offset, commit_ts, pending_version "
                f"FROM {self._table} "
                "WHERE changefeed=%s AND db=%s AND tbl=%s AND part=%s",
                (self.changefeed, *key),
            )
            r = cur.fetchone()
        if r is None:
            return None
        return Checkpoint(r[0], r[1], int(r[2]), int(r[3]), r[4], int(r[5]), int(r[6]), int(r[7]), int(r[8]))

    def table_exists(self, schema: str, table: str) -> bool:
        conn = self._connection()
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema=%s AND table_name=%s",
                    (schema, table),
                )
                row = cur.fetchone()
            conn.commit()
        except Exception as e:
            self._rollback()
            raise self._error("reading information_schema", e) from None
        return bool(row and row[0])

    def transaction(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Any]]:
        """Run ``(sql, args)`` statements in one transaction; returns each one's rows. Raises SparkcdcError."""
        conn = self._connection()
        out: list[list[Any]] = []
        try:
            with conn.cursor() as cur:
                for sql, args in statements:
                    cur.execute(sql, tuple(args) or None)
                    out.append(list(cur.fetchall()))
            conn.commit()
        except Exception as e:
            self._rollback()
            raise self._error(f"executing {statements[-1][0][:200]!r}", e) from None
        return out

    def execute(self, sql: str) -> None:
        """Run one statement in its own transaction (used for CREATE TABLE from a schema file)."""
        conn = self._connection()
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
            conn.commit()
        except Exception as e:
            self._rollback()
            raise self._error(f"executing {sql[:200]!r}", e) from None


def still_open(conn: Any) -> bool:
    """Whether an idle connection can take a statement: the server has not closed it. A restarted downstream (or
    its ``wait_timeout``) closes every connection a writer keeps between batches, and the first statement on one
    fails with 2013 "Lost connection"; the pooled connections of a worker that sat idle through a restart then cost
    a failed attempt each, and a batch's retry time with them. An idle connection has nothing to read, so a readable
    socket is the server's end of it (EOF, or the error it sent before closing): as go-sql-driver's liveness check
    before it reuses a pooled connection (TiCDC's MySQL sink), one poll, no round trip."""
    sock = getattr(conn, "_sock", None)  # pymysql keeps no public handle on it; None once it knows it is closed
    if sock is None:
        return False
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        readable = bool(poller.poll(0))
    except (OSError, ValueError):  # closed underneath
        return False
    pending = getattr(sock, "pending", None)  # TLS: bytes already decrypted into the SSL object
    return not readable and not (pending is not None and pending())


def _errno(e: BaseException) -> int:
    return e.args[0] if e.args and isinstance(e.args[0], int) else 0
