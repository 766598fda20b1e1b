"""What a column DDL does to a lake table's schema, worked out from the table's definitions before and after it.

The DDL event carries both definitions, not the ALTER's clauses, so columns are matched by name (case-insensitive,
as MySQL): a name in both is the same column (retyped when its lake type changed); a name that vanished was dropped
and a new name added, except in a ``MODIFY_COLUMN`` DDL (``CHANGE a b ...``, ``RENAME COLUMN a TO b``: TiDB's
action for both), where the one vanished name and the one new name are a rename. A multi-clause ALTER that both
removes and adds names cannot be told apart from renames, and is refused. A moved column (``FIRST``/``AFTER``) keeps
its place in the lake table: lake columns are read by name. Pure: no I/O, no table format.

Type changes the lake follows are the widenings both formats can express without rewriting a value (Iceberg's
type promotions, applied to Delta too so the two formats agree): int -> long, float -> double, and DECIMAL(P,S) ->
DECIMAL(P',S) with P' >= P. Any other change of a lake type is refused; one that keeps the lake type (VARCHAR(10)
-> VARCHAR(20), INT -> MEDIUMINT UNSIGNED) changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from sparkcdc.lake.types import arrow_schema
from sparkcdc.model import TableInfo
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.table import ColumnInfo

_RENAMING = frozenset({DDLAction.MODIFY_COLUMN})


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """``dropped``: lake columns removed; ``renamed``: (old, new) lake names; ``retyped``: (lake name before the
    DDL, its wider type); ``added``: new columns of the definition after the DDL, in its order."""

    dropped: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    retyped: tuple[tuple[str, pa.DataType], ...] = ()
    added: tuple[ColumnInfo, ...] = ()

    @property
    def rewrites(self) -> bool:
        """Whether existing columns change (dropped, renamed, retyped), not only new ones added."""
        return bool(self.dropped or self.renamed or self.retyped)


def widens(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether ``new`` holds every value of ``old`` unchanged and both formats promote ``old`` to it in place."""
    if old == new:
        return True
    if pa.types.is_int32(old) and pa.types.is_int64(new):
        return True
    if pa.types.is_float32(old) and pa.types.is_float64(new):
        return True
    return bool(pa.types.is_decimal(old) and pa.types.is_decimal(new) and new.scale == old.scale
                and new.precision >= old.precision)  # fmt: skip


def plan(pre: TableInfo, post: TableInfo, action: DDLAction) -> SchemaChange:
    """The change from ``pre`` to ``post``. Raises ValueError saying why the lake cannot follow it."""
    if bool(pre.handle_key_positions) != bool(post.handle_key_positions):
        raise ValueError("the table gains or loses its only key, which changes how its lake table is kept "
                         "(merged by key or appended with the change kind)")  # fmt: skip
    before = {f.name.lower(): f for f in arrow_schema(pre)}
    after = {f.name.lower(): f for f in arrow_schema(post)}
    vanished = [n for n in before if n not in after]
    appeared = [c for c in post.columns if c.name.lower() not in before]
    renamed: list[tuple[str, str]] = []
    if vanished and appeared:
        if action not in _RENAMING or len(vanished) != 1 or len(appeared) != 1:
            raise ValueError("it both removes and adds column names, which cannot be told apart from renames; "
                             "give renames, drops and adds in separate ALTER statements")  # fmt: skip
        renamed.append((before[vanished[0]].name, appeared[0].name))
        after_old = {vanished[0]: after[appeared[0].name.lower()]}
        vanished, appeared = [], []
    else:
        after_old = {}
    retyped: list[tuple[str, pa.DataType]] = []
    for name, field in before.items():
        new = after.get(name) or after_old.get(name)
        if new is None or new.type == field.type:
            continue
        if not widens(field.type, new.type):
            raise ValueError(f"column {field.name!r} changes lake type from {field.type} to {new.type}, which is "
                             "not a widening both formats hold in place (int to long, float to double, "
                             "DECIMAL to a larger precision with the same scale)")  # fmt: skip
        retyped.append((field.name, new.type))
    return SchemaChange(tuple(before[n].name for n in vanished), tuple(renamed), tuple(retyped), tuple(appeared))


def reshape(data: pa.Table, change: SchemaChange, post: TableInfo, fill: dict[str, Any]) -> pa.Table:
    """A lake table's rows after ``change``: columns dropped, widened (a safe cast: it raises rather than alter a
    value), renamed in place, and the added columns at the end holding their ``fill`` values (None: NULL). Columns
    the change does not name (a key-less table's change-log columns) stay as they are."""
    dropped = {n.lower() for n in change.dropped}
    data = data.select([n for n in data.column_names if n.lower() not in dropped])
    names = {n.lower(): i for i, n in enumerate(data.column_names)}
    for name, typ in change.retyped:
        i = names[name.lower()]
        field = data.schema.field(i)
        data = data.set_column(i, field.with_type(typ), data.column(i).cast(typ))
    renames = {old.lower(): new for old, new in change.renamed}
    data = data.rename_columns([renames.get(n.lower(), n) for n in data.column_names])
    types = {f.name: f.type for f in arrow_schema(post)}
    for c in change.added:
        data = data.append_column(pa.field(c.name, types[c.name]),
                                  pa.array([fill.get(c.name)] * data.num_rows, type=types[c.name]))  # fmt: skip
    return data
