"""One Kafka partition's TiCDC messages, in offset order, decoded into the rows ``format("ticdc-kafka")`` yields.

Pure: messages come in as ``(offset, value)`` and what lies before the range (schemas, the last watermark) is
asked of a :class:`Prefix`, which the I/O shell (``kafka_topic``) backs with backward reads of the partition.

Rows only: DDL, WATERMARK and BOOTSTRAP messages are consumed for what they tell the decoder. Two rules of
TiCDC's Kafka consumer (``cmd/kafka-consumer``) apply to each partition:

* a watermark promises that every row with commit-ts <= it was sent on the partition before it, so a later row
  at or below the partition's last watermark is a re-send (the sink restarted from an older checkpoint) and is
  dropped (``fallback``); re-sent rows above it stay (delivery is at least once), and so does every row without a
  commit-ts (canal-json without the TiDB extension, which has no watermarks either);
* simple rows need their table's schema, keyed by ``(database, table, schemaVersion)``, which only DDL and
  BOOTSTRAP messages carry (``spec/simple.md`` §6). A range that starts after the schema message it needs
  (a streaming micro-batch, a ``startingOffsets`` reader) looks for it backwards through the partition:
  the first time a row of a schema the decoder does not know is held, :meth:`Prefix.schema` searches the
  messages before the range for a BOOTSTRAP or DDL announcing exactly that key, and the decoder gets it before
  anything else. The key names the table version exactly, so a schema found anywhere is the right one; a row
  is never decoded with another version's schema. Rows whose schema is not found are held by the decoder
  until a later DDL or BOOTSTRAP in the range brings it; what is still held at the end of the range, or is
  superseded by a newer version first, can never be decoded: that is an error, or with ``skip_undecodable``
  those rows are dropped and counted (``dropped``).

Every failure is one CorruptDataError naming topic, partition and offset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from sparkcdc.codec.base import Message
from sparkcdc.errors import CorruptDataError, DecodeError, SparkcdcError
from sparkcdc.model import BootstrapEvent, DDLEvent, ResolvedEvent, RowChange

log = logging.getLogger(__name__)

SchemaKey = tuple[str, str, int]  # (database, table, schemaVersion)

HANDLE_KEY_ONLY_HINT: Final = (
    "; sparkcdc cannot look the full row up in the upstream at a past commit-ts: set "
    'large-message-handle-option = "claim-check" (with claim-check-storage-uri) on the changefeed and pass '
    'the same claim-check-storage-uri as an option of format("ticdc-kafka")'
)
CLAIM_CHECK_HINT: Final = '; pass the changefeed\'s claim-check-storage-uri as an option of format("ticdc-kafka")'


class Prefix(Protocol):
    """What the messages before a range's first offset say (their I/O is the shell's business)."""

    def watermark(self) -> int:
        """The partition's last watermark before the range (0 when there is none)."""
        ...

    def schema(self, key: SchemaKey) -> bytes | None:
        """The value of a BOOTSTRAP or DDL message before the range announcing table schema ``key``, or None."""
        ...


class NoPrefix:
    """A range that starts at the partition's first offset."""

    def watermark(self) -> int:
        return 0

    def schema(self, key: SchemaKey) -> bytes | None:
        return None


@dataclass(frozen=True, slots=True)
class Marker:
    """What a message before the range is, as far as a :class:`Prefix` cares."""

    watermark: int | None = None
    schemas: tuple[SchemaKey, ...] = ()


def marker_reader(protocol: str, decoder: Any) -> Callable[[bytes], Marker]:
    """A cheap classifier of prefix messages for ``protocol``: only messages that may be watermarks or schema
    messages are parsed (JSON members are quoted, so a DML row cannot contain ``"tableSchema"`` unescaped except
    as a column name, and a false hit is only parsed for nothing). Raises what the decoder raises."""
    if protocol == "canal-json":

        def canal(value: bytes) -> Marker:
            if b'"TIDB_WATERMARK"' not in value:
                return Marker()
            for event in decoder.decode(Message(None, value)):
                if isinstance(event, ResolvedEvent):
                    return Marker(watermark=event.ts)
            return Marker()

        return canal

    if protocol == "avro":  # its watermark is a keyless value of byte 2 and the ts; schemas live in the registry
        from sparkcdc.codec.avro import message as wire

        def avro_marker(value: bytes) -> Marker:
            if value[:1] != bytes([wire.CHECKPOINT_BYTE]):
                return Marker()
            return Marker(watermark=wire.read_ts(value, "the watermark"))

        return avro_marker

    from sparkcdc.codec.simple.message import BOOTSTRAP, DDL_TYPES, WATERMARK

    avro = decoder.config.encoding_format == "avro"

    def simple(value: bytes) -> Marker:
        if not avro and b'"tableSchema"' not in value and b'"WATERMARK"' not in value:
            return Marker()
        msg = decoder.parse(value)
        if msg.type == WATERMARK:
            return Marker(watermark=msg.commit_ts)
        if msg.type == BOOTSTRAP or msg.type in DDL_TYPES:
            t = msg.table_schema
            if t is not None and t.schema and t.table:
                return Marker(schemas=((t.schema, t.table, t.version),))
        return Marker()

    return simple


@dataclass(slots=True)
class _Held:
    offset: int
    key: SchemaKey
    commit_ts: int


