"""Where a simple topic's schemas are, so that a restarted ``cdc kafka-consumer`` can decode the rows after its
committed offsets.

A simple-protocol row names only its table's schema version: the consumer learns the schema from a DDL or
BOOTSTRAP message. A restart resumes at the group's committed offsets, which are past the messages that brought the
schemas in use. TiCDC's consumer waits for the table's next BOOTSTRAP (sent every send-bootstrap-interval-in-sec
while the table changes); when the changefeed has been removed, or the table stopped changing, none comes, and the
rows wait forever. So each offset commit carries, in its Kafka commit metadata, the offsets of the messages before
it that brought each table's last schema (:class:`SchemaOffsets`), and a restart reads those messages first. A
message that retention has deleted meanwhile leaves its table waiting for the next BOOTSTRAP, as TiCDC's would.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Iterable
from typing import Final

from sparkcdc.model.events import BootstrapEvent, DDLEvent, Event

log = logging.getLogger(__name__)

PREFIX: Final = "simple-schema-offsets:"
# Apache Kafka refuses commit metadata longer than offset.metadata.max.bytes (default 4096).
MAX_METADATA: Final = 4000

Table = tuple[str, str]


def schema_tables(events: Iterable[Event]) -> set[Table]:
    """The tables whose schema a message's events announce (a BOOTSTRAP, or a DDL with the table after it)."""
    out: set[Table] = set()
    for ev in events:
        info = ev.table_info if isinstance(ev, BootstrapEvent | DDLEvent) else None
        if info is not None and info.table:
            out.add((info.schema, info.table))
    return out


def parse(metadata: str | None) -> list[int]:
    """The schema offsets a commit's metadata holds; [] for metadata this consumer did not write."""
    if not metadata or not metadata.startswith(PREFIX):
        return []
    try:
        return sorted({int(x) for x in metadata[len(PREFIX):].split(",") if x})
    except ValueError:
        return []


class SchemaOffsets:
    """For each partition and table, the offsets of the messages read that announced the table's schema.

    :meth:`metadata` gives a commit's metadata: per table, the last such offset below the committed offset (the
    messages at or after it are read again anyway). Committed offsets only grow, so older offsets are forgotten.
    """

    def __init__(self) -> None:
        self._seen: dict[int, dict[Table, list[int]]] = {}
        self._warned = False

    def saw(self, partition: int, offset: int, tables: Iterable[Table]) -> None:
        per_table = self._seen.setdefault(partition, {})
        for t in tables:
            offsets = per_table.setdefault(t, [])
            if not offsets or offsets[-1] < offset:
                offsets.append(offset)

    def metadata(self, partition: int, committed: int) -> str:
        anchors: set[int] = set()
        for offsets in self._seen.get(partition, {}).values():
            i = bisect_left(offsets, committed)
            if i:
                anchors.add(offsets[i - 1])
                del offsets[: i - 1]
        text = PREFIX + ",".join(map(str, sorted(anchors)))
        if len(text) <= MAX_METADATA:
            return text
        kept: list[str] = []
        size = len(PREFIX)
        for o in sorted(anchors, reverse=True):  # the newest schemas first: the likeliest to be needed
            size += len(str(o)) + (1 if kept else 0)
            if size > MAX_METADATA:
                break
            kept.append(str(o))
        if not self._warned:
            log.warning("partition %d: %d tables' schema offsets do not fit in the commit metadata (%d bytes); after "
                        "a restart, the rows of the %d tables left out wait for their next BOOTSTRAP", partition,
                        len(anchors), MAX_METADATA, len(anchors) - len(kept))  # fmt: skip
            self._warned = True
        return PREFIX + ",".join(reversed(kept))
