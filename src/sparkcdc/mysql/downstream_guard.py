"""The consumers' start check: checkpoints that say rows were applied to a table the downstream no longer has.

The consumers keep their checkpoints in the downstream (``sparkcdc_consumer.checkpoint``), apart from the user's
schemas, so a ``DROP DATABASE`` of a replicated schema leaves them behind: a new run then skips, as already applied,
everything up to them, and applies nothing to the recreated schema, in silence (issue 26, item 7). So before
applying anything a consumer compares its checkpoints with the downstream and refuses to start when a table the
checkpoints say rows were applied to is

* missing, or
* empty and created after the consumer last wrote to it (a schema recreated by hand or from a dump).

Only what a consumer's own DDLs cannot explain counts: a table counts when its rows were applied after the last DDL
the consumer ran (any table: a RENAME is recorded under its new name, a DROP DATABASE under the schema). Times are
the downstream's own (``updated_at`` of the checkpoint rows, ``CREATE_TIME`` of the tables), so clocks never
differ.

Why an error and not a warning: continuing would look healthy while the downstream silently lacks every earlier
row (the storage consumer even recreates a missing table from its schema file and fills in only later rows). TiCDC
refuses a changefeed whose checkpoint it can no longer honour (``ErrSnapshotLostByGC``) and Debezium a connector
whose offsets point to a purged binlog, each with an explicit way to start over: here ``--reset-checkpoints``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from sparkcdc.errors import SparkcdcError
from sparkcdc.model.steps import DDL_PARTITION
from sparkcdc.mysql.applier import MysqlApplier

log = logging.getLogger(__name__)

ERR_AHEAD: Final = "CDC:ErrConsumerCheckpointAhead"
_NAMED: Final = 3  # tables named in the error; the rest are counted


@dataclass(frozen=True, slots=True)
class Lost:
    """A table the checkpoints say rows were applied to, at ``applied_at`` (seconds since the epoch), that the
    downstream lost: ``missing``, or recreated empty."""

    schema: str
    table: str
    missing: bool
    applied_at: float


def lost_tables(
    streams: Sequence[tuple[str, str, int, float]],
    existing: Mapping[tuple[str, str], float | None],
    is_empty: Callable[[str, str], bool],
) -> list[Lost]:
    """The tables the downstream lost (see the module docstring). ``streams`` are ``(db, tbl, part, written at)``
    of the consumer's checkpoints, ``existing`` the downstream tables of their schemas with their creation times;
    ``is_empty`` is asked only of tables recreated after their last rows."""
    last_ddl = max((at for _, _, part, at in streams if part == DDL_PARTITION), default=None)
    applied: dict[tuple[str, str], float] = {}
    for schema, table, part, at in streams:
        if part != DDL_PARTITION and table:
            applied[(schema, table)] = max(at, applied.get((schema, table), at))
    out = []
    for (schema, table), at in sorted(applied.items()):
        if last_ddl is not None and at <= last_ddl:
            continue  # a DDL of the consumer's came after these rows: it may have dropped or renamed the table
        if (schema, table) not in existing:
            out.append(Lost(schema, table, True, at))
            continue
        created = existing[(schema, table)]
        if created is not None and created > at and is_empty(schema, table):
            out.append(Lost(schema, table, False, at))
    return out


def refusal(lost: Sequence[Lost], changefeed: str, checkpoint_schema: str) -> SparkcdcError:
    """One line: what the checkpoints say, which tables the downstream lost, and how to start over."""
    first = lost[0]
    state = "missing" if first.missing else "empty and was created after that"
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(first.applied_at))
    names = ", ".join(f"{x.schema}.{x.table}" for x in lost[1:_NAMED])
    more = f" (so are {names}{f' and {len(lost) - _NAMED} more' if len(lost) > _NAMED else ''})" if names else ""
    return SparkcdcError(
        f"{checkpoint_schema}.checkpoint says consumer {changefeed!r} applied rows to {first.schema}.{first.table} "
        f"(last at {when}), but that table is {state}{more}: was the downstream dropped or recreated? Its rows up "
        "to the checkpoint would not be applied again. To apply everything again, run with --reset-checkpoints "
        f"(or delete them: DELETE FROM {checkpoint_schema}.checkpoint WHERE changefeed='{changefeed}')",
        code=ERR_AHEAD,
    )


def check(applier: MysqlApplier) -> None:
    """Raises the :func:`refusal` when the downstream lost tables this changefeed's checkpoints name; SparkcdcError
    when the downstream cannot be read."""
    streams = applier.stream_times()
    schemas = sorted({schema for schema, table, part, _ in streams if table and part != DDL_PARTITION})
    lost = lost_tables(streams, applier.table_times(schemas), applier.is_empty)
    if lost:
        raise refusal(lost, applier.changefeed, applier.checkpoint_schema)
    log.debug("checkpoints of %r match the downstream (%d streams)", applier.changefeed, len(streams))
