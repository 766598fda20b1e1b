"""A Delta Lake table per upstream table, written with delta-rs (``deltalake``): create, MERGE, evolve, time travel.

Every commit carries the upstream commit-ts it brings the table to, twice: as the Delta *transaction identifier*
(``txn`` action, ``appId`` = ``sparkcdc:<changefeed>``, ``version`` = commit-ts), which the writer reads back to
skip what a replayed batch already applied (Delta's own idempotent-writes mechanism: the action commits atomically
with the data), and as commit info ``sparkcdc.commit-ts``, which :func:`version_as_of` uses for time travel. The
table at a version whose recorded commit-ts is ``ts`` equals the upstream table as of ``ts``.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from sparkcdc.errors import ConfigError, StorageError
from sparkcdc.lake.changes import NetChange
from sparkcdc.lake.evolution import SchemaChange, reshape
from sparkcdc.lake.keyless import ChangeLog, lake_schema, to_arrow_log
from sparkcdc.lake.types import arrow_schema, pad, to_arrow
from sparkcdc.model import TableInfo

COMMIT_TS = "sparkcdc.commit-ts"
MAINTENANCE = "sparkcdc.maintenance"  # commit info of a compaction (sparkcdc.lake.maintenance)
# The MERGE source's own column ('u': upsert the row, 'd': delete its key), beside the table's columns: named longer
# than the 64 characters MySQL allows a column name, so that no upstream column can have its name (delta-rs's merge
# and its SQL predicates take such a name).
OP_COLUMN = "_sparkcdc_merge_op_named_longer_than_any_mysql_column_so_none_can_clash"
_BAD_NAME = re.compile(r"[ ,;{}()\n\t=]")  # what Delta refuses in a column name without column mapping


def _deltalake() -> Any:
    import deltalake

    return deltalake


def table_uri(root: str, schema: str, table: str) -> str:
    return f"{root.rstrip('/')}/{schema}/{table}"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class DeltaTables:
    """The Delta tables under ``root`` for one changefeed (``app_id`` names it in the ``txn`` actions)."""

    def __init__(self, root: str, app_id: str, storage_options: dict[str, str] | None = None) -> None:
        self.root = root
        self.app_id = app_id
        self.storage_options = storage_options or None

    def uri(self, schema: str, table: str) -> str:
        return table_uri(self.root, schema, table)

    def _props(self, ts: int) -> Any:
        dl = _deltalake()
        return dl.CommitProperties(custom_metadata={COMMIT_TS: str(ts)},
                                   app_transactions=[dl.Transaction(self.app_id, ts)])  # fmt: skip

    def _open(self, schema: str, table: str) -> Any:
        """The table, or None when there is none yet. Raises StorageError when it cannot be read."""
        dl = _deltalake()
        uri = self.uri(schema, table)
        try:
            if not dl.DeltaTable.is_deltatable(uri, self.storage_options):
                return None
            return dl.DeltaTable(uri, storage_options=self.storage_options)
        except OSError as e:
            raise StorageError(f"delta table {uri}: {e}") from e

    def applied_ts(self, schema: str, table: str) -> int:
        """The upstream commit-ts the table holds everything up to (0 for no table or no commit of ours)."""
        dt = self._open(schema, table)
        return 0 if dt is None else int(dt.transaction_version(self.app_id) or 0)

    def ensure(self, info: TableInfo, ts: int | None = None, add_columns: bool = True) -> Any:
        """The table for ``info``: created when missing, missing columns added (ADD COLUMN) unless not
        ``add_columns``. Idempotent; each change commits with ``ts`` (default: what the table already holds).
        Columns the table has beyond ``info`` stay: rows of an older definition replayed after a crash (columns
        are dropped by :meth:`evolve` only). Raises ConfigError for a definition Delta cannot hold as it is."""
        check_names(info)
        dt = self._open(info.schema, info.table)
        wanted = lake_schema(info)
        if ts is None:
            ts = 0 if dt is None else int(dt.transaction_version(self.app_id) or 0)
        if dt is None:
            dl = _deltalake()
            return dl.DeltaTable.create(self.uri(info.schema, info.table), wanted, mode="ignore",
                                        storage_options=self.storage_options,
                                        commit_properties=self._props(ts))  # fmt: skip
        have = {f.name.lower(): f for f in pa.schema(dt.schema().to_arrow())}
        missing = [f for f in wanted if f.name.lower() not in have]
        if missing and add_columns:
            from deltalake.schema import Field

            fields = [Field.from_arrow(f.with_nullable(True)) for f in missing]
            dt.alter.add_columns(fields, commit_properties=self._props(ts))
        return dt

    def merge(self, info: TableInfo, change: NetChange | ChangeLog, after_ts: int) -> int:
        """One MERGE of the batch's net change (delete the deleted keys, upsert the rest), or one append of a
        key-less table's change log, committed with the txn version ``change.last_ts``. ``after_ts`` is what the
        table held before (:meth:`applied_ts`): a schema change made first commits with it, so a crash between the
        two commits replays the rows. Returns the rows written (0 when there was nothing)."""
        if change.empty:
            return 0
        dt = self.ensure(info, after_ts)
        if isinstance(change, ChangeLog):
            data = pad(to_arrow_log(info, change), pa.schema(dt.schema().to_arrow()))
            _deltalake().write_deltalake(dt, data, mode="append", commit_properties=self._props(change.last_ts))
            return len(change.rows)
        keys = [info.columns[i].name for i in info.handle_key_positions]
        width = len(info.columns)
        rows: list[tuple[Any, ...]] = list(change.upserts.values())
        for k in change.deletes:  # a key-only image: the other columns are never read for a delete
            image: list[Any] = [None] * width
            for pos, v in zip(info.handle_key_positions, k):
                image[pos] = v
            rows.append(tuple(image))
        lake = pa.schema(dt.schema().to_arrow())
        if not change.touches_existing:
            fresh = pad(to_arrow(info, list(change.upserts.values())), lake).select(lake.names)
            if not _holds_any(dt, fresh.select(keys)):
                # every key is new: a plain append, committed the same way (txn + commit info), without MERGE's
                # join and file rewrites; the check reads only key columns, pruned by the files' statistics
                _deltalake().write_deltalake(dt, fresh, mode="append", commit_properties=self._props(change.last_ts))
                return len(change.upserts)
        ops = pa.array(["u"] * len(change.upserts) + ["d"] * len(change.deletes))
        source = pad(to_arrow(info, rows, {OP_COLUMN: ops}), lake)
        predicate = " AND ".join(f"t.{_quote(k)} = s.{_quote(k)}" for k in keys)
        (dt.merge(source, predicate, source_alias="s", target_alias="t", commit_properties=self._props(change.last_ts))
         .when_matched_delete(f"s.{OP_COLUMN} = 'd'")
         .when_matched_update_all(f"s.{OP_COLUMN} = 'u'", except_cols=[OP_COLUMN])
         .when_not_matched_insert_all(f"s.{OP_COLUMN} = 'u'", except_cols=[OP_COLUMN])
         .execute())  # fmt: skip
        return len(rows)

    def fill(self, info: TableInfo, values: dict[str, Any], ts: int) -> None:
        dt = self.ensure(info)
        if int(dt.transaction_version(self.app_id) or 0) >= ts:
            return
        schema = arrow_schema(info)
        updates = {_quote(name): _sql_literal(v, schema.field(name).type) for name, v in values.items()}
        dt.update(updates=updates, commit_properties=self._props(ts))

    def evolve(self, info: TableInfo, change: SchemaChange, fill: dict[str, Any], ts: int) -> None:
        """DROP, RENAME or widen columns (and add any new ones with their ``fill`` values) by rewriting the table
        in one overwrite commit with ``ts``: delta-rs 1.6 has no drop or rename of a column, and its writes to a
        table with column mapping (the Delta way to do both in place) lose the values. Earlier versions keep
        their schema and files, so as-of reads before the DDL are unchanged."""
        dt = self._open(info.schema, info.table)
        if dt is None:
            self.ensure(info, ts)
            return
        if int(dt.transaction_version(self.app_id) or 0) >= ts:
            return
        data = reshape(dt.to_pyarrow_table(), change, info, fill)
        _deltalake().write_deltalake(dt, data, mode="overwrite", schema_mode="overwrite",
                                     commit_properties=self._props(ts))  # fmt: skip

    def rename(self, pre: TableInfo, post: TableInfo, ts: int) -> None:
        """RENAME TABLE: the new table gets the old one's rows in one commit with ``ts``, then the old one is
        emptied as by DROP TABLE (a Delta table is a directory: moving it would take the old name's history,
        which as-of reads of points before the rename need, and object stores have no atomic move)."""
        check_names(post)
        old = self._open(pre.schema, pre.table)
        new = self._open(post.schema, post.table)
        if new is None or int(new.transaction_version(self.app_id) or 0) < ts:
            data = old.to_pyarrow_table() if old is not None else lake_schema(post).empty_table()
            _deltalake().write_deltalake(self.uri(post.schema, post.table), data, mode="overwrite",
                                         schema_mode="overwrite", storage_options=self.storage_options,
                                         commit_properties=self._props(ts))  # fmt: skip
        self.drop(pre.schema, pre.table, ts)

    def truncate(self, info: TableInfo, ts: int) -> None:
        dt = self.ensure(info, ts)
        if int(dt.transaction_version(self.app_id) or 0) < ts:
            dt.delete(commit_properties=self._props(ts))

    def drop(self, schema: str, table: str, ts: int) -> None:
        """DROP TABLE: the table is emptied and stays (a Delta table has no drop without a catalog; its history
        stays readable as of any earlier commit-ts)."""
        dt = self._open(schema, table)
        if dt is not None and int(dt.transaction_version(self.app_id) or 0) < ts:
            dt.delete(commit_properties=self._props(ts))


def _holds_any(dt: Any, keys: pa.Table) -> bool:
    """Whether the table may hold one of ``keys`` (a table of key columns): rows matching every column's value set
    (a superset of the exact keys for a composite key, so True can be wrong, never False)."""
    import pyarrow.dataset as ds  # type: ignore[import-untyped]

    if keys.num_rows == 0:
        return False
    match = None
    for name in keys.column_names:
        term = ds.field(name).isin(keys[name].combine_chunks())
        match = term if match is None else match & term
    return bool(dt.to_pyarrow_dataset().to_table(columns=list(keys.column_names), filter=match).num_rows)


def _sql_literal(value: Any, typ: pa.DataType) -> str:
    """A value as a DataFusion SQL literal of Arrow type ``typ`` (the update's expression language)."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    sql = f"DECIMAL({typ.precision},{typ.scale})" if pa.types.is_decimal(typ) else _SQL_TYPES[str(typ)]
    return f"CAST('{value}' AS {sql})"


_SQL_TYPES = {"int32": "INT", "int64": "BIGINT", "float": "REAL", "double": "DOUBLE"}


def check_names(info: TableInfo) -> None:
    """Raises ConfigError for a column name Delta refuses without column mapping."""
    for c in info.columns:
        if _BAD_NAME.search(c.name):
            raise ConfigError(
                f"column {info.qualified_name}.{c.name!r}: Delta tables without column mapping take no "
                "space or any of ,;{}()= in a column name; rename the column or exclude the table"
            )


def version_as_of(uri: str, commit_ts: int, storage_options: dict[str, str] | None = None) -> int | None:
    """The newest version of the Delta table at ``uri`` whose recorded upstream commit-ts is <= ``commit_ts``;
    None when there is none (the table was empty then)."""
    dl = _deltalake()
    dt = dl.DeltaTable(uri, storage_options=storage_options)
    best: tuple[int, int] | None = None
    history = dt.history()
    for h in history:
        ts = h.get(COMMIT_TS)
        if ts is None or int(ts) > commit_ts:
            continue
        cand = (int(ts), -int(h["version"]))  # of commits recording one ts, the first: a schema change made
        if best is None or cand > best:  # before a MERGE or a DDL's backfill keeps the ts the table had
            best = cand
    if best is None:
        return None
    version = -best[1]
    for h in sorted(history, key=lambda h: int(h["version"])):  # then the compactions of it: the same rows, and
        if int(h["version"]) <= version:  # the files that survive a vacuum (sparkcdc.lake.maintenance)
            continue
        if h.get(MAINTENANCE) is None or h.get(COMMIT_TS) != str(best[0]):
            break
        version = int(h["version"])
    return version
