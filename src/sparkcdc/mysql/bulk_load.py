"""``LOAD DATA LOCAL INFILE … REPLACE``: the bulk form of the REPLACE that writes a batch's final images, run in the
batch's own downstream transaction (with its checkpoint row). On by default; the URI parameter ``bulk-load=false``
(``MysqlTarget.bulk_load``) keeps an applier to statements.

The server parses a multi-row REPLACE about half again as slowly as it loads the same rows from a file, and on a
small machine the downstream's CPU is most of the sink's cost per row.

The file holds the REPLACE statement's VALUES tuples as they are, one per line, and :data:`LOAD_FORMAT` reads them
back by SQL's literal rules: a quoted field is a string with backslash escapes (``sql_values`` writes no other
escape and never a raw line break), an unquoted ``NULL`` is NULL, a number is its text. Two kinds of column need a
``SET``: a binary one arrives as the text ``X'…'`` (its digits go through ``UNHEX``), and BIT, ENUM, SET and YEAR
get the number cast to UNSIGNED (as text, ``'5'`` would be the character 5's bits, ``'0'`` the year 2000). Only rows
whose every value is of its column's kind (``sql_values.value_kinds``) are loaded, which is what these clauses rely
on: the rows the sink rendered (``RenderedRow``) always, RowChanges when ``sql_values.of_kinds`` holds
(``statements.plan_batch``).

The server checks every value as it does for the statement (strict ``sql_mode``): MariaDB raises the statement's
errors, MySQL's LOAD DATA LOCAL turns them into warnings. Nothing is stored converted, because any warning fails the
load: a lossy one (``LOSSY_WRITE_CODES``) fails the batch naming the table and column, as the statement does; any
other warning, a row count different from the lines sent, or a server that refuses LOCAL raise
:class:`BulkRefused`, and the applier rolls the transaction back and applies the batch with statements.

The server names the file the client sends, and pymysql would send any file named: a connection made with
``local_infile`` is an :class:`~sparkcdc.mysql.local_infile.OwnFileConnection`, which sends nothing outside these
loads and, during one, only the load's own file (private to the user); a request for any other fails the batch.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Final

from sparkcdc.errors import SparkcdcError
from sparkcdc.model import TableInfo
from sparkcdc.mysql.local_infile import ForeignFileRequest, OwnFileConnection
from sparkcdc.mysql.sql_values import KIND_BYTES, literal, value_kinds
from sparkcdc.mysql.target import LOSSY_WRITE_CODES, MysqlTarget, lossy_write_error, quote_ident

log = logging.getLogger(__name__)

# The REPLACE's VALUES tuples, one per line: ``(v1,v2,…)`` + newline.
LOAD_FORMAT: Final = ("CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' ENCLOSED BY '\\'' ESCAPED BY '\\\\' "
                      "LINES STARTING BY '(' TERMINATED BY ')\\n'")  # fmt: skip
# The server or the client refuses LOAD DATA LOCAL (disabled, not allowed with this server, file request refused).
_REFUSED: Final = frozenset({1148, 2068, 3948, 3950, 4166})
# A line the server read differently from the tuple it was written as (too few or too many fields).
_MISREAD: Final = frozenset({1261, 1262})
_INFO: Final = re.compile(rb"Records: (\d+)\s+Deleted: \d+\s+Skipped: (\d+)\s+Warnings: (\d+)")
_CAST: Final = frozenset({"bit", "enum", "set", "year"})
# Final images of one table in one batch below which the REPLACE statement is faster than a load, whose fixed cost
# per batch is higher (the file written, asked for by the server and sent). ``benchmarks/mysql_bulk_load.py`` on
# MariaDB on 2 shared cores, bulk / statements: 0.55-0.64x at 64 rows, 0.68x at 256, 0.84-1.05x at 512, 1.30x at
# 768, 1.17x at 1024, 1.26-2.15x at 2048.
MIN_ROWS: Final = 768


class BulkRefused(Exception):
    """A load the applier cannot vouch for: nothing of it may be committed; apply the batch with statements."""


@dataclass(frozen=True, slots=True)
class BulkLoad:
    """One table's final images as a LOAD DATA: ``table`` its quoted name, ``columns`` the column list and ``SET``
    clause (:func:`load_columns`), ``items`` the REPLACE statement's VALUES tuples."""

    table: str
    columns: str
    items: Sequence[str]

    def statement(self, path: str) -> str:
        return f"LOAD DATA LOCAL INFILE {literal(path)} REPLACE INTO TABLE {self.table} {LOAD_FORMAT} {self.columns}"

    def data(self) -> bytes:
        return ("\n".join(self.items) + "\n").encode("utf-8")