class PartitionRows:
    """Feeds one partition's messages to its decoder; :meth:`feed` returns ``(offset, row)`` pairs in the order
    rows may be emitted (a row released later, by a schema message, keeps the offset of its own message).

    ``decoder`` is a fresh ``MessageDecoder`` for this partition (the simple one keeps a schema cache and holds
    rows; ``skip_undecodable`` means it was built with ``drop_undecodable``)."""

    def __init__(
        self,
        decoder: Any,
        *,
        topic: str,
        partition: int,
        prefix: Prefix | None = None,
        skip_undecodable: bool = False,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self._decoder = decoder
        self._prefix = prefix or NoPrefix()
        self._skip = skip_undecodable
        self._held: list[_Held] = []  # mirrors the decoder's held rows, for their offsets
        self._searched: set[SchemaKey] = set()
        self.watermark = self._prefix.watermark()
        self.fallback = 0  # re-sent rows dropped (commit-ts <= the partition's watermark)
        self._dropped_at_end = 0

    @property
    def dropped(self) -> int:
        """Rows that can never be decoded, dropped (only with ``skip_undecodable``)."""
        return int(getattr(self._decoder, "dropped", 0)) + self._dropped_at_end

    def where(self, offset: int) -> str:
        return f"topic {self.topic} partition {self.partition} offset {offset}"

    def feed(self, offset: int, value: bytes, key: bytes | None = None) -> list[tuple[int, RowChange]]:
        """The rows the message at ``offset`` makes emittable (``key``: avro's). Raises CorruptDataError naming the
        offset."""
        before = self._pending()
        events = self._decode(offset, value, key=key)
        if self._pending() > before:  # the decoder held this row: its schema is not known yet
            events = self._search(offset, value)
        return self._rows(offset, events)

    def finish(self) -> None:
        """The range ended. Rows still held can never be decoded (their schema precedes them in TiCDC's order):
        raises CorruptDataError naming the first, or drops and counts them with ``skip_undecodable``."""
        held = self._pending()
        if not held:
            return
        first = self._held[0] if self._held else None
        what = "" if first is None else (
            f" (first: {first.key[0]}.{first.key[1]} schema version {first.key[2]} at {self.where(first.offset)})"
        )  # fmt: skip
        if self._skip:
            self._dropped_at_end += held
            log.warning("topic %s partition %d: dropped %d row(s) whose table schema never arrived%s",
                        self.topic, self.partition, held, what)  # fmt: skip
            return
        raise CorruptDataError(
            f"topic {self.topic} partition {self.partition}: {held} row message(s) cannot be decoded{what}: no "
            "BOOTSTRAP or DDL message in the partition carries their table schema (was the start of the topic "
            "deleted, or is send-bootstrap-to-all-partition false?); set option skip-undecodable=true to drop "
            "such rows"
        )

    # --- internals ---------------------------------------------------------------------------------------

    def _pending(self) -> int:
        return int(getattr(self._decoder, "pending", 0))

    def _decode(self, offset: int, value: bytes, *, note: str = "", key: bytes | None = None) -> list[Any]:
        try:
            return list(self._decoder.decode(Message(key, value)))
        except DecodeError as e:
            text = e.message
            if "handle-key-only" in text:
                text += HANDLE_KEY_ONLY_HINT
            elif "configure a claim-check reader" in text:
                text += CLAIM_CHECK_HINT
            raise CorruptDataError(f"{self.where(offset)}{note}: {text}") from None
        except SparkcdcError as e:
            raise type(e)(f"{self.where(offset)}{note}: {e.message}", code=e.code, retryable=e.retry) from None
        except Exception as e:  # a foreign or truncated message the decoder did not anticipate
            raise CorruptDataError(
                f"{self.where(offset)}{note}: not a TiCDC message: {type(e).__name__}: {e}"
            ) from None

    def _search(self, offset: int, value: bytes) -> list[Any]:
        """Mirror the held row and, once per schema key, give the decoder the schema found before the range."""
        msg = self._decoder.parse(value)
        key = (msg.database, msg.table, msg.schema_version)
        self._held.append(_Held(offset, key, msg.commit_ts))
        if key in self._searched:
            return []
        self._searched.add(key)
        found = self._prefix.schema(key)
        if found is None:
            return []
        note = f" (with the schema of {key[0]}.{key[1]} version {key[2]} found before the range)"
        return self._decode(offset, found, note=note)

    def _rows(self, offset: int, events: list[Any]) -> list[tuple[int, RowChange]]:
        released = any(isinstance(e, BootstrapEvent | DDLEvent) for e in events)
        out: list[tuple[int, RowChange]] = []
        for event in events:
            if isinstance(event, ResolvedEvent):
                self.watermark = max(self.watermark, event.ts)
            elif isinstance(event, RowChange):
                at = self._origin(event, offset) if released else offset
                if event.commit_ts and event.commit_ts <= self.watermark:
                    self.fallback += 1
                    continue
                out.append((at, event))
        self._trim()
        return out

    def _origin(self, row: RowChange, offset: int) -> int:
        """The offset of the held message ``row`` was decoded from (same schema key and commit-ts, first held)."""
        key = (row.table.schema, row.table.table, row.table.version)
        for i, held in enumerate(self._held):
            if held.key == key and held.commit_ts == row.commit_ts:
                del self._held[i]
                return held.offset
        return offset

    def _trim(self) -> None:
        """Keep the mirror as long as the decoder's queue: a decoder with ``drop_undecodable`` drops the oldest
        held rows it can never decode (superseded versions, a bootstrap period passed)."""
        pending = self._pending()
        if len(self._held) > pending:
            del self._held[: len(self._held) - pending]
