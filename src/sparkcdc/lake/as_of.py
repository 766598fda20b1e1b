"""Reading a lake table as the upstream was at a commit-ts, through the format's own time travel.

Every lake commit records the upstream commit-ts it brings the table to (Delta commit info, Iceberg snapshot
summary: ``sparkcdc.commit-ts``). The table at its newest commit recording ``<= ts`` holds every upstream change
of the table up to ``ts`` and none after (the next commit brings only later ones), so it is the upstream table as
of ``ts`` — for any ``ts`` up to the changefeed's checkpoint-ts (beyond it, changes may still be on their way).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from sparkcdc.errors import ConfigError
from sparkcdc.lake.location import LakeLocation


def read_as_of(sink_uri: str, table: str, commit_ts: int, spark: Any = None) -> Any:
    """Table ``schema.table`` of the lake sink ``sink_uri`` as of upstream ``commit_ts``: a pyarrow Table, or a
    Spark DataFrame when ``spark`` (a SparkSession) is given. Empty when the lake table had no commit by then.
    Raises ConfigError for a bad URI, a table name without its schema, or a table the lake does not have."""
    where, _params = LakeLocation.from_uri(sink_uri)
    schema, dot, name = table.partition(".")
    if not dot or not schema or not name:
        raise ConfigError(f"table {table!r}: give it as schema.table")
    result = _read_delta(where, schema, name, commit_ts) if where.fmt == "delta" else \
        _read_iceberg(where, schema, name, commit_ts)  # fmt: skip
    return result if spark is None else spark.createDataFrame(result.to_pandas(), schema=None)


def _read_delta(where: LakeLocation, schema: str, name: str, commit_ts: int) -> pa.Table:
    from deltalake import DeltaTable

    from sparkcdc.lake.delta import table_uri, version_as_of
    from sparkcdc.lake.stores import delta_options, delta_root

    uri, options = table_uri(delta_root(where), schema, name), delta_options(where)
    if not DeltaTable.is_deltatable(uri, options):
        raise ConfigError(f"{schema}.{name}: no Delta table in {where}")
    version = version_as_of(uri, commit_ts, options)
    dt = DeltaTable(uri, version=0 if version is None else version, storage_options=options)
    try:
        table = dt.to_pyarrow_table()
    except OSError as e:  # delta-rs: a data file of that version is gone
        raise ConfigError(f"{schema}.{name}: as of commit-ts {commit_ts}: the files of Delta version {version} were "
                          "removed (vacuumed by cdc lake maintain --retain); read a later commit-ts") from e
    return table if version is not None else table.slice(0, 0)


def _read_iceberg(where: LakeLocation, schema: str, name: str, commit_ts: int) -> pa.Table:
    from pyiceberg.exceptions import NoSuchTableError

    from sparkcdc.lake.iceberg import catalog, snapshot_as_of

    try:
        t = catalog(where).load_table((schema, name))
    except NoSuchTableError as e:
        raise ConfigError(f"{schema}.{name}: no Iceberg table in {where}") from e
    snapshot = snapshot_as_of(t, commit_ts)
    if snapshot is None:
        return t.schema().as_arrow().empty_table()
    return t.scan(snapshot_id=snapshot).to_arrow()