def load_columns(table: TableInfo, positions: Sequence[int]) -> str:
    """The column list and ``SET`` clause that store each field of a VALUES tuple of ``positions`` as the REPLACE
    statement stores its literal."""
    kinds = value_kinds(table)
    names: list[str] = []
    sets: list[str] = []
    for i in positions:
        column = table.columns[i]
        name = quote_ident(column.name)
        if kinds[i] == KIND_BYTES:  # X'00ff' -> 00ff; '' (empty) -> ''
            names.append(f"@c{i}")
            sets.append(f"{name}=UNHEX(SUBSTRING(@c{i},3,CHAR_LENGTH(@c{i})-3))")
        elif column.type in _CAST:
            names.append(f"@c{i}")
            sets.append(f"{name}=CAST(@c{i} AS UNSIGNED)")
        else:
            names.append(name)
    return f"({','.join(names)})" + (f" SET {','.join(sets)}" if sets else "")


def usable(conn: Any) -> bool:
    """Whether LOAD DATA LOCAL may run on ``conn``: it sends only a load's own file (made with ``local_infile``),
    the server allows LOCAL, and it is no TiDB (whose LOAD DATA may commit on its own in batches). Raises what the
    driver raises."""
    if not isinstance(conn, OwnFileConnection):
        return False
    with conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.local_infile, VERSION()")
        enabled, version = cur.fetchone()
    return str(enabled).upper() in ("1", "ON") and "tidb" not in str(version).lower()


class BulkLoader:
    """Runs loads on one connection through one private temporary file, written again for each load."""

    def __init__(self) -> None:
        self._path: str | None = None

    def load(
        self, conn: OwnFileConnection, cursor: Any, bulk: BulkLoad, *, target: MysqlTarget, schema: str, table: str
    ) -> None:
        """Load ``bulk`` inside the connection's open transaction. Raises BulkRefused (roll back, use statements),
        SparkcdcError for a value the column cannot hold (``lossy_write_error``) or a server that asked for another
        file (final: nothing of it was sent), or what the driver raises."""
        path = self._file()
        with open(path, "wb") as f:
            f.write(bulk.data())
        try:
            with conn.sending(path):
                cursor.execute(bulk.statement(path))
        except ForeignFileRequest as e:
            raise SparkcdcError(
                f"downstream {target}: LOAD DATA LOCAL into {schema}.{table}: the server asked for the local file "
                f"{os.fsdecode(e.requested)[:200]!r} instead of the load's own {path!r}; refused, nothing of that "
                "file was sent and nothing of the batch committed; a server that asks for other files is not to be "
                "trusted: check the downstream (and what is between), or set bulk-load=false",
                code="CDC:ErrMySQLTxnError",
                retryable=False,
            ) from None
        except Exception as e:
            code = e.args[0] if e.args and isinstance(e.args[0], int) else 0
            if code in _REFUSED or code in _MISREAD:
                raise BulkRefused(f"LOAD DATA LOCAL failed: {e.args[-1]}") from None
            raise
        _check(cursor, len(bulk.items), target=target, schema=schema, table=table)

    def _file(self) -> str:
        if self._path is None or not os.path.exists(self._path):
            fd, self._path = tempfile.mkstemp(prefix="sparkcdc-load-", suffix=".txt")
            os.close(fd)
        return self._path

    def close(self) -> None:
        if self._path is not None:
            with suppress(OSError):
                os.unlink(self._path)
            self._path = None


def _check(cursor: Any, lines: int, *, target: MysqlTarget, schema: str, table: str) -> None:
    """After a load: every line became a row and the server warned about nothing."""
    if cursor.warning_count:
        cursor.execute("SHOW WARNINGS")
        warnings = cursor.fetchall()
        for _level, code, message in warnings:
            if int(code) in LOSSY_WRITE_CODES:
                raise lossy_write_error(int(code), str(message), target=target, schema=schema, table=table)
        level, code, message = warnings[0] if warnings else ("Warning", 0, "(not shown)")
        raise BulkRefused(f"LOAD DATA LOCAL into {schema}.{table}: {level} {code}: {message}")
    result = getattr(cursor, "_result", None)  # pymysql keeps the OK packet's info text there
    info = _INFO.search(getattr(result, "message", None) or b"")
    if info is None:
        raise BulkRefused(f"LOAD DATA LOCAL into {schema}.{table}: the server did not say how many rows it read")
    records, skipped, warned = (int(g) for g in info.groups())
    if records != lines or skipped or warned:
        raise BulkRefused(f"LOAD DATA LOCAL into {schema}.{table}: {lines} lines sent, the server read {records} "
                          f"records, skipped {skipped}, warned {warned} times")  # fmt: skip
