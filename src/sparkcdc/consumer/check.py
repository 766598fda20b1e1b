"""Compare tables of two MySQL-compatible servers: row count and a checksum over every column.

The checksum is computed server-side. Each row becomes ``MD5`` of its columns in a fixed (source) column
order, each column rendered as ``HEX(CAST(col AS BINARY))`` or ``N`` for NULL, joined by ``#``: the
rendering is exact for every type (numbers and temporals by their canonical text, strings and blobs by
their bytes) and a NULL can never collide with a value (HEX output has no ``N``). The row hashes are
aggregated as ``BIT_XOR`` and ``SUM`` of their two 64-bit halves: order-independent, so no sort is needed,
and duplicates cannot cancel out (``SUM``). Both sessions use ``time_zone = '+00:00'`` so TIMESTAMP columns
compare by instant.

Columns are matched by name; a column missing on one side, or a table missing on one side, is a mismatch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.filter.system_schemas import is_system_schema
from sparkcdc.mysql.target import MysqlTarget, quote_ident, quote_table, safe_error

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TableChecksum:
    rows: int
    checksum: str  # hex digest of the aggregates; "" when the table is missing


@dataclass(frozen=True, slots=True)
class TableResult:
    schema: str
    table: str
    source: TableChecksum | None
    target: TableChecksum | None
    note: str = ""

    @property
    def matches(self) -> bool:
        return (
            self.source is not None
            and self.target is not None
            and not self.note
            and self.source.rows == self.target.rows
            and self.source.checksum == self.target.checksum
        )


def parse_tables(spec: str) -> list[tuple[str, str]]:
    """``db.t,db2.t2`` -> pairs; ``db.*`` selects every table of ``db``. Raises ConfigError naming a bad item."""
    out = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        schema, dot, table = item.partition(".")
        if not dot or not schema or not table:
            raise ConfigError(f"--tables item {item!r} must be <schema>.<table> or <schema>.*")
        out.append((schema.strip("`"), table.strip("`")))
    if not out:
        raise ConfigError("--tables is empty; give <schema>.<table>[,…]")
    return out


def _columns(cur: Any, schema: str, table: str) -> list[str]:
    cur.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema=%s AND table_name=%s "
        "ORDER BY ordinal_position",
        (schema, table),
    )
    return [r[0] for r in cur.fetchall()]


def _list_tables(cur: Any, schemas: Iterable[str] | None) -> list[tuple[str, str]]:
    cur.execute(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type='BASE TABLE' "
        "ORDER BY table_schema, table_name"
    )
    rows = [(r[0], r[1]) for r in cur.fetchall() if not is_system_schema(r[0])]
    if schemas is None:
        return rows
    wanted = set(schemas)
    return [r for r in rows if r[0] in wanted]


def checksum_sql(schema: str, table: str, columns: Sequence[str]) -> str:
    """The aggregate query of one table (see the module docstring)."""
    parts = ",".join(f"IFNULL(HEX(CAST({quote_ident(c)} AS BINARY)),'N')" for c in columns)
    row_hash = f"MD5(CONCAT_WS('#',{parts}))"
    hi = f"CAST(CONV(LEFT({row_hash},16),16,10) AS UNSIGNED)"
    lo = f"CAST(CONV(RIGHT({row_hash},16),16,10) AS UNSIGNED)"
    return (
        f"SELECT COUNT(*), BIT_XOR({hi}), BIT_XOR({lo}), COALESCE(SUM({hi}),0), COALESCE(SUM({lo}),0) "
        f"FROM {quote_table(schema, table)}"
    )


class _Side:
    def __init__(self, target: MysqlTarget, label: str) -> None:
        self.target = target
        self.label = label
        self.conn = target.connect(database="", autocommit=True)
        with self.conn.cursor() as cur:
            cur.execute("SET SESSION time_zone='+00:00'")

    def close(self) -> None:
        self.conn.close()

    def columns(self, schema: str, table: str) -> list[str]:
        with self.conn.cursor() as cur:
            return _columns(cur, schema, table)

    def tables(self, schemas: Iterable[str] | None) -> list[tuple[str, str]]:
        with self.conn.cursor() as cur:
            return _list_tables(cur, schemas)

    def checksum(self, schema: str, table: str, columns: Sequence[str]) -> TableChecksum:
        try:
            with self.conn.cursor() as cur:
                cur.execute(checksum_sql(schema, table, columns))
                r = cur.fetchone()
        except Exception as e:
            raise SparkcdcError(
                f"{self.label} {self.target}: checksum of {schema}.{table} failed: "
                f"{safe_error(e, self.target.password)}"
            ) from None
        digest = "-".join(f"{int(v):x}" for v in r[1:]) if r[0] else "empty"
        return TableChecksum(int(r[0]), digest)


def compare(
    source: MysqlTarget, target: MysqlTarget, tables: Sequence[tuple[str, str]] | None = None
) -> list[TableResult]:
    """Compare the given tables (``(db, "*")`` expands to every table of ``db``; None: every user table of
    the source and the target). Raises SparkcdcError when a server cannot be reached or queried."""
    src, dst = _Side(source, "source"), _Side(target, "target")
    try:
        selected = _select_tables(src, dst, tables)
        results = []

        def one(side: _Side, schema: str, table: str, cols: list[str]) -> TableChecksum:
            return side.checksum(schema, table, cols)

        with ThreadPoolExecutor(max_workers=2) as pool:
            for schema, table in selected:
                scols, tcols = src.columns(schema, table), dst.columns(schema, table)
                if not scols or not tcols:
                    results.append(
                        TableResult(
                            schema,
                            table,
                            src.checksum(schema, table, scols) if scols else None,
                            dst.checksum(schema, table, tcols) if tcols else None,
                            "missing on "
                            + ("both sides" if not scols and not tcols else "source" if not scols else "target"),
                        )
                    )
                    continue
                note = ""
                if {c.lower() for c in scols} != {c.lower() for c in tcols}:
                    only_s = sorted(set(scols) - set(tcols))
                    only_t = sorted(set(tcols) - set(scols))
                    note = f"columns differ: source only {only_s}, target only {only_t}"
                    cols = [c for c in scols if c in set(tcols)]
                else:
                    cols = scols
                fs = pool.submit(one, src, schema, table, cols)
                ft = pool.submit(one, dst, schema, table, cols)
                results.append(TableResult(schema, table, fs.result(), ft.result(), note))
        return results
    finally:
        src.close()
        dst.close()


def _select_tables(src: _Side, dst: _Side, tables: Sequence[tuple[str, str]] | None) -> list[tuple[str, str]]:
    if tables is None:
        return sorted(set(src.tables(None)) | set(dst.tables(None)))
    out: list[tuple[str, str]] = []
    for schema, table in tables:
        if table == "*":
            out.extend(sorted(set(src.tables([schema])) | set(dst.tables([schema]))))
        else:
            out.append((schema, table))
    return out
