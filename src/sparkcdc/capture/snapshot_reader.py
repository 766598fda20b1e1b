"""Read one snapshot chunk from the upstream as INSERT events (runs on Spark executors).

Lock-free: each chunk is one ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` read. The changefeed streams a
table's binlog changes only after a *low watermark*: the relay log's resolved ts when the micro-batch reading
the table's first chunk was planned. Everything up to the watermark was committed upstream before the read
began, so it is in the rows read.

MariaDB says exactly where its consistent snapshot sits in the binlog (``Binlog_snapshot_file``/``_position``).
The reader checks that it is not before the watermark's position (MySQL writes the binlog before the storage
engine makes a transaction visible, so a transaction already in the relay log could be invisible to a read
started a moment later) and reads again after a short wait if it is; it returns the position, from which the
stream leaves out exactly what the chunk holds (``sparkcdc.pipeline.snapshot_handover``). Other servers do not
say where their snapshot is: changes after the low watermark are then streamed even when the read saw them.

The copy carries the columns the table had at start-ts, but a DDL may have changed the table since. The read
first opens the table (its metadata lock then holds every DDL on it off until the read ends) and asks for its
definition now, which is the one its rows are read under: each start-ts column is read as the column is now
(``snapshot_values.read_as``), so its values are exact, and a column that is gone or now holds another kind of
value fails the changefeed with ``CDC:ErrSnapshotTableChanged``. A DDL committed after the snapshot began but
before the table was opened makes InnoDB refuse the read (1412: table definition changed): it starts again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator
from datetime import tzinfo
from typing import Any

from sparkcdc.capture.ddl import parse_create_table
from sparkcdc.capture.position import file_seq
from sparkcdc.capture.snapshot_plan import Chunk
from sparkcdc.capture.snapshot_values import connection_options, read_as, row_converter, select_list
from sparkcdc.errors import CorruptDataError, SparkcdcError, UpstreamError, with_code
from sparkcdc.model.events import RowChange, RowOp
from sparkcdc.model.table import TableInfo

log = logging.getLogger(__name__)

_SNAPSHOT_WAIT_S = 0.05
_SNAPSHOT_TRIES = 200
_FETCH_ROWS = 2000
TABLE_CHANGED = "CDC:ErrSnapshotTableChanged"  # ours: TiCDC has no snapshot
_CHANGED_TABLE = (1054, 1146)  # ER_BAD_FIELD_ERROR, ER_NO_SUCH_TABLE: a column or the table is gone (DDL)
_DEF_CHANGED = 1412  # ER_TABLE_DEF_CHANGED: a DDL rebuilt the table after the snapshot began
_DEF_CHANGED_TRIES = 20


def read_chunk(
    connect: dict[str, Any],
    chunk: Chunk,
    table: TableInfo,
    commit_ts: int,
    tz: tzinfo,
    not_before: tuple[str, int] | None = None,
) -> Generator[RowChange, None, tuple[str, int] | None]:
    """INSERT events (commit-ts ``commit_ts``) of the rows of ``chunk`` in key order, ``table``'s columns;
    returns the binlog position (file, pos) of the read's snapshot, None when the server does not say it.

    ``connect``: pymysql connect arguments of the upstream; ``not_before``: the binlog position the read must
    not be older than. Raises UpstreamError (retryable) when the upstream cannot be read.
    """
    import pymysql  # type: ignore[import-untyped]

    where, params = chunk.where()
    try:
        conn = pymysql.connect(**{**connect, **connection_options()})
    except pymysql.MySQLError as e:
        raise UpstreamError(f"snapshot of {chunk.table_name}: cannot connect to the upstream: {e}",
                            retryable=True) from e  # fmt: skip
    try:
        with conn.cursor(pymysql.cursors.SSCursor) as cur:
            for attempt in range(_DEF_CHANGED_TRIES):
                at = _begin(cur, chunk, not_before)
                now = _read_as(cur, chunk, table)
                sql = f"SELECT {select_list(now)} FROM {chunk.from_clause()}{where}{chunk.order_by()}"
                try:
                    cur.execute(sql % tuple(conn.escape(p) for p in params) if params else sql)
                    rows = cur.fetchmany(_FETCH_ROWS)  # InnoDB refuses the read at its first row
                    break
                except pymysql.MySQLError as e:
                    if not e.args or e.args[0] != _DEF_CHANGED or attempt == _DEF_CHANGED_TRIES - 1:
                        raise
                    cur.execute("ROLLBACK")
            convert = row_converter(now, tz)
            while rows:
                for row in rows:
                    yield RowChange(commit_ts, table, RowOp.INSERT, None, convert(row), chunk.physical_table_id)
                rows = cur.fetchmany(_FETCH_ROWS)
        conn.commit()
        return at
    except pymysql.MySQLError as e:
        if e.args and e.args[0] in _CHANGED_TABLE:
            raise _changed(chunk, str(e.args[1])) from e
        raise UpstreamError(f"snapshot of {chunk.table_name} (chunk {chunk.index}): {e}", retryable=True) from e
    finally:
        conn.close()


def _changed(chunk: Chunk, what: str) -> SparkcdcError:
    return with_code(UpstreamError(
        f"snapshot of {chunk.table_name}: the table changed while it was being copied ({what}), and the copy "
        "cannot carry that in the columns the table had at start-ts. Remove and re-create the changefeed to copy "
        "the tables as they are now", code=TABLE_CHANGED, retryable=False))


def _read_as(cur: Any, chunk: Chunk, table: TableInfo) -> TableInfo:
    """``table`` (the columns at start-ts) as the rows are read now: the table is opened first, so that its
    metadata lock holds DDL off until the read ends, then its definition is read (``snapshot_values.read_as``).
    Raises UpstreamError (CDC:ErrSnapshotTableChanged) when a column cannot be carried."""
    cur.execute(f"SELECT 1 FROM {chunk.from_clause()} LIMIT 0")
    cur.fetchall()
    cur.execute(f"SHOW CREATE TABLE {chunk.from_clause()}")
    ddl = _text(cur.fetchall()[0][1])
    try:
        now = parse_create_table(ddl, chunk.schema, table.table_id, table.version, table.charset)
    except CorruptDataError as e:  # syntax the DDL parser lacks (the schema tracker used the binlog's table map)
        log.warning("snapshot of %s: its definition cannot be parsed (%s); its columns are read as at start-ts",
                    chunk.table_name, e)  # fmt: skip
        return table
    try:
        return read_as(table, now)
    except ValueError as e:
        raise _changed(chunk, str(e)) from e


def _begin(cur: Any, chunk: Chunk, not_before: tuple[str, int] | None) -> tuple[str, int] | None:
    """Open the consistent-snapshot transaction, at or after ``not_before`` when the server tells where; its
    binlog position, None when the server does not say it."""
    cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    for _ in range(_SNAPSHOT_TRIES):
        cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {_text(k).lower(): _text(v) for k, v in cur.fetchall()}
        file, pos = status.get("binlog_snapshot_file", ""), status.get("binlog_snapshot_position", "")
        if not file or not pos.isdigit():
            return None  # not MariaDB: no position
        if not_before is None or (file_seq(file), int(pos)) >= (file_seq(not_before[0]), not_before[1]):
            return file, int(pos)
        cur.execute("ROLLBACK")
        time.sleep(_SNAPSHOT_WAIT_S)
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    raise UpstreamError(f"snapshot of {chunk.table_name}: the upstream's consistent snapshot stayed before binlog "
                        f"position {not_before}", retryable=True)  # fmt: skip


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes | bytearray) else str(v)
