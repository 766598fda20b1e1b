"""Lake tables (Delta Lake, Apache Iceberg) kept equal to upstream tables: the one target the ``delta://`` and
``iceberg://`` sinks write through, and :func:`read_as_of` for readers.

``changes`` folds a batch into its net change per key (``keyless``: a key-less table's change log), ``types`` maps
MySQL columns to Arrow, ``delta`` and ``iceberg`` are the two formats behind :class:`~sparkcdc.lake.target.LakeTables`,
``ddl`` applies DDLs to them (``evolution``: what a column DDL changes).
"""

from sparkcdc.lake.as_of import read_as_of

__all__ = ["read_as_of"]
