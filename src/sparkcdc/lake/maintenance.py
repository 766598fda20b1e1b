"""Small files and old history of a lake table: one maintenance pass, run by ``cdc lake maintain``.

Every batch adds files to each table it touches. A pass compacts the table's data files and then drops what is
older than ``retain``: Delta ``OPTIMIZE`` (delta-rs ``optimize.compact``) and ``VACUUM``; Iceberg a rewrite of the
table into one append (pyiceberg 0.12 has no ``rewrite_data_files``) and snapshot expiry. The compaction commit
records the commit-ts the table already reflects (``sparkcdc.commit-ts``), so the as-of read of that commit-ts
lands on the compacted files, which stay when the old ones are removed; reads as of earlier commit-ts work as long
as their files are within ``retain`` and fail in one line after (never a wrong answer:
:func:`~sparkcdc.lake.as_of.read_as_of` checks that the commit it picks is still there).

Run it with the changefeed paused (``cdc cli changefeed pause``): a batch committing while a compaction does makes
one of the two fail its commit (both formats detect the conflict: nothing is lost, the failed side is run
again).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from sparkcdc.errors import ConfigError
from sparkcdc.lake.delta import MAINTENANCE
from sparkcdc.lake.location import LakeLocation


@dataclass(frozen=True, slots=True)
class Maintained:
    """What one pass did to one table: data files before and after, and what retention removed (Delta: files
    vacuumed; Iceberg: snapshots expired)."""

    table: str
    files_before: int
    files_after: int
    removed: int


def maintain(where: LakeLocation, schema: str, table: str, retain: datetime.timedelta) -> Maintained:
    """Compact ``schema.table`` and drop history older than ``retain``. Raises ConfigError for a table the lake
    does not have."""
    if where.fmt == "delta":
        return _delta(where, schema, table, retain)
    return _iceberg(where, schema, table, retain)


def _delta(where: LakeLocation, schema: str, table: str, retain: datetime.timedelta) -> Maintained:
    import deltalake as dl

    from sparkcdc.lake.delta import COMMIT_TS, table_uri
    from sparkcdc.lake.stores import delta_options, delta_root

    uri, options = table_uri(delta_root(where), schema, table), delta_options(where)
    if not dl.DeltaTable.is_deltatable(uri, options):
        raise ConfigError(f"{schema}.{table}: no Delta table in {where}")
    dt = dl.DeltaTable(uri, storage_options=options)
    before = len(dt.file_uris())
    ts = next((h[COMMIT_TS] for h in dt.history() if COMMIT_TS in h), None)
    metadata = {MAINTENANCE: "compact"} | ({COMMIT_TS: ts} if ts is not None else {})
    dt.optimize.compact(commit_properties=dl.CommitProperties(custom_metadata=metadata))
    removed = dt.vacuum(retention_hours=max(0, int(retain.total_seconds() // 3600)), dry_run=False,
                        enforce_retention_duration=False)  # fmt: skip
    return Maintained(f"{schema}.{table}", before, len(dt.file_uris()), len(removed))


def _iceberg(where: LakeLocation, schema: str, table: str, retain: datetime.timedelta) -> Maintained:
    import warnings

    from pyiceberg.exceptions import NoSuchTableError

    from sparkcdc.lake.iceberg import COMMIT_TS, catalog, table_applied_ts

    try:
        t = catalog(where).load_table((schema, table))
    except NoSuchTableError as e:
        raise ConfigError(f"{schema}.{table}: no Iceberg table in {where}") from e
    before = _data_files(t)
    if before > 1:
        props = {MAINTENANCE: "compact", COMMIT_TS: str(table_applied_ts(t))}
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Delete operation did not match any records")
            t.overwrite(t.scan().to_arrow(), snapshot_properties=props)
    snapshots = len(t.snapshots())
    cutoff = datetime.datetime.now(datetime.UTC) - retain
    t.maintenance.expire_snapshots().older_than(cutoff).commit()
    t = catalog(where).load_table((schema, table))
    return Maintained(f"{schema}.{table}", before, _data_files(t), snapshots - len(t.snapshots()))


def _data_files(t: Any) -> int:
    return sum(1 for _ in t.scan().plan_files()) if t.current_snapshot() is not None else 0
