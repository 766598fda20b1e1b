"""An Apache Iceberg table per upstream table, written with pyiceberg through its SQL catalog.

The catalog is a real one users run (pyiceberg's ``SqlCatalog``: SQLite in the warehouse by default, or any
SQLAlchemy URL such as the MariaDB beside the changefeed); namespace = upstream schema, table = upstream table.
pyiceberg 0.12 has no MERGE: a batch's net change is one Iceberg transaction of a delete (the keys the batch
deletes or rewrites, copy-on-write) and an append (the new images), committed together. The last snapshot of each
transaction carries the upstream commit-ts in its summary (``sparkcdc.commit-ts``): :meth:`applied_ts` reads it
back so a replayed batch is skipped, and :func:`snapshot_as_of` finds the snapshot for a time-travel read.
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from sparkcdc.errors import ConfigError, StorageError
from sparkcdc.lake.changes import NetChange
from sparkcdc.lake.evolution import SchemaChange
from sparkcdc.lake.iceberg_rewrite import overwrite_keys
from sparkcdc.lake.keyless import ChangeLog, lake_schema, to_arrow_log
from sparkcdc.lake.location import LakeLocation
from sparkcdc.lake.types import key_table, pad, to_arrow
from sparkcdc.model import TableInfo

COMMIT_TS = "sparkcdc.commit-ts"
SCHEMA_TS = "sparkcdc.schema-commit-ts"  # table property: the commit-ts of the last column DDL (no snapshot of its own)
CATALOG_FILE = "catalog.db"


@functools.lru_cache(maxsize=8)
def catalog(where: LakeLocation) -> Any:
    """The SQL catalog of ``where`` (its tables are created on first use), one per process: building one creates
    a SQLAlchemy engine and checks the catalog's tables, which would cost every batch a round of connections.
    Raises ConfigError when it cannot be reached."""
    from pyiceberg.catalog.sql import SqlCatalog

    from sparkcdc.lake.stores import iceberg_properties, iceberg_warehouse

    uri = where.catalog_uri or f"sqlite:///{os.path.join(where.root, CATALOG_FILE)}"
    warehouse, properties = iceberg_warehouse(where), iceberg_properties(where)
    try:
        if where.catalog_uri is None:
            os.makedirs(where.root, exist_ok=True)
        return SqlCatalog("sparkcdc", uri=uri, warehouse=warehouse, **properties)
    except Exception as e:  # SQLAlchemy's errors: a driver missing, a refused connection, bad credentials
        raise ConfigError(f"{where}: the catalog fails: {type(e).__name__}: {_first_line(e)}") from e


def check_catalog(where: LakeLocation) -> None:
    cat = catalog(where)
    try:
        cat.list_namespaces()
    except Exception as e:
        raise ConfigError(f"{where}: the catalog fails: {type(e).__name__}: {_first_line(e)}") from e


def _first_line(e: BaseException) -> str:
    from sparkcdc.masking import mask_uri

    return mask_uri(str(e).splitlines()[0] if str(e) else "")


def _summary_ts(snapshot: Any) -> int | None:
    value = snapshot.summary.additional_properties.get(COMMIT_TS) if snapshot.summary else None
    return None if value is None else int(value)


class IcebergTables:
    def __init__(self, where: LakeLocation, app_id: str) -> None:
        self.where = where
        self.app_id = app_id
        self._catalog: Any = None
        self._loaded: dict[tuple[str, str], Any] = {}

    @property
    def catalog(self) -> Any:
        if self._catalog is None:
            self._catalog = catalog(self.where)
        return self._catalog

    def _load(self, schema: str, table: str, fresh: bool = False) -> Any:
        """The table, loaded from the catalog once per batch (``fresh``: :meth:`applied_ts`, a batch's first call);
        loading parses its whole metadata, which grows with its snapshots. pyiceberg updates the loaded table in
        place when a transaction of ours commits."""
        from pyiceberg.exceptions import NoSuchTableError

        key = (schema, table)
        if not fresh and key in self._loaded:
            return self._loaded[key]
        try:
            self._loaded[key] = self.catalog.load_table(key)
        except NoSuchTableError:
            self._loaded.pop(key, None)
            return None
        except OSError as e:
            raise StorageError(f"iceberg table {schema}.{table} in {self.where}: {e}") from e
        return self._loaded[key]

    def applied_ts(self, schema: str, table: str) -> int:
        t = self._load(schema, table, fresh=True)
        return 0 if t is None else table_applied_ts(t)

    def ensure(self, info: TableInfo, ts: int | None = None, add_columns: bool = True) -> Any:
        """Creates the table, or adds the columns it lacks unless not ``add_columns`` (an Iceberg schema update: no
        snapshot, so ``ts`` is not recorded: the next snapshot records the commit-ts that covers it). Columns beyond
        ``info`` stay, as for Delta (:meth:`DeltaTables.ensure`)."""
        t = self._load(info.schema, info.table)
        wanted = lake_schema(info)
        if t is None:
            self._create_namespace(info.schema)
            t = self.catalog.create_table_if_not_exists((info.schema, info.table), wanted)
            self._loaded[(info.schema, info.table)] = t
            return t
        have = {f.name.lower() for f in t.schema().fields}
        missing = [f for f in wanted if f.name.lower() not in have]
        if missing and add_columns:
            with t.update_schema() as update:
                update.union_by_name(pa.schema(missing))
            t = self._load(info.schema, info.table, fresh=True)
        return t

    def _create_namespace(self, name: str) -> None:
        """Writer tasks of one batch create their tables' namespace at once: the SQL catalog checks, then inserts,
        so the one that loses the race gets the database's unique-key error; the namespace exists then."""
        try:
            self.catalog.create_namespace_if_not_exists(name)
        except Exception:
            if (name,) not in self.catalog.list_namespaces():
                raise

    def merge(self, info: TableInfo, change: NetChange | ChangeLog, after_ts: int) -> int:
        if change.empty:
            return 0
        t = self.ensure(info)
        props = {COMMIT_TS: str(change.last_ts)}
        if isinstance(change, ChangeLog):
            t.append(pad(to_arrow_log(info, change), t.schema().as_arrow()), snapshot_properties=props)
            return len(change.rows)
        keys = [info.columns[i].name for i in info.handle_key_positions]
        touched = [*change.upserts, *change.deletes]
        rows = pad(to_arrow(info, list(change.upserts.values())), t.schema().as_arrow())
        touched_keys = rows.select(keys) if not change.deletes else key_table(info, touched)  # upserts: converted
        overwrite_keys(t, keys, touched_keys, rows, props)
        return len(touched)

    def fill(self, info: TableInfo, values: dict[str, Any], ts: int) -> None:
        """pyiceberg has no UPDATE: the table is rewritten whole in one overwrite (ADD COLUMN is rare)."""
        t = self.ensure(info)
        if table_applied_ts(t) >= ts:
            return
        data = t.scan().to_arrow()
        for name, v in values.items():
            i = data.schema.get_field_index(name)
            field = data.schema.field(i)
            data = data.set_column(i, field, pa.array([v] * data.num_rows, type=field.type))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Delete operation did not match any records")  # an empty table
            t.overwrite(data, snapshot_properties={COMMIT_TS: str(ts)})

    def evolve(self, info: TableInfo, change: SchemaChange, fill: dict[str, Any], ts: int) -> None:
        """DROP, RENAME or widen columns (and add new ones) as one Iceberg schema update, in place: data files keep
        their columns by field id, and each snapshot keeps the schema it was written with, so as-of reads before
        the DDL see the old columns. The update makes no snapshot: the table property ``sparkcdc.schema-commit-ts``,
        committed in the same transaction, keeps a replayed DDL from applying twice. The added columns' ``fill``
        values, if any, then commit as for ADD COLUMN (:meth:`fill`, a snapshot recording ``ts``)."""
        t = self._load(info.schema, info.table)
        if t is None:
            self.ensure(info)
            return
        if max(table_applied_ts(t), int(t.properties.get(SCHEMA_TS, 0))) < ts:
            with t.transaction() as tx:
                with tx.update_schema() as update:
                    for name in change.dropped:
                        update.delete_column(name)
                    for name, typ in change.retyped:
                        update.update_column(name, field_type=_iceberg_type(typ))
                    for old, new in change.renamed:
                        update.rename_column(old, new)
                    if change.added:
                        added = lake_schema(info)
                        update.union_by_name(pa.schema([added.field(c.name).with_nullable(True)
                                                        for c in change.added]))  # fmt: skip
                tx.set_properties({SCHEMA_TS: str(ts)})
            t = self._load(info.schema, info.table, fresh=True)
        if any(v is not None for v in fill.values()):
            self.fill(info, fill, ts)

    def rename(self, pre: TableInfo, post: TableInfo, ts: int) -> None:
        """RENAME TABLE: the new table gets the old one's rows and schema in one snapshot recording ``ts``, then
        the old one is emptied as by DROP TABLE, so its snapshots still answer as-of reads before the rename (the
        catalog's rename would take them to the new name)."""
        old = self._load(pre.schema, pre.table)
        new = self._load(post.schema, post.table)
        if new is None:
            self._create_namespace(post.schema)
            source = old.schema() if old is not None else lake_schema(post)
            new = self.catalog.create_table_if_not_exists((post.schema, post.table), source)
            self._loaded[(post.schema, post.table)] = new
        if table_applied_ts(new) < ts:
            data = old.scan().to_arrow() if old is not None else lake_schema(post).empty_table()
            with warnings.catch_warnings(), new.transaction() as tx:
                warnings.filterwarnings("ignore", "Delete operation did not match any records")  # a new table
                with tx.update_schema() as update:
                    update.union_by_name(data.schema)
                    for f in new.schema().fields:
                        if f.name not in data.schema.names:
                            update.delete_column(f.name)
                tx.overwrite(data, snapshot_properties={COMMIT_TS: str(ts)})
        self.drop(pre.schema, pre.table, ts)

    def truncate(self, info: TableInfo, ts: int) -> None:
        from pyiceberg.expressions import AlwaysTrue

        t = self.ensure(info)
        if table_applied_ts(t) < ts:
            t.delete(AlwaysTrue(), snapshot_properties={COMMIT_TS: str(ts)})

    def drop(self, schema: str, table: str, ts: int) -> None:
        """DROP TABLE empties the table, keeping it and its snapshots (as-of reads before the drop still work)."""
        from pyiceberg.expressions import AlwaysTrue

        t = self._load(schema, table)
        if t is not None and table_applied_ts(t) < ts:
            t.delete(AlwaysTrue(), snapshot_properties={COMMIT_TS: str(ts)})


def _iceberg_type(typ: pa.DataType) -> Any:
    """The Iceberg type a column is widened to (:func:`~sparkcdc.lake.evolution.widens`: long, double, decimal)."""
    from pyiceberg import types

    if pa.types.is_int64(typ):
        return types.LongType()
    if pa.types.is_float64(typ):
        return types.DoubleType()
    return types.DecimalType(typ.precision, typ.scale)


def table_applied_ts(t: Any) -> int:
    """The commit-ts of the newest snapshot that records one (walking back over snapshots of other writers)."""
    snap = t.current_snapshot()
    while snap is not None:
        ts = _summary_ts(snap)
        if ts is not None:
            return ts
        snap = t.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id is not None else None
    return 0


def snapshot_as_of(t: Any, commit_ts: int) -> int | None:
    """The id of the newest snapshot whose recorded commit-ts is <= ``commit_ts``; None when there is none. Raises
    ConfigError when the snapshots that held the table as of ``commit_ts`` were expired."""
    best: tuple[int, int, int] | None = None
    for s in t.snapshots():
        ts = _summary_ts(s)
        if ts is not None and ts <= commit_ts and (best is None or (ts, s.sequence_number) > best[:2]):
            best = (ts, s.sequence_number, s.snapshot_id)
    after = 0 if best is None else best[1]
    later = [s.sequence_number for s in t.snapshots() if s.sequence_number > after]
    if later and min(later) != after + 1:
        # commits number their snapshots 1, 2, 3...: a gap after the one picked is expired snapshots, which held
        # changes <= commit_ts (parent ids cannot tell: pyiceberg's expiry leaves the oldest kept one none)
        raise ConfigError(f"{t.name()}: as of commit-ts {commit_ts}: that snapshot was expired (cdc lake maintain "
                          "--retain); read a later commit-ts")  # fmt: skip
    return None if best is None else best[2]
